package docker

import (
	"context"
	"fmt"

	"github.com/moby/moby/client"
)

// HostAddr answers the address the engine's host has on the
// installation's network (the bridge's gateway), making the network when
// it is missing. A control plane listens there so its containers' agents
// reach it while its API stays on loopback.
func (d *Driver) HostAddr(ctx context.Context) (string, error) {
	if err := d.ensureNetwork(ctx); err != nil {
		return "", err
	}
	n, err := d.cli.NetworkInspect(ctx, d.opts.Network, client.NetworkInspectOptions{})
	if err != nil {
		return "", fail("network inspect", err)
	}
	for _, c := range n.Network.IPAM.Config {
		if c.Gateway.IsValid() && c.Gateway.Is4() {
			return c.Gateway.String(), nil
		}
	}
	return "", fmt.Errorf("docker runtime: network %q has no IPv4 gateway", d.opts.Network)
}
