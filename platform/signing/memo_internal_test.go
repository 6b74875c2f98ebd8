package signing

import "testing"

// Two bodies with one hash never share a signature: the memo compares the
// bytes, and keeps the first entry.
func TestMemoHashCollision(t *testing.T) {
	m := newMemo()
	a, b := []byte("body a"), []byte("body b")
	_, hb, _ := m.get(7, "k1", b)
	m.put(7, "k1", hb, a, []byte("sig-a")) // a stored under b's hash
	if _, _, ok := m.get(7, "k1", b); ok {
		t.Fatal("a colliding body got another body's signature")
	}
	m.put(7, "k1", hb, b, []byte("sig-b"))
	if _, _, ok := m.get(7, "k1", b); ok {
		t.Fatal("a collision replaced the first entry")
	}
	_, ha, _ := m.get(7, "k1", a)
	m.put(7, "k1", ha, a, []byte("sig-a"))
	if sig, _, ok := m.get(7, "k1", a); !ok || string(sig) != "sig-a" {
		t.Fatal("a remembered body missed")
	}
	if _, _, ok := m.get(8, "k1", a); ok {
		t.Fatal("a later second hit")
	}
	if _, _, ok := m.get(7, "k2", a); ok {
		t.Fatal("another key hit")
	}
	m.put(6, "k1", ha, a, []byte("old")) // a straggler from an earlier second
	if sig, _, _ := m.get(7, "k1", a); string(sig) != "sig-a" {
		t.Fatal("a straggler from an earlier second reset the memo")
	}
}

// The memo stays within its byte bound.
func TestMemoBounded(t *testing.T) {
	m := newMemo()
	body := make([]byte, memoMaxBody)
	for i := range memoMaxBytes/memoMaxBody + 10 {
		body[0], body[1] = byte(i), byte(i>>8)
		_, h, _ := m.get(1, "k", body)
		m.put(1, "k", h, body, []byte("s"))
	}
	if m.bytes > memoMaxBytes || len(m.entries) > memoMaxBytes/memoMaxBody {
		t.Fatalf("memo holds %d bytes in %d entries", m.bytes, len(m.entries))
	}
	big := make([]byte, memoMaxBody+1)
	if _, _, ok := m.get(1, "k", big); ok {
		t.Fatal("an over-size body hit")
	}
}
