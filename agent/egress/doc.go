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
//     others opened to the container, and the control plane's address;
//   - the agent's own sockets carry a mark the rules let through.
//
// Allow and deny lists are judged on DNS questions, the TLS SNI and the
// HTTP Host (see netconf.Lists.Decide). Each decision goes to the journal
// (source "egress") with its destination, name, proxy and reason, never a
// payload.
//
// Stopping the network, deleting its configuration or stopping the agent
// removes the table. An agent killed outright leaves it (egress stays
// closed, never open) until the next agent starts. Without CAP_NET_ADMIN
// the engine installs nothing and reports that it cannot enforce, with the
// reason.
package egress
