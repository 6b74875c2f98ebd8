package servers

import (
	"net/http"
	"time"

	"deckhand/platform"
	"deckhand/platform/ratelimit"
)

// Routes is the domain's route table.
func (s *Service) Routes() []platform.Route {
	tag := []string{"servers"}
	return []platform.Route{
		{Method: http.MethodGet, Path: "/api/v1/servers/available", OperationID: "listAvailableServers", Policy: platform.SignedIn, Tags: tag,
			Summary:     "Rental marketplace: servers nobody rents now",
			Description: "Ordered by region, then price, then name.", Message: "Available servers", Op: platform.ReadOp(s.Available)},
		{Method: http.MethodPost, Path: "/api/v1/servers/{id}/rent", OperationID: "rentServer", Policy: platform.SignedIn, Tags: tag,
			Limits:  []ratelimit.RateLimit{{Name: "servers.rent", By: ratelimit.ByAccount, N: 30, Per: time.Minute}},
			Summary: "Rent a server for 30 days",
			Description: "A priced server is charged to the caller's general balance (wallet transaction type server_rental) in the same transaction as the rental: " +
				"400 on insufficient balance. 409 when the caller already rents it (until the rental ends). " +
				"400 for a malformed id, 404 for an unknown one and for another user's rental (as GET answers it, so renting reveals no rental; " +
				"an admin, who can read it, gets 409).",
			Message: "Server rented", Op: platform.Op(s.Rent)},
		{Method: http.MethodGet, Path: "/api/v1/servers", OperationID: "listMyServers", Policy: platform.SignedIn, Tags: tag,
			Summary: "The caller's rented servers (rentals that have not ended)", Message: "Your servers", Op: platform.ReadOp(s.Mine)},
		{Method: http.MethodGet, Path: "/api/v1/servers/{id}", OperationID: "getServer", Policy: platform.SignedIn, Tags: tag,
			Summary:     "One server",
			Description: "A server on the marketplace, or one the caller rents; admins see every server. Another user's rented server is 404.",
			Message:     "Server", Op: platform.Op(s.Get)},
		{Method: http.MethodPost, Path: "/api/v1/admin/servers", OperationID: "createServer", Policy: platform.Admin, Tags: tag, Status: http.StatusCreated,
			Summary: "Offer a server (admin)", Message: "Server created", Op: platform.Op(s.Create)},
		{Method: http.MethodPut, Path: "/api/v1/admin/servers/{id}/endpoint", OperationID: "setServerEndpoint", Policy: platform.Admin, Tags: tag,
			Summary: "Make a server a runtime endpoint (admin)",
			Description: "Sets the engine the server runs containers on and how many it holds: a Docker engine (`docker_host` unix:///path, or " +
				"tcp://host:port with `tls_ca`, `tls_cert` and `tls_key`) or a Kubernetes cluster (`kubeconfig` with inline credentials, " +
				"`kube_context`, `namespace`). The endpoint is sealed under the master key and never answered; admins see `driver`, " +
				"`capacity` and `draining`. The server's name is the server_name of its containers' URLs: 409 `name` when it is not one " +
				"DNS label, is the control plane's own server name, or another endpoint's; 409 `driver` when it would change the driver. " +
				"400 names the field and rule of bad input.",
			Message: "Server endpoint set", Op: platform.Op(s.SetEndpoint)},
		{Method: http.MethodPost, Path: "/api/v1/admin/servers/{id}/drain", OperationID: "drainServer", Policy: platform.Admin, Tags: tag,
			Summary:     "Drain a server (admin)",
			Description: "Placement gives the server no new containers; those on it keep running. 409 for a server without an endpoint.",
			Message:     "Server draining", Op: platform.Op(s.Drain)},
		{Method: http.MethodPost, Path: "/api/v1/admin/servers/{id}/undrain", OperationID: "undrainServer", Policy: platform.Admin, Tags: tag,
			Summary: "Let placement choose a drained server again (admin)", Message: "Server accepting containers", Op: platform.Op(s.Undrain)},
	}
}
