// Package servers owns the rented-server marketplace: servers admins put
// on offer, the list of those free to rent, renting one (charged through
// the wallet's Payments seam in the same transaction as the rental when
// the server has a price) and the caller's rented servers.
//
// A rental lasts RentalPeriod; once it ends the server is back on the
// marketplace. Renting a server the caller rents is 409; another user's
// rental is 404 to everyone but an admin, as reading it is.
package servers

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"sort"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/gofiber/fiber/v3"

	"deckhand/control/catalog"
	"deckhand/control/domain"
	"deckhand/control/events"
	"deckhand/control/money"
	"deckhand/platform"
	"deckhand/platform/auth"
	"deckhand/platform/store"
)

// RentalPeriod is what one rent buys; price is per period.
const RentalPeriod = 30 * 24 * time.Hour

const (
	bucketServers = "servers"
	// bucketRentals indexes rentals by renter (renter/server), so a user's
	// list reads their rentals only. An ended rental stays until the server is
	// rented again (the list skips it by time).
	bucketRentals = "server_rentals"
)

// Service is the servers domain.
type Service struct {
	env domain.Env[domain.NoConfig]
}

// New builds the domain; rentals of priced servers charge the wallet, so
// it requires the Payments seam.
func New(env domain.Env[domain.NoConfig]) (*Service, error) {
	env.Payments.Require()
	return &Service{env: env}, nil
}

// Server is a server record. Rental fields are shown to the renter and
// admins only; a marketplace entry has status available.
type Server struct {
	ID          string          `json:"id"`
	Name        string          `json:"name"`
	Region      string          `json:"region"`
	Price       money.Number    `json:"price"`
	Specs       json.RawMessage `json:"specs"`
	Status      string          `json:"status" doc:"available or rented"`
	RenterID    string          `json:"renter_id,omitempty"`
	RentedAt    string          `json:"rented_at,omitempty"`
	RentedUntil string          `json:"rented_until,omitempty"`
	CreatedAt   string          `json:"created_at"`
}

// serverRec is the stored server.
type serverRec struct {
	ID          string          `json:"id"`
	Name        string          `json:"name"`
	Region      string          `json:"region"`
	Price       money.Amount    `json:"price"`
	Specs       json.RawMessage `json:"specs"`
	CreatedAt   time.Time       `json:"created_at"`
	RenterID    string          `json:"renter_id,omitempty"`
	RentedAt    time.Time       `json:"rented_at,omitempty"`
	RentedUntil time.Time       `json:"rented_until,omitempty"`
}

const stamp = "2006-01-02T15:04:05.000Z"

func (r *serverRec) rented(now time.Time) bool { return r.RenterID != "" && now.Before(r.RentedUntil) }

// view is the record as p may see it at now.
func (r *serverRec) view(now time.Time, p *auth.Principal) Server {
	v := Server{ID: r.ID, Name: r.Name, Region: r.Region, Price: money.Number(r.Price), Specs: r.Specs,
		Status: "available", CreatedAt: r.CreatedAt.Format(stamp)}
	if r.rented(now) {
		v.Status = "rented"
		if p.UserID == r.RenterID || p.IsAdmin() {
			v.RenterID, v.RentedAt, v.RentedUntil = r.RenterID, r.RentedAt.Format(stamp), r.RentedUntil.Format(stamp)
		}
	}
	return v
}

const idPrefix = "srv_"

