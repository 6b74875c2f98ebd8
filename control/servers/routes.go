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
	}
}
