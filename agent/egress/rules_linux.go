package egress

import (
	"errors"
	"fmt"
	"net/netip"
	"os"

	"github.com/google/nftables"
	"github.com/google/nftables/binaryutil"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// TableName is the agent's nftables table (family inet). It holds every
// rule the agent puts in the container's network namespace; removing it
// removes them all.
const TableName = "deckhand_egress"

// ruleSpec is what one installation of the table says.
type ruleSpec struct {
	// mark and uid: a packet of the agent's own sockets carries the mark
	// and is owned by the agent's user (see agentSocket).
	mark, uid uint32
	// dnsPort, fwdPort: the resolver's and forwarder's loopback ports.
	dnsPort, fwdPort uint16
	// redirectTCP sends outbound TCP to the forwarder (proxy types, and
	// block with an allow list); without it TCP is dropped.
	redirectTCP bool
	// v6: the forwarder and resolver listen on ::1 too; without it IPv6
	// egress is dropped.
	v6 bool
	// exempt are destinations reached directly (the control plane).
	exempt []netip.AddrPort
}

// ctDirReply is IP_CT_DIR_REPLY: a packet of the answering side.
const ctDirReply = 1

// ipsDstNAT is IPS_DST_NAT: the connection's destination was rewritten
// (by the redirect).
const ipsDstNAT = 1 << 5

// Bits of the conntrack mark (ct mark) the table keeps on a connection.
// Only a process with CAP_NET_ADMIN can set a connection's mark (through
// nftables or ctnetlink); a socket option cannot.
const (
	// ctInbound: a packet of the connection's original direction came in
	// on an interface other than loopback, so the connection was opened
	// from outside and the container may answer it. A connection a local
	// socket opened with another host's address as its source (a
	// non-local bind: IP_FREEBIND, IPV6_FREEBIND) never gets it, so its
	// "replies" stay in.
	ctInbound = 1 << 30
	// ctAgent: the connection is the agent's own (its first packet
	// passed agentSocket); every later packet of it passes, whatever
	// socket sends it (a TCP time-wait answer has no owner).
	ctAgent = 1 << 29
)

var table = &nftables.Table{Name: TableName, Family: nftables.TableFamilyINet}

// installRules replaces the table in one netlink batch: there is no
// moment with half the rules in force.
func installRules(s ruleSpec) error {
	c, err := nftables.New()
	if err != nil {
		return err
	}
	// Add-then-delete makes the delete valid whether or not a table is
	// there (a crashed agent may have left one).
	c.AddTable(table)
	c.DelTable(table)
	t := c.AddTable(table)
	nat := c.AddChain(&nftables.Chain{Name: "nat_out", Table: t, Type: nftables.ChainTypeNAT,
		Hooknum: nftables.ChainHookOutput, Priority: nftables.ChainPriorityNATDest})
	filter := c.AddChain(&nftables.Chain{Name: "filter_out", Table: t, Type: nftables.ChainTypeFilter,
		Hooknum: nftables.ChainHookOutput, Priority: nftables.ChainPriorityFilter})
	add := func(ch *nftables.Chain, parts ...[]expr.Any) {
		var all []expr.Any
		for _, p := range parts {
			all = append(all, p...)
		}
		c.AddRule(&nftables.Rule{Table: t, Chain: ch, Exprs: all})
	}
	in := c.AddChain(&nftables.Chain{Name: "mark_in", Table: t, Type: nftables.ChainTypeFilter,
		Hooknum: nftables.ChainHookPrerouting, Priority: nftables.ChainPriorityMangle})
	accept := []expr.Any{&expr.Verdict{Kind: expr.VerdictAccept}}

	// mark_in: a connection whose original direction arrives from
	// outside (not through loopback) is one others opened to the
	// container. Marked on any such packet, not only the first, so a
	// connection opened before the table came keeps its answers.
	add(in, ifname(expr.MetaKeyIIFNAME, "lo", expr.CmpOpNeq), ctDirection(0), ctMarkHas(ctInbound, false), ctMarkOr(ctInbound))

	// nat: the agent's own sockets pass untouched; DNS to any server,
	// loopback ones included (a stub resolver, Docker's 127.0.0.11),
	// goes to the resolver; then loopback and the control plane pass;
	// the rest of TCP goes to the forwarder.
	add(nat, agentSocket(s.mark, s.uid), accept)
	add(filter, ctMarkHas(ctAgent, true), accept)
	add(filter, agentSocket(s.mark, s.uid), ctMarkOr(ctAgent), accept)
	fams := []byte{unix.NFPROTO_IPV4}
	if s.v6 {
		fams = append(fams, unix.NFPROTO_IPV6)
	}
	for _, fam := range fams {
		for _, proto := range []byte{unix.IPPROTO_UDP, unix.IPPROTO_TCP} {
			add(nat, nfproto(fam), l4proto(proto), dport(53), redirect(s.dnsPort))
		}
	}
	for _, ch := range []*nftables.Chain{nat, filter} {
		add(ch, oifLoopback(), accept)
	}
	for _, ap := range s.exempt {
		add(nat, daddrPort(ap), accept)
	}
	if s.redirectTCP {
		for _, fam := range fams {
			add(nat, nfproto(fam), l4proto(unix.IPPROTO_TCP), redirect(s.fwdPort))
		}
	}

	// filter: what nat sent to loopback passes; replies of connections
	// others opened to the container from outside pass (not replies of
	// a connection a local socket opened to the container in another
	// host's name); the control plane passes;
	// IPv6 neighbour discovery passes; everything else is refused and
	// counted.
	// The hook's output device stays the one routed before nat, so what
	// nat redirected to loopback is told by its conntrack status.
	add(filter, []expr.Any{&expr.Ct{Register: 1, Key: expr.CtKeySTATUS},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4,
			Mask: binaryutil.NativeEndian.PutUint32(ipsDstNAT), Xor: binaryutil.NativeEndian.PutUint32(0)},
		&expr.Cmp{Op: expr.CmpOpNeq, Register: 1, Data: binaryutil.NativeEndian.PutUint32(0)}}, accept)
	add(filter, ctDirection(ctDirReply), ctMarkHas(ctInbound, true), accept)
	for _, ap := range s.exempt {
		add(filter, daddrPort(ap), accept)
	}
	add(filter, nfproto(unix.NFPROTO_IPV6), l4proto(unix.IPPROTO_ICMPV6), []expr.Any{
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: 0, Len: 1},
		&expr.Range{Op: expr.CmpOpEq, Register: 1, FromData: []byte{133}, ToData: []byte{137}}}, accept)
	// TCP is refused with a reset so a connect fails at once; the
	// rest is dropped (a local sender gets EPERM).
	add(filter, l4proto(unix.IPPROTO_TCP), []expr.Any{&expr.Counter{}, &expr.Reject{Type: unix.NFT_REJECT_TCP_RST}})
	add(filter, []expr.Any{&expr.Counter{}, &expr.Verdict{Kind: expr.VerdictDrop}})
	if err := c.Flush(); err != nil {
		return fmt.Errorf("nftables: install table %s: %w", TableName, err)
	}
	return nil
}

