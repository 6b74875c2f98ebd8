package notes

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strconv"
	"strings"
	"time"

	"deckhand/platform/fault"
	"deckhand/platform/store"
)

const bucketTickets = "tickets" // sha256(ticket) → ticket

// ExportRequest is the (optional) body of POST .../export-ticket.
type ExportRequest struct {
	TTLSeconds int `json:"ttl_seconds" minimum:"1" maximum:"3600" doc:"how long the ticket is good for, in seconds (default 300)"`
}

// Validate checks the lifetime.
func (r *ExportRequest) Validate() error {
	if r.TTLSeconds != 0 && (r.TTLSeconds < 1 || r.TTLSeconds > 3600) {
		return fault.Invalid("ttl_seconds", "must be 1-3600, got %d", r.TTLSeconds)
	}
	return nil
}

// ExportTicket is the answer of POST .../export-ticket. The ticket is a
// bearer secret: whoever holds the URL may download the node once.
type ExportTicket struct {
	Ticket    string    `json:"ticket" required:"true"`
	Path      string    `json:"path" required:"true" doc:"the download path on this service"`
	URL       string    `json:"url" required:"true" doc:"the download path as the caller reached the service: behind the gateway with its prefix (/_/notes/api/v1/notes/export?ticket=...)"`
	Format    string    `json:"format" required:"true" enum:"markdown"`
	ExpiresAt time.Time `json:"expires_at" required:"true"`
}

type ticket struct {
	Notebook  string    `json:"notebook"`
	Node      string    `json:"node"`
	ExpiresAt time.Time `json:"expires_at"`
	UsedAt    time.Time `json:"used_at,omitempty"`
}

func ticketKey(t string) string {
	sum := sha256.Sum256([]byte(t))
	return hex.EncodeToString(sum[:])
}

// TicketRequest is POST .../export-ticket.
type TicketRequest struct {
	NodeRef
	Prefix string `header:"X-Forwarded-Prefix" doc:"the prefix a proxy (the agent's gateway) strips; url carries it"`
	Body   ExportRequest
}

// IssueTicket makes a one-time ticket for a node that exists. Only the
// ticket's hash is stored.
func (s *Service) IssueTicket(ctx context.Context, req TicketRequest) (ExportTicket, error) {
	t, err := s.issueTicket(ctx, req.Notebook, req.Node, req.Body)
	if err != nil {
		return ExportTicket{}, err
	}
	t.URL = strings.TrimRight(req.Prefix, "/") + t.Path
	return t, nil
}

func (s *Service) issueTicket(ctx context.Context, notebook, node string, in ExportRequest) (ExportTicket, error) {
	ttl := s.ticketTTL
	if in.TTLSeconds > 0 {
		ttl = time.Duration(in.TTLSeconds) * time.Second
	}
	var raw [24]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return ExportTicket{}, fault.Internal("make a ticket", err)
	}
	tok := base64.RawURLEncoding.EncodeToString(raw[:])
	now := s.clock.Now()
	t := ExportTicket{Ticket: tok, Path: "/api/v1/notes/export?ticket=" + tok, Format: "markdown", ExpiresAt: now.Add(ttl)}
	err := s.db.UpdateContext(ctx, func(tx *store.Tx) error {
		if tx.GetRaw(bucketDocs, docKey(notebook, node)) == nil {
			return fault.NotFound("node", notebook+"/"+node)
		}
		// Forget tickets that ended more than an hour ago (a used or
		// expired ticket is remembered that long to answer 410, not 404).
		stale, err := tx.Page(ticketTable, store.Query{
			Filters: []store.Filter{store.Where("expires_at", store.Lt, now.Add(-time.Hour))}, SkipTotal: true})
		if err != nil {
			return err
		}
		for _, it := range stale.Items {
			if err := tx.Delete(bucketTickets, it.Key); err != nil {
				return err
			}
		}
		return tx.Put(bucketTickets, ticketKey(tok), ticket{Notebook: notebook, Node: node, ExpiresAt: t.ExpiresAt})
	})
	return t, fault.Wrap("issue an export ticket", err)
}

