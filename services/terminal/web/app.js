// deckhand web terminal: one xterm.js view attached to one session over the
// service's WebSocket protocol (binary frames raw both ways, JSON text frames
// for resize/exit/error). Reconnects by itself until the session ends.
(function () {
  "use strict";
  const base = window.TERMINAL_BASE;
  const api = (p) => base + "api/v1/terminal/" + p;
  const statusEl = document.getElementById("status");
  // The tab remembers its session (the URL fragment carries it too), so a
  // reload or the bare URL reattaches and the replay brings the screen back.
  const remembered = "deckhand-terminal:" + base;
  function remember(id) { try { sessionStorage.setItem(remembered, id); } catch (e) { /* storage off */ } }
  function recall() { try { return sessionStorage.getItem(remembered) || ""; } catch (e) { return ""; } }
  const listEl = document.getElementById("sessions");

  const term = new Terminal({
    cursorBlink: true, scrollback: 10000, allowProposedApi: false,
    fontFamily: "ui-monospace, Menlo, Consolas, 'DejaVu Sans Mono', monospace", fontSize: 14,
    theme: { background: "#121212", foreground: "#e5e5e5" },
  });
  const fit = new FitAddon.FitAddon();
  term.loadAddon(fit);
  term.open(document.getElementById("terminal"));
  fit.fit();
  window.__term = term; // for tests and the console

  let current = null;   // session id
  let ws = null;
  let ended = false;
  let retry = 0;
  let retryTimer = null;
  const enc = new TextEncoder();

  function setStatus(text, cls) { statusEl.textContent = text; statusEl.className = "status " + (cls || ""); }

  function send(obj) { if (ws && ws.readyState === WebSocket.OPEN) ws.send(obj); }
  term.onData((d) => send(enc.encode(d)));
  term.onBinary((d) => { const b = new Uint8Array(d.length); for (let i = 0; i < d.length; i++) b[i] = d.charCodeAt(i) & 255; send(b); });
  term.onResize(({ cols, rows }) => send(JSON.stringify({ type: "resize", cols, rows })));
  window.addEventListener("resize", () => { try { fit.fit(); } catch (e) { /* hidden */ } });

  function connect() {
    clearTimeout(retryTimer);
    if (ws) { ws.onclose = null; ws.close(); }
    ended = false;
    const u = new URL(api("ws"), location.href);
    u.protocol = location.protocol === "https:" ? "wss:" : "ws:";
    u.searchParams.set("id", current);
    u.searchParams.set("cols", term.cols);
    u.searchParams.set("rows", term.rows);
    const sock = new WebSocket(u);
    sock.binaryType = "arraybuffer";
    ws = sock;
    let first = true;
    setStatus("connecting…");
    // The list is read again once attached, so its count includes this page.
    sock.onopen = () => { retry = 0; setStatus("connected · " + current, "ok"); refresh(); };
    sock.onmessage = (ev) => {
      if (first) { term.reset(); first = false; } // the server replays the scrollback
      if (typeof ev.data !== "string") { term.write(new Uint8Array(ev.data)); return; }
      let m; try { m = JSON.parse(ev.data); } catch (e) { return; }
      if (m.type === "exit") {
        ended = true;
        term.write("\r\n\x1b[2m[session ended with code " + m.code + "]\x1b[0m\r\n");
        setStatus("ended (code " + m.code + ")", "bad");
        refresh();
      } else if (m.type === "error") {
        console.warn("terminal:", m.message);
      }
    };
    sock.onclose = (ev) => {
      if (ws !== sock) return;
      if (ended || ev.code === 1000) { refresh(); return; }
      if (ev.code === 1008) setStatus("dropped: too slow, reconnecting…", "bad");
      const wait = Math.min(5000, 250 * 2 ** retry++);
      setStatus("disconnected, retrying in " + (wait / 1000).toFixed(1) + "s", "bad");
      retryTimer = setTimeout(reattach, wait);
    };
  }

  // reattach checks the session still exists before reconnecting, and opens
  // a fresh one when it is gone (for example after an agent restart).
  async function reattach() {
    try {
      const r = await fetch(api("sessions/" + encodeURIComponent(current)));
      if (r.status === 404) { await open(null); return; }
    } catch (e) { /* server down: the socket attempt below fails and retries */ }
    connect();
  }

  async function open(id) {
    if (!id) {
      const r = await fetch(api("create"), {
        method: "POST", headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ cols: term.cols, rows: term.rows }),
      });
      if (!r.ok) { setStatus("cannot create a session: " + (await r.json()).message, "bad"); return; }
      id = (await r.json()).id;
    }
    current = id;
    history.replaceState(null, "", "#" + id);
    remember(id);
    term.reset();
    connect();
    term.focus();
    refresh();
  }

  async function refresh() {
    let list = [];
    try { list = await (await fetch(api("sessions"))).json(); } catch (e) { return; }
    listEl.replaceChildren(...list.map((s) => {
      const a = document.createElement("a");
      a.href = "#" + s.id;
      a.className = (s.id === current ? "active " : "") + (s.running ? "" : "ended");
      a.textContent = s.id;
      const small = document.createElement("small");
      small.textContent = s.shell.split("/").pop() + " · " + s.cols + "x" + s.rows +
        (s.running ? " · " + s.clients + " attached" : " · exit " + s.exit_code);
      a.appendChild(small);
      a.onclick = (ev) => { ev.preventDefault(); open(s.id); };
      return a;
    }));
    return list;
  }

  document.getElementById("new").onclick = () => open(null);
  setInterval(refresh, 5000);

  (async function start() {
    const list = (await refresh()) || [];
    for (const want of [location.hash.slice(1), recall()]) {
      if (want && list.some((s) => s.id === want)) return open(want);
    }
    open(null);
  })();
})();
