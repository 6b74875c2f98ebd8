package wallet

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"deckhand/control/domain"
	"deckhand/control/events"
	"deckhand/control/money"
	"deckhand/control/wallet/invoicepdf"
	"deckhand/platform"
	"deckhand/platform/auth"
	"deckhand/platform/fault"
	"deckhand/platform/store"
)

// InvoiceTransaction is the transaction an invoice bills.
type InvoiceTransaction struct {
	ID              string       `json:"id"`
	TransactionType string       `json:"transaction_type"`
	Status          string       `json:"status"`
	Amount          money.Amount `json:"amount"`
	Currency        string       `json:"currency"`
	CreatedAt       time.Time    `json:"created_at"`
}

// BillingDetails says how an invoice was paid.
type BillingDetails struct {
	PaymentMethod     string `json:"payment_method"`
	PaymentMethodType string `json:"payment_method_type"`
}

// InvoiceItem is one line of an invoice. Its amount is written as the
// invoice's is: a JSON number with two decimals (interface.md types the
// invoice's amount as a number; its items say the same in the same form).
type InvoiceItem struct {
	Type        string       `json:"type"`
	Description string       `json:"description"`
	Amount      money.Number `json:"amount"`
}

// Invoice is one invoice; lists leave out billing_details and items.
type Invoice struct {
	ID             string             `json:"id"`
	UserID         string             `json:"user_id"`
	TransactionID  string             `json:"transaction_id"`
	InvoiceNumber  string             `json:"invoice_number" doc:"INV-<year>-<6 digits>, consecutive without gaps within a year"`
	Status         string             `json:"status" doc:"paid"`
	Amount         money.Number       `json:"amount"`
	Currency       string             `json:"currency"`
	IssueDate      time.Time          `json:"issue_date"`
	DueDate        time.Time          `json:"due_date"`
	PaidDate       *time.Time         `json:"paid_date"`
	CreatedAt      time.Time          `json:"created_at"`
	UpdatedAt      time.Time          `json:"updated_at"`
	Transaction    InvoiceTransaction `json:"transaction"`
	BillingDetails *BillingDetails    `json:"billing_details,omitempty"`
	Items          []InvoiceItem      `json:"items,omitempty"`
}

// InvoiceList is GET /api/v1/wallet/invoices.
type InvoiceList struct {
	Invoices   []Invoice  `json:"invoices"`
	Pagination Pagination `json:"pagination"`
}

// Generated answers POST /api/v1/wallet/invoices/generate/{id}.
type Generated struct {
	InvoiceID     string `json:"invoice_id"`
	InvoiceNumber string `json:"invoice_number"`
	Existed       bool   `json:"already_existed"`
}

var invoiceSorts = []string{"id", "invoice_number", "status", "amount", "currency", "issue_date", "due_date", "paid_date",
	"created_at", "updated_at", "user_id", "transaction_id"}

// InvoiceQuery is GET /api/v1/wallet/invoices.
type InvoiceQuery struct {
	domain.PageQuery
	SortBy string `query:"sort_by" default:"created_at" doc:"unknown values fall back to created_at"`
	Filter string `query:"filter" doc:"JSON object of conditions"`
}

// InvoiceRef names one of the caller's invoices.
type InvoiceRef struct {
	ID string `path:"id" doc:"an invoice id"`
}

// InvoiceFile is an invoice rendered as a PDF.
type InvoiceFile struct {
	Disposition string `header:"Content-Disposition" doc:"inline; filename=\"<invoice_number>.pdf\""`
	Body        []byte
}

// GeneratedAnswer is a generated invoice with the message saying whether
// it was made now.
type GeneratedAnswer struct {
	Message string
	Body    Generated
}

