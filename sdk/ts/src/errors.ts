/**
 * An answer with a status of 400 or more. `code` is the server's code: the
 * control plane envelope's `error`, or a container service's `code`
 * (INVALID, NOT_FOUND ...); `details` a container service's details.
 */
export class DeckhandError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details: string = "",
    readonly method: string = "",
    readonly path: string = "",
  ) {
    super(`deckhand: ${method} ${path}: ${status} ${code}: ${message}`);
    this.name = "DeckhandError";
    this.serverMessage = message;
  }
  readonly serverMessage: string;

  static fromBody(method: string, path: string, status: number, raw: Uint8Array | string): DeckhandError {
    const text = typeof raw === "string" ? raw : new TextDecoder().decode(raw);
    let code = "", message = "", details = "";
    try {
      const b = JSON.parse(text);
      if (b && typeof b === "object") {
        code = b.code ?? (typeof b.error === "string" ? b.error : "") ?? "";
        message = b.message ?? "";
        details = typeof b.details === "string" ? b.details : b.details == null ? "" : JSON.stringify(b.details);
      }
    } catch {
      // not JSON: the text is the message
    }
    if (!message) message = text.trim().slice(0, 512) || String(status);
    return new DeckhandError(status, code, message, details, method, path);
  }
}

/**
 * A control-plane answer without a valid X-Service-Signature: altered on
 * the way, or not from the control plane. Nothing of it is returned.
 */
export class SignatureError extends Error {
  constructor(readonly method: string, readonly path: string, readonly reason: string) {
    super(`deckhand: refusing the answer to ${method} ${path}: ${reason}`);
    this.name = "SignatureError";
  }
}