// Download is GET /api/v1/notes/export.
type Download struct {
	Ticket string `query:"ticket" required:"true" doc:"the ticket of POST .../export-ticket"`
}

// MarkdownFile is a node's Markdown as an attachment.
type MarkdownFile struct {
	Disposition  string `header:"Content-Disposition" doc:"attachment; filename=\"<nodeId>.md\""`
	CacheControl string `header:"Cache-Control" doc:"no-store"`
	Body         []byte
}

// Export redeems a ticket for the node's Markdown.
func (s *Service) Export(ctx context.Context, in Download) (MarkdownFile, error) {
	md, name, err := s.redeem(ctx, in.Ticket)
	if err != nil {
		return MarkdownFile{}, err
	}
	return MarkdownFile{Disposition: `attachment; filename="` + name + `"`, CacheControl: "no-store", Body: md}, nil
}

// redeem uses a ticket: exactly one caller gets the node's Markdown; a
// used or expired ticket is 410, an unknown one 404.
func (s *Service) redeem(ctx context.Context, tok string) (md []byte, filename string, err error) {
	err = s.db.UpdateContext(ctx, func(tx *store.Tx) error {
		var t ticket
		ok, err := tx.Get(bucketTickets, ticketKey(tok), &t)
		if err != nil {
			return err
		}
		if !ok {
			return fault.NotFound("export ticket", "…")
		}
		now := s.clock.Now()
		if !t.UsedAt.IsZero() {
			return &fault.Error{Code: fault.CodeGone, Details: "ticket", Message: "the export ticket was already used; ask for a new one"}
		}
		if !now.Before(t.ExpiresAt) {
			return &fault.Error{Code: fault.CodeGone, Details: "ticket", Message: "the export ticket expired; ask for a new one"}
		}
		var d Document
		found, err := tx.Get(bucketDocs, docKey(t.Notebook, t.Node), &d)
		if err != nil {
			return err
		}
		if !found {
			return fault.NotFound("node", t.Notebook+"/"+t.Node)
		}
		t.UsedAt = now
		if err := tx.Put(bucketTickets, ticketKey(tok), t); err != nil {
			return err
		}
		md, filename = markdown(d), d.NodeID+".md"
		return nil
	})
	return md, filename, fault.Wrap("redeem an export ticket", err)
}

// markdown renders a document as CommonMark.
func markdown(d Document) []byte {
	var b strings.Builder
	if d.Title != "" {
		b.WriteString("# " + oneLine(d.Title) + "\n\n")
	}
	for _, bl := range d.Blocks {
		switch bl.Type {
		case "heading":
			b.WriteString(strings.Repeat("#", bl.Level) + " " + oneLine(bl.Text) + "\n\n")
		case "text":
			b.WriteString(strings.TrimSpace(bl.Text) + "\n\n")
		case "quote":
			for _, l := range strings.Split(strings.TrimSpace(bl.Text), "\n") {
				b.WriteString(strings.TrimRight("> "+l, " ") + "\n")
			}
			b.WriteString("\n")
		case "list":
			for i, it := range bl.Items {
				mark := "-"
				if bl.Ordered {
					mark = strconv.Itoa(i+1) + "."
				}
				b.WriteString(mark + " " + oneLine(it) + "\n")
			}
			b.WriteString("\n")
		case "code":
			fence := fenceFor(bl.Text)
			b.WriteString(fence + bl.Language + "\n" + strings.TrimRight(bl.Text, "\n") + "\n" + fence + "\n\n")
		case "math":
			b.WriteString("$$\n" + strings.TrimSpace(bl.Text) + "\n$$\n\n")
		case "diagram":
			fence := fenceFor(bl.Text)
			b.WriteString(fence + "diagram\n" + strings.TrimRight(bl.Text, "\n") + "\n" + fence + "\n\n")
		case "divider":
			b.WriteString("---\n\n")
		}
	}
	return []byte(strings.TrimRight(b.String(), "\n") + "\n")
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// fenceFor is a backquote fence longer than any run inside text.
func fenceFor(text string) string {
	longest, run := 0, 0
	for _, r := range text {
		if r == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	return strings.Repeat("`", max(3, longest+1))
}