func (s *Service) invoiceRoutes() []platform.Route {
	tag := []string{"wallet"}
	return []platform.Route{
		{Method: http.MethodGet, Path: "/api/v1/wallet/invoices", OperationID: "listInvoices", Policy: platform.SignedIn, Tags: tag,
			Summary: "The caller's invoices",
			Description: "`sort_by` is one of " + strings.Join(invoiceSorts, ", ") + "; any other value falls back to created_at. " +
				"`filter` is a JSON object over those fields: a value (equality) or an object of operators eq, ne, gt, gte, lt, lte, " +
				"like (% and _ wildcards, case-insensitive), in (array), e.g. {\"status\":\"paid\",\"amount\":{\"gte\":10}}; amounts are numbers " +
				"or decimal strings, dates RFC 3339 or YYYY-MM-DD. Bad JSON, an unknown field or an unknown operator: 400.",
			Message: "Invoices", Op: platform.Op(s.ListInvoices)},
		{Method: http.MethodGet, Path: "/api/v1/wallet/invoices/{id}", OperationID: "getInvoice", Policy: platform.SignedIn, Tags: tag,
			Summary: "One invoice with billing_details, items and transaction", Message: "Invoice", Op: platform.Op(s.GetInvoice)},
		{Method: http.MethodGet, Path: "/api/v1/wallet/invoices/{id}/pdf", OperationID: "getInvoicePDF", Policy: platform.SignedIn, Tags: tag,
			Summary: "The invoice as a PDF", ContentType: "application/pdf", Op: platform.Op(s.InvoicePDF)},
		{Method: http.MethodPost, Path: "/api/v1/wallet/invoices/generate/{id}", OperationID: "generateInvoice", Policy: platform.SignedIn, Tags: tag,
			Summary: "Make the invoice of one of the caller's completed transactions (idempotent)",
			Description: "Path `id` is a transaction id. The first call numbers the invoice (INV-<year>-<n>, consecutive per year) and " +
				"answers `Invoice generated`; later calls answer the same invoice with the message `Invoice already exists`. 200 both times.",
			Message: "Invoice generated", Op: platform.Op(s.GenerateInvoice)},
	}
}

// items describes what a transaction bills.
func items(t *Transaction) ([]InvoiceItem, BillingDetails) {
	switch t.TransactionType {
	case TypeTransfer:
		return []InvoiceItem{
				{Type: "ai_credit", Description: "AI credit", Amount: money.Number(t.Amount - t.Fee)},
				{Type: "fee", Description: "Platform fee on transfer to AI credit", Amount: money.Number(t.Fee)}},
			BillingDetails{PaymentMethod: "Wallet general balance", PaymentMethodType: "wallet_balance"}
	case TypeCredit:
		return []InvoiceItem{{Type: "credit", Description: t.Description, Amount: money.Number(t.Amount)}},
			BillingDetails{PaymentMethod: "Account credit by the operator", PaymentMethodType: "account_credit"}
	}
	d := t.Description
	if t.Reference != "" && !strings.Contains(d, t.Reference) {
		d += " (" + t.Reference + ")"
	}
	return []InvoiceItem{{Type: t.TransactionType, Description: d, Amount: money.Number(t.Amount)}},
		BillingDetails{PaymentMethod: "Wallet general balance", PaymentMethodType: "wallet_balance"}
}

// GenerateInvoice makes (once) the invoice of the caller's transaction.
func (s *Service) GenerateInvoice(ctx context.Context, ref TransactionRef) (*GeneratedAnswer, error) {
	g, err := s.generateInvoice(ctx, ref.ID)
	if err != nil {
		return nil, err
	}
	out := &GeneratedAnswer{Message: "Invoice generated", Body: *g}
	if g.Existed {
		out.Message = "Invoice already exists for transaction " + ref.ID
	}
	return out, nil
}

func (s *Service) generateInvoice(ctx context.Context, id string) (*Generated, error) {
	p, err := platform.Caller(ctx)
	if err != nil {
		return nil, err
	}
	if err := validID("id", id); err != nil {
		return nil, err
	}
	var out Generated
	err = s.db.UpdateContext(ctx, func(tx *store.Tx) error {
		out = Generated{}
		var existing string
		if ok, err := tx.Get(bucketInvByTxn, userKey(p.UserID, id), &existing); err != nil {
			return err
		} else if ok {
			var inv Invoice
			if _, err := tx.Get(bucketInvoices, userKey(p.UserID, existing), &inv); err != nil {
				return err
			}
			out = Generated{InvoiceID: inv.ID, InvoiceNumber: inv.InvoiceNumber, Existed: true}
			return nil
		}
		var t Transaction
		ok, err := tx.Get(bucketTxns, userKey(p.UserID, id), &t)
		if err != nil {
			return err
		}
		if !ok {
			return fault.NotFound("transaction", id)
		}
		if t.Status != StatusComplete {
			return fault.Invalid("id", "transaction %s is %s; only completed transactions are invoiced", id, t.Status)
		}
		now := s.now()
		year := now.Year()
		n, err := tx.NextSeq(fmt.Sprintf("%s%d", seqInvoicePref, year))
		if err != nil {
			return err
		}
		its, bill := items(&t)
		paid := t.CreatedAt
		inv := Invoice{ID: newID("inv", now), UserID: p.UserID, TransactionID: t.ID, InvoiceNumber: fmt.Sprintf("INV-%d-%06d", year, n),
			Status: "paid", Amount: money.Number(t.Amount), Currency: Currency, IssueDate: now, DueDate: now, PaidDate: &paid,
			CreatedAt: now, UpdatedAt: now, Items: its, BillingDetails: &bill,
			Transaction: InvoiceTransaction{ID: t.ID, TransactionType: t.TransactionType, Status: t.Status, Amount: t.Amount,
				Currency: t.Currency, CreatedAt: t.CreatedAt}}
		if err := tx.Put(bucketInvoices, userKey(p.UserID, inv.ID), inv); err != nil {
			return err
		}
		if err := tx.Put(bucketInvByTxn, userKey(p.UserID, t.ID), inv.ID); err != nil {
			return err
		}
		out = Generated{InvoiceID: inv.ID, InvoiceNumber: inv.InvoiceNumber}
		return s.appendEvent(tx, events.Event{EventType: "wallet.invoice.generated", ResourceType: "invoice",
			ResourceID: inv.ID, ActorID: p.UserID, IP: auth.ClientIP(ctx),
			Payload: events.Payload(map[string]any{"invoice_number": inv.InvoiceNumber, "transaction_id": t.ID})})
	})
	if err != nil {
		return nil, fault.Wrap("generate the invoice", err)
	}
	return &out, nil
}

