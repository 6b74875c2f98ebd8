// Package netconf owns what the control plane and the agent exchange about
// a container's outbound network: the effective configuration the agent
// enforces (Document), the agent's report of what runs (Status), and the
// allow and deny lists of domains and CIDRs with the decision they make
// (Lists.Decide). Both halves validate with the same code, so a list the
// control plane stores is one the agent compiles.
//
// Lists are an extension of docs/spec/interface.md's network configuration:
//   - an entry is a domain (`example.com`: that name only), a wildcard
//     (`*.example.com`: every name below it, not the name itself; `*`:
//     every name), an IP address or a CIDR;
//   - a deny entry always wins; when an allow list is set, whatever it does
//     not name is denied (default deny);
//   - names are matched on the DNS questions the agent's resolver answers,
//     the TLS SNI and the HTTP Host a connection presents; an address
//     reached by name must be one the agent's resolver gave for that name,
//     so an IP literal or a name that does not fit the address (SNI or Host
//     fronting) is refused under an allow list.
package netconf