// Routes is the domain's route table.
func (s *Service) Routes() []platform.Route {
	tag := []string{"servers"}
	return []platform.Route{
		{Method: http.MethodGet, Path: "/api/v1/servers/available", Policy: platform.SignedIn, Tags: tag,
			Summary: "Rental marketplace: servers nobody rents now", Response: []Server{},
			Description: "Ordered by region, then price, then name.", Handler: platform.Read("Available servers", s.Available)},
		{Method: http.MethodPost, Path: "/api/v1/servers/{id}/rent", Policy: platform.SignedIn, Tags: tag,
			Limits:  []platform.RateLimit{{Name: "servers.rent", By: platform.ByAccount, N: 30, Per: time.Minute}},
			Summary: "Rent a server for 30 days", Response: RentResult{},
			Description: "A priced server is charged to the caller's general balance (wallet transaction type server_rental) in the same transaction as the rental: " +
				"400 on insufficient balance. 409 when the caller already rents it (until the rental ends). " +
				"400 for a malformed id, 404 for an unknown one and for another user's rental (as GET answers it, so renting reveals no rental; " +
				"an admin, who can read it, gets 409).",
			Handler: s.handleRent},
		{Method: http.MethodGet, Path: "/api/v1/servers", Policy: platform.SignedIn, Tags: tag,
			Summary: "The caller's rented servers (rentals that have not ended)", Response: []Server{},
			Handler: platform.Read("Your servers", s.Mine)},
		{Method: http.MethodGet, Path: "/api/v1/servers/{id}", Policy: platform.SignedIn, Tags: tag,
			Summary: "One server", Response: Server{},
			Description: "A server on the marketplace, or one the caller rents; admins see every server. Another user's rented server is 404.",
			Handler:     s.handleGet},
		{Method: http.MethodPost, Path: "/api/v1/admin/servers", Policy: platform.Admin, Tags: tag, Status: http.StatusCreated,
			Summary: "Offer a server (admin)", Body: CreateInput{}, Response: Server{},
			Handler: platform.Endpoint(http.StatusCreated, "Server created", s.Create)},
	}
}

// CreateInput is the admin create body.
type CreateInput struct {
	Name   string          `json:"name" required:"true" doc:"1-100 printable characters"`
	Region string          `json:"region" required:"true" doc:"1-64 characters: letters, digits, - and _"`
	Price  json.Number     `json:"price" doc:"per 30-day rental; number at least 0 with at most 2 decimals; 0 or absent is free"`
	Specs  json.RawMessage `json:"specs" doc:"free-form object (cpu, memory, disk ...), at most 8 KiB; absent is {}"`

	price money.Amount
}

// Validate checks every field.
func (in *CreateInput) Validate() error {
	if n := utf8.RuneCountInString(in.Name); n < 1 || n > 100 || strings.IndexFunc(in.Name, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0 {
		return platform.Invalid("name", "must be 1 to 100 printable characters")
	}
	if in.Region == "" || len(in.Region) > 64 || strings.IndexFunc(in.Region, func(r rune) bool {
		return !(r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r)) || r == '-' || r == '_')
	}) >= 0 {
		return platform.Invalid("region", "must be 1 to 64 letters, digits, - or _")
	}
	if in.Price != "" {
		p, err := money.ParseNumber(in.Price)
		if err != nil {
			return platform.Invalid("price", "must be a number at least 0 with at most 2 decimals")
		}
		in.price = p
	}
	specs := bytes.TrimSpace(in.Specs)
	if len(specs) == 0 || string(specs) == "null" {
		in.Specs = json.RawMessage("{}")
		return nil
	}
	if specs[0] != '{' || !json.Valid(specs) {
		return platform.Invalid("specs", "must be a JSON object")
	}
	if len(specs) > 8<<10 {
		return platform.Invalid("specs", "must be at most 8192 bytes")
	}
	in.Specs = specs
	return nil
}