// ListInvoices answers a filtered, sorted page of the caller's invoices.
func (s *Service) ListInvoices(ctx context.Context, iq InvoiceQuery) (*InvoiceList, error) {
	q := listQuery(iq.PageQuery, iq.SortBy, iq.Filter)
	f, err := parseFilter(q.Filter)
	if err != nil {
		return nil, err
	}
	by := q.SortBy
	if _, ok := invoiceFields[by]; !ok {
		by = "created_at"
	}
	invs, pg, err := pageOf[Invoice](ctx, s, invoiceTable, q, by, f, "list invoices")
	if err != nil {
		return nil, err
	}
	for i := range invs {
		invs[i].Items, invs[i].BillingDetails = nil, nil
	}
	return &InvoiceList{Invoices: invs, Pagination: pg}, nil
}

// GetInvoice answers one of the caller's invoices in full.
func (s *Service) GetInvoice(ctx context.Context, ref InvoiceRef) (*Invoice, error) {
	inv, err := getOne[Invoice](ctx, s, bucketInvoices, "invoice", ref.ID)
	if err != nil {
		return nil, err
	}
	if inv.Items == nil {
		inv.Items = []InvoiceItem{}
	}
	return inv, nil
}

// InvoicePDF renders one of the caller's invoices.
func (s *Service) InvoicePDF(ctx context.Context, ref InvoiceRef) (*InvoiceFile, error) {
	pdf, inv, err := s.invoicePDF(ctx, ref)
	if err != nil {
		return nil, err
	}
	return &InvoiceFile{Disposition: fmt.Sprintf(`inline; filename="%s.pdf"`, inv.InvoiceNumber), Body: pdf}, nil
}

func (s *Service) invoicePDF(ctx context.Context, ref InvoiceRef) ([]byte, *Invoice, error) {
	inv, err := s.GetInvoice(ctx, ref)
	if err != nil {
		return nil, nil, err
	}
	// The buyer's name and address come from identity (env.Accounts); an
	// invoice still renders without them.
	var buyer domain.Contact
	if c, err := s.env.Accounts.Contact(ctx, inv.UserID); err != nil {
		s.log.Warn("invoice buyer lookup failed", "invoice", inv.ID, "error", err)
	} else if c != nil {
		buyer = *c
	}
	name := buyer.Username
	if name == "" {
		name = "Account " + inv.UserID
	}
	lines := []string{"User id: " + inv.UserID}
	if buyer.Email != "" {
		lines = append([]string{buyer.Email}, lines...)
	}
	doc := invoicepdf.Invoice{Number: inv.InvoiceNumber, Status: inv.Status, Currency: inv.Currency, IssueDate: inv.IssueDate,
		DueDate: inv.DueDate, PaidDate: inv.PaidDate, Total: money.Amount(inv.Amount).String(), Reference: inv.TransactionID,
		Seller: invoicepdf.Party{Name: s.seller.Name, Lines: nonEmpty(s.seller.Address, s.seller.Email)},
		Buyer:  invoicepdf.Party{Name: name, Lines: lines}}
	if inv.BillingDetails != nil {
		doc.Payment = inv.BillingDetails.PaymentMethod
	}
	for _, it := range inv.Items {
		doc.Items = append(doc.Items, invoicepdf.Item{Description: it.Description, Amount: money.Amount(it.Amount).String()})
	}
	pdf, err := invoicepdf.Render(doc)
	if err != nil {
		return nil, nil, fault.Internal("render the invoice PDF", err)
	}
	return pdf, inv, nil
}

func nonEmpty(ss ...string) []string {
	var out []string
	for _, s := range ss {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}
