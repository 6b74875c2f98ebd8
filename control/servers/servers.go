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
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"deckhand/control/catalog"
	"deckhand/control/domain"
	"deckhand/control/events"
	"deckhand/control/money"
	"deckhand/platform"
	"deckhand/platform/auth"
	"deckhand/platform/fault"
	"deckhand/platform/secrets"
	"deckhand/platform/store"
)

// RentalPeriod is what one rent buys; price is per period.
const RentalPeriod = 30 * 24 * time.Hour

const bucketServers = "servers"

// serverTable declares the servers' bucket as a table: the marketplace
// order (region, price, name) is an index, and the renter and the end of
// the rental are indexed fields, so the marketplace and a user's rentals
// are store pages.
var serverTable = store.Declare(bucketServers, []store.Field[serverRec]{
	store.Text("region", func(r *serverRec) string { return r.Region }),
	store.Int("price", func(r *serverRec) int64 { return int64(r.Price) }),
	store.Text("name", func(r *serverRec) string { return r.Name }),
	store.OptionalText("renter_id", func(r *serverRec) string { return r.RenterID }),
	store.Time("rented_until", func(r *serverRec) time.Time { return r.RentedUntil }),
}, store.Index{Fields: []string{"region", "price", "name"}, Sort: true}, store.Index{Fields: []string{"renter_id", "rented_until"}})

// Tables are the tables this package declares.
var Tables = []*store.Table{serverTable}

// legacyRentals indexed rentals by renter in an earlier layout; New drops it.
const legacyRentals = "server_rentals"

// Service is the servers domain.
type Service struct {
	env    domain.Env[Config]
	cfg    Config
	sealer *secrets.Sealer
}

// New builds the domain; rentals of priced servers charge the wallet, so
// it requires the Payments seam.
func New(env domain.Env[Config]) (*Service, error) {
	env.Payments.Require()
	ctx := context.Background()
	if err := env.Store.Declare(ctx, Tables...); err != nil {
		return nil, fmt.Errorf("servers: %w", err)
	}
	if err := env.Store.UpdateContext(ctx, func(tx *store.Tx) error { return tx.DropBucket(legacyRentals) }); err != nil {
		return nil, fmt.Errorf("servers: drop the earlier rentals index: %w", err)
	}
	return &Service{env: env, cfg: env.Config, sealer: env.Config.Sealer}, nil
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
	// Driver, Capacity and Draining are shown to admins only, for a
	// server with an endpoint; the endpoint itself is never answered.
	Driver   string `json:"driver,omitempty" doc:"admins only: docker or kubernetes when the server runs containers"`
	Capacity int    `json:"capacity,omitempty" doc:"admins only: how many containers it holds"`
	Draining *bool  `json:"draining,omitempty" doc:"admins only: true while it takes no new containers"`
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
	// Driver, the sealed Endpoint, Capacity and Draining make it a
	// runtime endpoint (endpoint.go).
	Driver   string `json:"driver,omitempty"`
	Endpoint string `json:"endpoint,omitempty"`
	Capacity int    `json:"capacity,omitempty"`
	Draining bool   `json:"draining,omitempty"`
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
	if p.IsAdmin() && r.Driver != "" {
		draining := r.Draining
		v.Driver, v.Capacity, v.Draining = r.Driver, r.Capacity, &draining
	}
	return v
}

const idPrefix = "srv_"

// ServerRef names one server.
type ServerRef struct {
	ID string `path:"id" doc:"a server id (srv_...)"`
}

// ValidateParams checks the id's syntax (400 before any lookup).
func (r ServerRef) ValidateParams() error { return catalog.CheckID("server", idPrefix, r.ID) }

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
		return fault.Invalid("name", "must be 1 to 100 printable characters")
	}
	if in.Region == "" || len(in.Region) > 64 || strings.IndexFunc(in.Region, func(r rune) bool {
		return !(r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r)) || r == '-' || r == '_')
	}) >= 0 {
		return fault.Invalid("region", "must be 1 to 64 letters, digits, - or _")
	}
	if in.Price != "" {
		p, err := money.ParseNumber(in.Price)
		if err != nil {
			return fault.Invalid("price", "must be a number at least 0 with at most 2 decimals")
		}
		in.price = p
	}
	specs := bytes.TrimSpace(in.Specs)
	if len(specs) == 0 || string(specs) == "null" {
		in.Specs = json.RawMessage("{}")
		return nil
	}
	if specs[0] != '{' || !json.Valid(specs) {
		return fault.Invalid("specs", "must be a JSON object")
	}
	if len(specs) > 8<<10 {
		return fault.Invalid("specs", "must be at most 8192 bytes")
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
		return nil, fault.Wrap("create the server", err)
	}
	return &out, nil
}