// Create offers a server on the marketplace (admin only).
func (s *Service) Create(ctx context.Context, in CreateInput) (*Server, error) {
	p, err := platform.AdminCaller(ctx)
	if err != nil {
		return nil, err
	}
	if err := in.Validate(); err != nil {
		return nil, err
	}
	now := s.env.Clock.Now().UTC()
	var out Server
	err = s.env.Store.UpdateContext(ctx, func(tx *store.Tx) error {
		r := &serverRec{ID: catalog.NewID(idPrefix), Name: in.Name, Region: in.Region, Price: in.price, Specs: in.Specs, CreatedAt: now}
		if err := tx.Put(bucketServers, r.ID, r); err != nil {
			return err
		}
		out = r.view(now, p)
		_, err := s.env.Events.Append(tx, events.Event{EventType: "server.created", ResourceType: "server", ResourceID: r.ID,
			ActorID: p.UserID, IP: auth.ClientIP(ctx), Payload: events.Payload(map[string]any{"name": r.Name, "region": r.Region, "price": r.Price})})
		return err
	})
	if err != nil {
		return nil, platform.Wrap("create the server", err)
	}
	return &out, nil
}

// list is the servers of the bucket range o (in bucketRentals when
// rentals, else bucketServers) that keep passes, ordered by region, price,
// name, id.
func (s *Service) list(ctx context.Context, rentals bool, o store.ScanOptions, keep func(r *serverRec, now time.Time, p *auth.Principal) bool) ([]Server, error) {
	p, err := platform.Caller(ctx)
	if err != nil {
		return nil, err
	}
	now := s.env.Clock.Now()
	var recs []*serverRec
	err = s.env.Store.ViewContext(ctx, func(tx *store.Tx) error {
		recs = recs[:0]
		if !rentals {
			return tx.Scan(bucketServers, o, func(_ string, raw []byte) error {
				var r serverRec
				if err := json.Unmarshal(raw, &r); err != nil {
					return err
				}
				if keep(&r, now, p) {
					recs = append(recs, &r)
				}
				return nil
			})
		}
		var ids []string
		err := tx.Scan(bucketRentals, o, func(k string, _ []byte) error {
			ids = append(ids, k[strings.IndexByte(k, '/')+1:])
			return nil
		})
		if err != nil {
			return err
		}
		rented, err := store.GetMany[serverRec](tx, bucketServers, ids) // one read, not one per rental
		if err != nil {
			return err
		}
		for _, r := range rented {
			if r != nil && keep(r, now, p) {
				recs = append(recs, r)
			}
		}
		return nil
	})
	if err != nil {
		return nil, platform.Wrap("list servers", err)
	}
	sort.Slice(recs, func(i, j int) bool {
		a, b := recs[i], recs[j]
		if a.Region != b.Region {
			return a.Region < b.Region
		}
		if a.Price != b.Price {
			return a.Price < b.Price
		}
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		return a.ID < b.ID
	})
	out := make([]Server, 0, len(recs))
	for _, r := range recs {
		out = append(out, r.view(now, p))
	}
	return out, nil
}

// Available is the marketplace: servers nobody rents now (availability
// depends on the clock, so every server is read).
func (s *Service) Available(ctx context.Context) ([]Server, error) {
	return s.list(ctx, false, store.ScanOptions{}, func(r *serverRec, now time.Time, _ *auth.Principal) bool { return !r.rented(now) })
}

// Mine is the caller's current rentals, read through the renter index.
func (s *Service) Mine(ctx context.Context) ([]Server, error) {
	p, err := platform.Caller(ctx)
	if err != nil {
		return nil, err
	}
	return s.list(ctx, true, store.ScanOptions{Prefix: p.UserID + "/"}, func(r *serverRec, now time.Time, p *auth.Principal) bool {
		return r.rented(now) && r.RenterID == p.UserID
	})
}

// Get is one server the caller may see: on the marketplace, rented by the
// caller, or any to an admin. Another user's rental is 404, so answers
// never reveal who rents what.
func (s *Service) Get(ctx context.Context, id string) (*Server, error) {
	p, err := platform.Caller(ctx)
	if err != nil {
		return nil, err
	}
	if err := catalog.CheckID("server", idPrefix, id); err != nil {
		return nil, err
	}
	now := s.env.Clock.Now()
	var out Server
	err = s.env.Store.ViewContext(ctx, func(tx *store.Tx) error {
		var r serverRec
		ok, err := tx.Get(bucketServers, id, &r)
		if err != nil {
			return err
		}
		if !ok || (r.rented(now) && r.RenterID != p.UserID && !p.IsAdmin()) {
			return platform.NotFound("server", id)
		}
		out = r.view(now, p)
		return nil
	})
	if err != nil {
		return nil, platform.Wrap("read the server", err)
	}
	return &out, nil
}