// removeRules deletes the table; absent is fine.
func removeRules() error {
	c, err := nftables.New()
	if err != nil {
		return err
	}
	c.AddTable(table)
	c.DelTable(table)
	if err := c.Flush(); err != nil {
		return fmt.Errorf("nftables: remove table %s: %w", TableName, err)
	}
	return nil
}

// rulesPresent reports whether the table is in the namespace, and the
// packets its drop rule counted.
func rulesPresent() (bool, uint64, error) {
	c, err := nftables.New()
	if err != nil {
		return false, 0, err
	}
	if _, err := c.ListTableOfFamily(TableName, nftables.TableFamilyINet); err != nil {
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, unix.ENOENT) {
			return false, 0, nil
		}
		return false, 0, err
	}
	rules, err := c.GetRules(table, &nftables.Chain{Name: "filter_out", Table: table})
	if err != nil {
		return true, 0, nil
	}
	var dropped uint64
	for _, r := range rules {
		for _, e := range r.Exprs {
			if ctr, ok := e.(*expr.Counter); ok {
				dropped += ctr.Packets
			}
		}
	}
	return true, dropped, nil
}

// probeNetlink asks the kernel for the table list: it fails when the
// agent may not touch nftables (no CAP_NET_ADMIN, no nf_tables).
func probeNetlink() error {
	c, err := nftables.New()
	if err != nil {
		return err
	}
	_, err = c.ListTablesOfFamily(nftables.TableFamilyINet)
	return err
}

