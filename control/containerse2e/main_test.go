package containerse2e_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"deckhand/control/controltest"
	"deckhand/control/runtime"
	"deckhand/control/runtime/runtimetest"
	"deckhand/platform/platformtest"
)

var agentBin string

// TestMain finds (or builds, static) the agent the image carries, then
// runs every test on both store engines.
func TestMain(m *testing.M) {
	if addr := os.Getenv(relayEnv); addr != "" {
		serveRelay(addr) // the proxy benchmark's relay process
		return
	}
	os.Exit(func() int {
		bin, cleanup, err := platformtest.Binary("deckhand", "deckhand/agent/cmd/deckhand")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer cleanup()
		agentBin = bin
		return controltest.Run(m)
	}())
}

// agentImage imports an image whose entrypoint is the deckhand agent
// (busybox for a userland, a user uid 1000 with its home at /home/user)
// and removes it when the test ends. It answers the engine's reference.
func agentImage(t *testing.T, host string) string {
	return image(t, host, `["/usr/local/bin/deckhand"]`)
}

// image is agentImage with another entrypoint (a JSON array), and more
// Dockerfile changes (ENV NAME=VALUE) when given.
func image(t *testing.T, host, entrypoint string, changes ...string) string {
	t.Helper()
	return runtimetest.AgentImage(t, host, "deckhand-containerse2e/agent", agentBin, entrypoint, changes...)
}

// engineObjects names what the engine holds for container id (any
// installation): containers and volumes by the container label.
func engineObjects(t *testing.T, host, id string) []string {
	t.Helper()
	cli := runtimetest.Client(t, host)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	f := client.Filters{}.Add("label", runtime.LabelContainer+"="+id)
	var out []string
	cs, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs.Items {
		out = append(out, "container "+strings.Join(c.Names, ","))
	}
	vs, err := cli.VolumeList(ctx, client.VolumeListOptions{Filters: f})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vs.Items {
		out = append(out, "volume "+v.Name)
	}
	return out
}

// installationOf is the installation label of container id's engine
// container ("" when there is none).
func installationOf(t *testing.T, host, id string) string {
	t.Helper()
	cli := runtimetest.Client(t, host)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true,
		Filters: client.Filters{}.Add("label", runtime.LabelContainer+"="+id)})
	if err != nil || len(cs.Items) == 0 {
		return ""
	}
	return cs.Items[0].Labels[runtime.LabelInstallation]
}

// purgeLater removes, when the test ends, everything the engine holds of
// installation inst (the network the driver made included). Call it after
// importing the images the installation runs: cleanups run last first,
// and an image a container still uses is only untagged.
func purgeLater(t *testing.T, host string, inst *string) {
	t.Cleanup(func() {
		if *inst == "" {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := runtimetest.Purge(ctx, host, *inst); err != nil {
			t.Errorf("purge installation %s: %v", *inst, err)
		}
	})
}
