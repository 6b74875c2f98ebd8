package platform

// AuthorizedPortHeader is set by the agent's gateway on a request its
// proxy permissions document admitted: the port the decision judged (a
// service's own, or for the tunnel service the tunnelled port). The
// gateway drops every copy a client sends, so a service may rely on it:
// the tunnel dials no other port for such a request. Absent when no
// document decided (no document, or a loopback client of a disabled
// proxy).
const AuthorizedPortHeader = "X-Deckhand-Authorized-Port"
