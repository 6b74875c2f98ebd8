package cron_test

import (
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
	var h platform.Health
	status, _ := platformtest.GetJSON(t, newHost(t), "/health", &h)
	if status != 200 || h.Service != "cron" || h.Status != "ok" || h.FDs == nil || *h.FDs <= 0 || h.Memory == nil || h.Memory.RSS == 0 {
		t.Fatalf("health %d %+v", status, h)
	}
}
