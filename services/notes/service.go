// Package notes owns the notes service (port +11): notebooks of nodes whose
// document is a list of typed blocks (text, heading, list, quote, code,
// math, diagram, divider), kept in the service's own bbolt store with a
// version per document; each block rendered as SVG; and one-time,
// short-lived export tickets that download a node as Markdown.
package notes

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"deckhand/platform"
	clockpkg "deckhand/platform/clock"
	"deckhand/platform/contract"
	"deckhand/platform/fault"
	"deckhand/platform/lazyre"
	"deckhand/platform/store"
)

func init() {
	fault.RegisterCode(CodeVersionConflict, http.StatusConflict)
}

// CodeVersionConflict: the document is not at the version the request
// named (If-Match or version).
const CodeVersionConflict = "VERSION_CONFLICT"

// Service is the notes service.
type Service struct {
	db    *store.DB
	log   *slog.Logger
	clock clockpkg.Clock
	// ticketTTL is how long an export ticket is good for.
	ticketTTL time.Duration
}

// New opens the service on its own store.
func New(deps contract.ServiceDeps, _ *contract.NoSettings) (*Service, error) {
	if deps.Store == nil {
		return nil, errors.New("notes: no store")
	}
	deps = deps.WithDefaults()
	if err := deps.Store.Declare(context.Background(), docTable, ticketTable); err != nil {
		return nil, fmt.Errorf("notes: %w", err)
	}
	return &Service{db: deps.Store, log: deps.Logger, clock: deps.Clock, ticketTTL: 5 * time.Minute}, nil
}

// The declared tables: documents keyed "notebook/node" (key order is the
// list's order) with the notebook indexed, and export tickets with their
// expiry indexed for the sweep of stale ones.
var (
	docTable = store.Declare(bucketDocs, []store.Field[Document]{
		store.Text("notebook_id", func(d *Document) string { return d.NotebookID }),
	}, store.Index{Fields: []string{"notebook_id"}})
	ticketTable = store.Declare(bucketTickets, []store.Field[ticket]{
		store.Time("expires_at", func(t *ticket) time.Time { return t.ExpiresAt }),
	}, store.Index{Fields: []string{"expires_at"}})
)

// Info titles the service's OpenAPI document.
func (s *Service) Info() platform.Info {
	return platform.Info{
		Name:    "notes",
		Title:   "deckhand notes",
		Version: platform.Version,
		Description: "Notebooks of nodes; a node's document is a title and a list of typed blocks (text, heading, list, quote, " +
			"code, math, diagram, divider). A notebook exists once one of its nodes is written. Every document has a version " +
			"(1 at creation, +1 per change) answered in the body and as the ETag \"N\"; a write naming another version (If-Match " +
			"or the body's version) is refused with 409 VERSION_CONFLICT and changes nothing, and replacing an existing document " +
			"with PUT needs one (428 without), so two editors never overwrite each other unseen. Each block renders as SVG: text, " +
			"heading, list, quote and code blocks as text wrapped to the width; math blocks as a minimal TeX rendering (Greek " +
			"letters and common symbols as Unicode, ^ and _ as raised and lowered smaller text, \\frac{a}{b} as a/b, \\sqrt{x} as " +
			"√(x); no stacked fractions, matrices or big operators with limits: honest text, not a typesetter); diagram blocks " +
			"as boxes and arrows laid out in layers from a small language (one statement a line: `A -> B`, `A -> B -> C`, " +
			"`A -> B: label`, `A [Box text]`, `direction LR` or `direction TD`; # starts a comment), checked when the document " +
			"is written (400 naming blocks[i].text and the line). Export tickets are single-use URLs valid for 5 minutes (or " +
			"ttl_seconds) that download the node as Markdown; a used or expired ticket answers 410 GONE, an unknown one 404. " +
			"Errors are {\"code\",\"details\",\"message\"}.",
	}
}

var idRule = lazyre.New(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

func checkID(field, v string) error {
	if !idRule.MatchString(v) {
		return fault.Invalid(field, "must be 1-128 of A-Z a-z 0-9 . _ - starting with a letter or digit, got %q", v)
	}
	return nil
}
