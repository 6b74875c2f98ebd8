package cron_test

import (
	"encoding/json"
	"net/http/httptest"
	"testing"

	"deckhand/platform"
	"deckhand/platform/platformtest"
	"deckhand/services/cron"
)

func newHost(t *testing.T) *platform.Host {
	svc := cron.New(platformtest.ServiceDeps(t, "cron"))
	return platformtest.ServiceHost(svc.Info(), svc.Routes())
}

func TestEveryRouteIsDocumented(t *testing.T) {
	t.Parallel()
	platformtest.CheckRoutesDocumented(t, newHost(t))
}

func TestHealthNamesCron(t *testing.T) {
	t.Parallel()
	resp, err := newHost(t).App().Test(httptest.NewRequest("GET", "/health", nil))
	if err != nil {
		t.Fatal(err)
	}
	var h platform.Health
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || h.Service != "cron" || h.Status != "ok" || h.FDs == nil || *h.FDs <= 0 || h.Memory == nil || h.Memory.RSS == 0 {
		t.Fatalf("health %d %+v", resp.StatusCode, h)
	}
}
