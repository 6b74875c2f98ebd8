package files_test

import (
	"testing"

	"deckhand/platform"
	"deckhand/platform/platformtest"
	"deckhand/services/files"
)

func newHost(t *testing.T) *platform.Host {
	svc := files.New(platformtest.ServiceDeps(t, "files"))
	return platformtest.ServiceHost(svc.Info(), svc.Routes())
}

func TestEveryRouteIsDocumented(t *testing.T) {
	t.Parallel()
	platformtest.CheckRoutesDocumented(t, newHost(t))
}

func TestVersion(t *testing.T) {
	t.Parallel()
	var v map[string]string
	status, raw := platformtest.GetJSON(t, newHost(t), "/api/v1/version", &v)
	if status != 200 || len(v) != 2 || v["server_version"] != platform.Version || v["version"] != files.APIVersion {
		t.Fatalf("%d %s", status, raw)
	}
}
