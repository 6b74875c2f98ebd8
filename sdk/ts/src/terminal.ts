import { DeckhandError } from "./errors.js";

/** What attach opens: an existing session (id) or a new shell. */
export interface TerminalOptions {
  id?: string;
  cols?: number;
  rows?: number;
  shell?: string;
  cwd?: string;
}

/**
 * One attached terminal session over the terminal service's WebSocket:
 * read() answers the PTY's output (the scrollback first) and null once the
 * shell has ended (exitCode then says how) or the connection closed;
 * write() types into it. Needs a global WebSocket (browsers, Node 22, or
 * Node 20 with --experimental-websocket).
 */
export class Terminal {
  exitCode: number | null = null;
  private queue: Uint8Array[] = [];
  private waiting: ((v: void) => void) | null = null;
  private closed = false;

  private constructor(private readonly ws: WebSocket) {
    ws.binaryType = "arraybuffer";
    ws.onmessage = (ev) => {
      if (typeof ev.data === "string") {
        const m = JSON.parse(ev.data);
        if (m.type === "exit") this.exitCode = m.code ?? null;
      } else {
        this.queue.push(new Uint8Array(ev.data as ArrayBuffer));
      }
      this.wake();
    };
    ws.onclose = () => {
      this.closed = true;
      this.wake();
    };
  }

  static open(url: string, token?: string): Promise<Terminal> {
    const W = (globalThis as { WebSocket?: typeof WebSocket }).WebSocket;
    if (!W) return Promise.reject(new Error("deckhand: no WebSocket in this runtime (Node 20: run with --experimental-websocket)"));
    // undici's WebSocket takes headers; a browser sends the page's cookies.
    const ws = token ? new (W as unknown as new (u: string, o: object) => WebSocket)(url, { headers: { Authorization: `Bearer ${token}` } }) : new W(url);
    return new Promise((resolve, reject) => {
      ws.onopen = () => resolve(new Terminal(ws));
      ws.onerror = () => reject(new DeckhandError(0, "", `the terminal at ${url} refused the connection`, "", "GET", "/api/v1/terminal/ws"));
    });
  }

  private wake() {
    const w = this.waiting;
    this.waiting = null;
    w?.();
  }

  async read(): Promise<Uint8Array | null> {
    while (this.queue.length === 0 && !this.closed) await new Promise<void>((r) => (this.waiting = r));
    return this.queue.shift() ?? null;
  }

  write(data: Uint8Array | string): void {
    this.ws.send(typeof data === "string" ? new TextEncoder().encode(data) : data);
  }

  resize(cols: number, rows: number): void {
    this.ws.send(JSON.stringify({ type: "resize", cols, rows }));
  }

  /** Detaches (the session goes on until its shell ends or it is deleted). */
  close(): void {
    this.ws.close(1000);
  }
}
