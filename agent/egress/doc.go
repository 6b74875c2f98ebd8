// Package egress owns the agent's network layer: it enforces a
// container's network configuration (platform/netconf) in the network
// namespace the agent runs in, and keeps it in sync with the control
// plane.
//
// On Linux, with CAP_NET_ADMIN, the engine installs one nftables table
// (inet deckhand_egress) through netlink:
//   - outbound TCP is redirected to a loopback forwarder, which reads the
//     original destination (SO_ORIGINAL_DST) and dials it through the
//     configured proxy: SOCKS5 (golang.org/x/net/proxy), HTTP CONNECT, or
//     CONNECT over TLS for an https proxy; with `block` and an allow list,
//     allowed destinations are dialed directly;
//   - DNS (UDP and TCP port 53, to any server, loopback stubs included) is
//     redirected to a loopback resolver (miekg/dns) that forwards to dns_servers, over
//     TCP through the proxy for the proxy types;
//   - everything else leaving the namespace is refused (TCP reset, the
//     rest dropped and counted), except loopback, replies of connections
//     others opened to the container from outside (a connection whose
//     original direction arrived on an interface other than loopback,
//     kept in its conntrack mark), and the control plane's address;
//   - the agent's own sockets carry a mark the rules let through when the
//     socket also belongs to the agent's user; the connection is then
//     marked in conntrack, which only CAP_NET_ADMIN can change.
//
// An agent that can enforce the rules gives up CAP_NET_RAW for itself and
// every program it starts (DropRawNet): a packet socket gets around any
// nftables rule.
//
// The forwarder caps its connections in total and per local user (the
// client socket's owner), and every listener backs off when descriptors
// run out (platform/connlimit) instead of stopping.
//
// Allow and deny lists are judged on DNS questions, the TLS SNI and the
// HTTP Host (see netconf.Lists.Decide). Each decision goes to the journal
// (source "egress") with its destination, name, proxy and reason, never a
// payload.
//
// Stopping the network or deleting its configuration removes the table.
// The agent stopping, for whatever reason, leaves it (egress stays closed,
// never open) until the next agent puts its configuration in force or
// takes the table out. Without CAP_NET_ADMIN
// the engine installs nothing and reports that it cannot enforce, with the
// reason.
package egress
