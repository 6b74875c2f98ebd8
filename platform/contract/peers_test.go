package contract_test

import (
	"testing"

	"deckhand/platform"
	"deckhand/platform/contract"
)

// A service restarted in place serves on a new host before the old run's
// stop is done: that stop must not take the new host away.
func TestPeersKeepTheNewerHost(t *testing.T) {
	t.Parallel()
	var none *contract.Peers
	if none.Host("files") != nil {
		t.Fatal("a nil Peers has a host")
	}
	p := &contract.Peers{}
	old, cur := &platform.Host{}, &platform.Host{}
	p.Serve("files", old)
	p.Serve("files", cur)
	p.Stop("files", old)
	if p.Host("files") != cur {
		t.Fatal("the old run's stop took the newer host away")
	}
	p.Stop("files", cur)
	if p.Host("files") != nil || p.Host("process") != nil {
		t.Fatal("a stopped or unknown service has a host")
	}
}