// list is the servers filters select that keep passes (the exact check
// at now; the filters bound times to the microsecond), ordered by region,
// price, name, id.
func (s *Service) list(ctx context.Context, filters func(now time.Time, p *auth.Principal) []store.Filter, keep func(r *serverRec, now time.Time, p *auth.Principal) bool) ([]Server, error) {
	p, err := platform.Caller(ctx)
	if err != nil {
		return nil, err
	}
	now := s.env.Clock.Now()
	out := []Server{}
	err = s.env.Store.ViewContext(ctx, func(tx *store.Tx) error {
		out = out[:0]
		recs, _, err := store.All[serverRec](tx, serverTable, store.Query{Filters: filters(now, p), Sort: []string{"region", "price", "name"}})
		for i := range recs {
			if keep(&recs[i], now, p) {
				out = append(out, recs[i].view(now, p))
			}
		}
		return err
	})
	if err != nil {
		return nil, fault.Wrap("list servers", err)
	}
	return out, nil
}

// Available is the marketplace: servers nobody rents now.
func (s *Service) Available(ctx context.Context) ([]Server, error) {
	return s.list(ctx, func(now time.Time, _ *auth.Principal) []store.Filter {
		return []store.Filter{store.AnyOf(store.Where("renter_id", store.Eq, nil), store.Where("rented_until", store.Lte, now))}
	}, func(r *serverRec, now time.Time, _ *auth.Principal) bool { return !r.rented(now) })
}

// Mine is the caller's current rentals.
func (s *Service) Mine(ctx context.Context) ([]Server, error) {
	return s.list(ctx, func(now time.Time, p *auth.Principal) []store.Filter {
		return []store.Filter{store.Where("renter_id", store.Eq, p.UserID), store.Where("rented_until", store.Gte, now)}
	}, func(r *serverRec, now time.Time, p *auth.Principal) bool {
		return r.rented(now) && r.RenterID == p.UserID
	})
}

// Get is one server the caller may see: on the marketplace, rented by the
// caller, or any to an admin. Another user's rental is 404, so answers
// never reveal who rents what.
func (s *Service) Get(ctx context.Context, ref ServerRef) (*Server, error) {
	p, err := platform.Caller(ctx)
	if err != nil {
		return nil, err
	}
	if err := ref.ValidateParams(); err != nil {
		return nil, err
	}
	now := s.env.Clock.Now()
	var out Server
	err = s.env.Store.ViewContext(ctx, func(tx *store.Tx) error {
		r, err := visible(tx, ref.ID, now, p)
		if err == nil {
			out = r.view(now, p)
		}
		return err
	})
	if err != nil {
		return nil, fault.Wrap("read the server", err)
	}
	return &out, nil
}

// visible is server id as p may see it at now: another user's rental is
// 404 to all but admins, as unknown ids are.
func visible(tx *store.Tx, id string, now time.Time, p *auth.Principal) (*serverRec, error) {
	r, err := getServer(tx, id)
	if err == nil && r.rented(now) && r.RenterID != p.UserID && !p.IsAdmin() {
		return nil, fault.NotFound("server", id)
	}
	return r, err
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
func (s *Service) Rent(ctx context.Context, ref ServerRef) (*RentResult, error) {
	p, err := platform.Caller(ctx)
	if err != nil {
		return nil, err
	}
	if err := ref.ValidateParams(); err != nil {
		return nil, err
	}
	id := ref.ID
	now := s.env.Clock.Now().UTC()
	var res RentResult
	err = s.env.Store.UpdateContext(ctx, func(tx *store.Tx) error {
		// Another user's rental is unknown to the caller here as in Get,
		// so renting cannot probe who rents what; an admin sees it (409).
		r, err := visible(tx, id, now, p)
		if err != nil {
			return err
		}
		if r.rented(now) && r.RenterID == p.UserID {
			return fault.Errorf(fault.CodeConflict, "server %s is already rented by you until %s", id, r.RentedUntil.Format(stamp))
		}
		if r.rented(now) {
			return fault.Errorf(fault.CodeConflict, "server %s is not available: it is rented", id)
		}
		r.RenterID, r.RentedAt, r.RentedUntil = p.UserID, now, now.Add(RentalPeriod)
		if err := tx.Put(bucketServers, id, r); err != nil {
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
		return nil, fault.Wrap("rent the server", err)
	}
	return &res, nil
}
