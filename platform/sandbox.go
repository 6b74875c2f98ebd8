package platform

// SandboxCSP is the Content-Security-Policy of an answer whose body is
// content a browser could run as a page (SVG, HTML, XML) and that nobody
// vouches for: a user's file, a rendered drawing. Nothing loads, no script
// runs and the page gets an opaque origin (sandbox), so content served
// from the agent's origin cannot use the agent's cookies or call its
// routes. Inline styles stay, so an SVG still looks right.
const SandboxCSP = "default-src 'none'; style-src 'unsafe-inline'; sandbox"
