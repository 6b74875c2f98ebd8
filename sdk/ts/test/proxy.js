// A TCP proxy that a test can make misbehave: cut every open connection,
// cut once after n bytes, or rewrite the server's bytes.
import net from "node:net";

export class Proxy {
  constructor(targetUrl) {
    const u = new URL(targetUrl);
    this.target = { host: u.hostname, port: Number(u.port) };
    this.conns = new Set();
    this.dials = 0;
    this.cutAfter = 0;
    this.moved = 0;
    this.rewrite = null;
    this.server = net.createServer((c) => this.serve(c));
  }

  async listen() {
    await new Promise((r) => this.server.listen(0, "127.0.0.1", r));
    this.url = `http://127.0.0.1:${this.server.address().port}`;
    return this;
  }

  serve(c) {
    const s = net.connect(this.target);
    this.dials++;
    this.conns.add(c).add(s);
    const done = () => {
      c.destroy();
      s.destroy();
      this.conns.delete(c);
      this.conns.delete(s);
    };
    const pipe = (src, dst, answer) => {
      src.on("data", (b) => {
        if (answer && this.rewrite) b = this.rewrite(b);
        this.moved += b.length;
        if (this.cutAfter && this.moved >= this.cutAfter) {
          this.cutAfter = 0;
          done();
          return;
        }
        dst.write(b);
      });
      src.on("error", done);
      src.on("close", done);
    };
    pipe(c, s, false);
    pipe(s, c, true);
  }

  cut() {
    for (const c of this.conns) c.destroy();
    this.conns.clear();
  }

  cutOnceAfter(n) {
    this.moved = 0;
    this.cutAfter = n;
  }

  close() {
    this.cut();
    this.server.close();
  }
}
