package files_test

import (
	"encoding/json"
	"io"
	"net/http/httptest"
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
	resp, err := newHost(t).App().Test(httptest.NewRequest("GET", "/api/v1/version", nil))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	var v map[string]string
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	if resp.StatusCode != 200 || len(v) != 2 || v["server_version"] != platform.Version || v["version"] != files.APIVersion {
		t.Fatalf("%d %s", resp.StatusCode, raw)
	}
}