func (s *Service) handleGet(c fiber.Ctx) error {
	v, err := s.Get(c.Context(), c.Params("id"))
	if err != nil {
		return err
	}
	return platform.Respond(c, http.StatusOK, "Server", v)
}

// RentResult is the rented server with what was paid; remaining_balance
// is present only when the rental was charged.
type RentResult struct {
	Server           Server        `json:"server"`
	PricePaid        money.Number  `json:"price_paid"`
	RemainingBalance *money.Number `json:"remaining_balance,omitempty"`
}

// Rent rents a server for RentalPeriod, charging its price to the
// caller's general balance in the same transaction.
func (s *Service) Rent(ctx context.Context, id string) (*RentResult, error) {
	p, err := platform.Caller(ctx)
	if err != nil {
		return nil, err
	}
	if err := catalog.CheckID("server", idPrefix, id); err != nil {
		return nil, err
	}
	now := s.env.Clock.Now().UTC()
	var res RentResult
	err = s.env.Store.UpdateContext(ctx, func(tx *store.Tx) error {
		var r serverRec
		ok, err := tx.Get(bucketServers, id, &r)
		if err != nil {
			return err
		}
		// Another user's rental is unknown to the caller here as in Get,
		// so renting cannot probe who rents what; an admin sees it (409).
		if !ok || (r.rented(now) && r.RenterID != p.UserID && !p.IsAdmin()) {
			return platform.NotFound("server", id)
		}
		if r.rented(now) && r.RenterID == p.UserID {
			return platform.Errorf(platform.CodeConflict, "server %s is already rented by you until %s", id, r.RentedUntil.Format(stamp))
		}
		if r.rented(now) {
			return platform.Errorf(platform.CodeConflict, "server %s is not available: it is rented", id)
		}
		if r.RenterID != "" {
			if err := tx.Delete(bucketRentals, r.RenterID+"/"+id); err != nil {
				return err
			}
		}
		r.RenterID, r.RentedAt, r.RentedUntil = p.UserID, now, now.Add(RentalPeriod)
		if err := tx.Put(bucketServers, id, &r); err != nil {
			return err
		}
		if err := tx.PutRaw(bucketRentals, p.UserID+"/"+id, nil); err != nil {
			return err
		}
		res = RentResult{PricePaid: money.Number(r.Price)}
		if r.Price > 0 {
			left, err := s.env.Payments.Charge(tx, domain.Charge{UserID: p.UserID, Amount: r.Price, Kind: "server_rental",
				Reference: r.ID, Description: "Server " + r.Name + " (30 days)"})
			if err != nil {
				return catalog.ChargeErr(err)
			}
			n := money.Number(left)
			res.RemainingBalance = &n
		}
		res.Server = r.view(now, p)
		_, err = s.env.Events.Append(tx, events.Event{EventType: "server.rented", ResourceType: "server", ResourceID: r.ID,
			ActorID: p.UserID, IP: auth.ClientIP(ctx), Payload: events.Payload(map[string]any{"price": r.Price, "rented_until": r.RentedUntil})})
		return err
	})
	if err != nil {
		return nil, platform.Wrap("rent the server", err)
	}
	return &res, nil
}

func (s *Service) handleRent(c fiber.Ctx) error {
	res, err := s.Rent(c.Context(), c.Params("id"))
	if err != nil {
		return err
	}
	return platform.Respond(c, http.StatusOK, "Server rented", res)
}