// agentSocket matches a packet of the agent's own sockets: the socket
// carries the agent's mark and belongs to the agent's user. The mark
// alone is not enough: since Linux 5.17 CAP_NET_RAW suffices to set
// SO_MARK, and a program given that capability (a ping with file
// capabilities runs as its caller) must not pass for the agent.
func agentSocket(mark, uid uint32) []expr.Any {
	return []expr.Any{&expr.Meta{Key: expr.MetaKeyMARK, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: binaryutil.NativeEndian.PutUint32(mark)},
		&expr.Meta{Key: expr.MetaKeySKUID, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: binaryutil.NativeEndian.PutUint32(uid)}}
}

func oifLoopback() []expr.Any { return ifname(expr.MetaKeyOIFNAME, "lo", expr.CmpOpEq) }

func ifname(key expr.MetaKey, name string, op expr.CmpOp) []expr.Any {
	b := make([]byte, 16)
	copy(b, name)
	return []expr.Any{&expr.Meta{Key: key, Register: 1}, &expr.Cmp{Op: op, Register: 1, Data: b}}
}

func ctDirection(dir byte) []expr.Any {
	return []expr.Any{&expr.Ct{Register: 1, Key: expr.CtKeyDIRECTION},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{dir}}}
}

// ctMarkHas matches a connection whose ct mark has (or, set false,
// lacks) bit.
func ctMarkHas(bit uint32, set bool) []expr.Any {
	op := expr.CmpOpEq
	if set {
		op = expr.CmpOpNeq
	}
	return []expr.Any{&expr.Ct{Register: 1, Key: expr.CtKeyMARK},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4,
			Mask: binaryutil.NativeEndian.PutUint32(bit), Xor: binaryutil.NativeEndian.PutUint32(0)},
		&expr.Cmp{Op: op, Register: 1, Data: binaryutil.NativeEndian.PutUint32(0)}}
}

// ctMarkOr sets bit in the connection's ct mark, keeping the others.
func ctMarkOr(bit uint32) []expr.Any {
	return []expr.Any{&expr.Ct{Register: 1, Key: expr.CtKeyMARK},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4,
			Mask: binaryutil.NativeEndian.PutUint32(^bit), Xor: binaryutil.NativeEndian.PutUint32(bit)},
		&expr.Ct{Register: 1, Key: expr.CtKeyMARK, SourceRegister: true}}
}

func nfproto(fam byte) []expr.Any {
	return []expr.Any{&expr.Meta{Key: expr.MetaKeyNFPROTO, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{fam}}}
}

func l4proto(p byte) []expr.Any {
	return []expr.Any{&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{p}}}
}

func dport(p uint16) []expr.Any {
	return []expr.Any{&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: binaryutil.BigEndian.PutUint16(p)}}
}

func redirect(port uint16) []expr.Any {
	return []expr.Any{&expr.Immediate{Register: 1, Data: binaryutil.BigEndian.PutUint16(port)},
		&expr.Redir{RegisterProtoMin: 1}}
}

// daddrPort matches TCP to one address and port.
func daddrPort(ap netip.AddrPort) []expr.Any {
	a := ap.Addr().Unmap()
	var out []expr.Any
	if a.Is4() {
		b := a.As4()
		out = append(nfproto(unix.NFPROTO_IPV4),
			&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: 16, Len: 4},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: b[:]})
	} else {
		b := a.As16()
		out = append(nfproto(unix.NFPROTO_IPV6),
			&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: 24, Len: 16},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: b[:]})
	}
	out = append(out, l4proto(unix.IPPROTO_TCP)...)
	return append(out, dport(ap.Port())...)
}
