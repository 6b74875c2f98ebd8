// A man in the middle for the control plane at the HTTP level: it keeps
// the last genuine answer to a path ending in suffix and, once told,
// serves it again in place of asking (replay), or passes answers on with
// another status (relabel).
import http from "node:http";

export class Middle {
  constructor(targetUrl, suffix) {
    this.target = new URL(targetUrl);
    this.suffix = suffix;
    this.last = null;
    this.replay = false;
    this.relabel = 0;
    this.tampered = 0;
    this.server = http.createServer((req, res) => this.serve(req, res));
  }

  async listen() {
    await new Promise((r) => this.server.listen(0, "127.0.0.1", r));
    this.url = `http://127.0.0.1:${this.server.address().port}`;
    return this;
  }

  serve(req, res) {
    const watched = new URL(req.url, this.url).pathname.endsWith(this.suffix);
    if (watched && this.replay && this.last) {
      this.tampered++;
      res.writeHead(this.last.status, this.last.headers);
      res.end(this.last.body);
      return;
    }
    const up = http.request({ host: this.target.hostname, port: this.target.port, method: req.method, path: req.url, headers: req.headers }, (ur) => {
      const parts = [];
      ur.on("data", (b) => parts.push(b));
      ur.on("end", () => {
        const body = Buffer.concat(parts);
        const headers = { ...ur.headers };
        delete headers["transfer-encoding"];
        headers["content-length"] = String(body.length);
        let status = ur.statusCode;
        if (watched) {
          this.last = { status, headers, body };
          if (this.relabel) {
            status = this.relabel;
            this.tampered++;
          }
        }
        res.writeHead(status, headers);
        res.end(body);
      });
    });
    up.on("error", () => res.destroy());
    req.pipe(up);
  }

  close() {
    this.server.closeAllConnections?.();
    this.server.close();
  }
}
