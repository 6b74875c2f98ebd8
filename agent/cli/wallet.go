package cli

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	deckhand "github.com/deckhand-dev/deckhand/sdk/go"
	"github.com/spf13/cobra"

	"deckhand/agent/cli/output"
	"deckhand/platform/atomicfile"
)

func walletCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "wallet",
		Short:   "Balances, transfers to AI credit, transactions and invoices",
		GroupID: GroupControl,
	}
	cmd.AddCommand(walletBalanceCmd(), walletTransferCmd(), walletTransactionsCmd(), walletInvoicesCmd())
	return cmd
}

func walletBalanceCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "balance",
		Aliases: []string{"balances"},
		Short:   "Show the general balance and the AI credit",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return show(cmd, deckhand.Request{Method: http.MethodGet, Path: "/api/v1/wallet/balances"},
				objectTable(output.Cols("GENERAL BALANCE=general_balance", "AI LIMIT=ai_limit", "AI USAGE=ai_usage",
					"AI REMAINING=ai_remaining", "AI USAGE STATUS=ai_usage_status")))
		},
	}
}

func walletTransferCmd() *cobra.Command {
	var (
		key    string
		feeBPS int
	)
	cmd := &cobra.Command{
		Use:   "transfer AMOUNT",
		Short: "Move AMOUNT (USD, up to 2 decimals) from the general balance to AI credit, less the platform fee",
		Long: "Transfers AMOUNT from the general balance to AI credit; the platform keeps its fee. Each run sends an\n" +
			"idempotency key (a random one unless --idempotency-key is given, and printed either way): when the answer\n" +
			"is lost, running again with the same key returns the first receipt instead of moving the money twice.\n" +
			"--expected-fee-bps refuses the transfer (409 TRANSFER_FEE_CHANGED) when the fee is no longer the one you saw.",
		Example: "  deckhand wallet transfer 10.00\n  deckhand wallet transfer 10.00 --idempotency-key 2026-11-invoice-7 --expected-fee-bps 500",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := loadControl(true)
			if err != nil {
				return err
			}
			if key == "" {
				var b [16]byte
				_, _ = rand.Read(b[:])
				key = "cli-" + hex.EncodeToString(b[:])
			}
			body := map[string]any{"amount": args[0], "idempotency_key": key}
			if cmd.Flags().Changed("expected-fee-bps") {
				body["expected_fee_bps"] = feeBPS
			}
			resp, err := c.call(cmd, deckhand.Request{Method: http.MethodPost, Path: "/api/v1/wallet/transfer-to-ai", Body: body})
			if err != nil {
				var apiErr *deckhand.Error
				if !errors.As(err, &apiErr) {
					return fmt.Errorf("%w\nthe transfer may or may not have happened: run again with --idempotency-key %s to find out without moving money twice", err, key)
				}
				return err
			}
			// The receipt with the key added, so a script can keep it.
			var receipt map[string]json.RawMessage
			if err := json.Unmarshal(resp.Data, &receipt); err != nil {
				return fmt.Errorf("unreadable transfer receipt: %w", err)
			}
			receipt["idempotency_key"], _ = json.Marshal(key)
			raw, _ := json.Marshal(receipt)
			return printData(cmd, raw, objectTable(output.Cols("TRANSACTION=transaction_id", "GROSS=gross_transferred", "FEE=fee",
				"FEE BPS=fee_bps", "NET AI CREDIT=net_ai_credit", "GENERAL BALANCE=general_balance", "AI BALANCE=ai_balance",
				"REPLAYED=replayed", "IDEMPOTENCY KEY=idempotency_key")))
		},
	}
	cmd.Flags().StringVar(&key, "idempotency-key", "", "key that makes a repeated transfer a no-op (1-128 characters; default random)")
	cmd.Flags().IntVar(&feeBPS, "expected-fee-bps", 0, "refuse unless the fee is this many basis points")
	return cmd
}

// pageFlags are the list flags of wallet lists.
type pageFlags struct {
	page, limit       int
	sortBy, sortOrder string
}

func (p *pageFlags) add(cmd *cobra.Command) {
	cmd.Flags().IntVar(&p.page, "page", 0, "page number (from 1)")
	cmd.Flags().IntVar(&p.limit, "limit", 0, "entries per page (server default 20)")
	cmd.Flags().StringVar(&p.sortBy, "sort-by", "", "field to sort by (server default created_at)")
	cmd.Flags().StringVar(&p.sortOrder, "sort-order", "", "asc or desc (server default desc)")
}

func (p *pageFlags) query() url.Values {
	q := url.Values{}
	if p.page > 0 {
		q.Set("page", strconv.Itoa(p.page))
	}
	if p.limit > 0 {
		q.Set("limit", strconv.Itoa(p.limit))
	}
	if p.sortBy != "" {
		q.Set("sort_by", p.sortBy)
	}
	if p.sortOrder != "" {
		q.Set("sort_order", p.sortOrder)
	}
	return q
}

// pagedTable draws the list under key in a wallet list's data and the
// page it is.
func pagedTable(key string, cols []output.Column) func(*output.TableWriter, any) {
	return func(t *output.TableWriter, d any) {
		t.Objects(output.Field(d, key), cols)
		if pg := output.Field(d, "pagination"); pg != nil {
			t.Line("page %s of %s, %s in all", output.Cell(output.Field(pg, "page")), output.Cell(output.Field(pg, "totalPages")),
				output.Cell(output.Field(pg, "total")))
		}
	}
}

func walletTransactionsCmd() *cobra.Command {
	var pf pageFlags
	cmd := &cobra.Command{
		Use:   "transactions [ID]",
		Short: "List transactions, or show one",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cols := output.Cols("ID=id", "TYPE=transaction_type", "STATUS=status", "AMOUNT=amount", "FEE=fee", "CURRENCY=currency",
				"BALANCE AFTER=general_balance_after", "CREATED=created_at")
			if len(args) == 1 {
				return show(cmd, deckhand.Request{Method: http.MethodGet, Path: "/api/v1/wallet/transactions/" + url.PathEscape(args[0])},
					objectTable(append(cols, output.Cols("DESCRIPTION=description")...)))
			}
			return show(cmd, deckhand.Request{Method: http.MethodGet, Path: "/api/v1/wallet/transactions", Query: pf.query()},
				pagedTable("transactions", cols))
		},
	}
	pf.add(cmd)
	return cmd
}

func walletInvoicesCmd() *cobra.Command {
	var (
		pf       pageFlags
		pdf, txn string
		filter   string
	)
	cmd := &cobra.Command{
		Use:   "invoices [ID]",
		Short: "List invoices, show one, make one for a transaction, or save its PDF",
		Long: "Without ID: the list (--filter takes the server's JSON filter, e.g. '{\"status\":{\"eq\":\"paid\"}}').\n" +
			"With ID: that invoice; --pdf FILE saves its PDF (- writes it to stdout).\n" +
			"--transaction TXN makes the invoice of transaction TXN (or finds the one it has) and shows it.",
		Example: "  deckhand wallet invoices\n  deckhand wallet invoices --transaction txn_... --pdf invoice.pdf\n  deckhand wallet invoices inv_... --pdf - | pdftotext - -",
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := loadControl(true)
			if err != nil {
				return err
			}
			id := ""
			if len(args) == 1 {
				id = args[0]
			}
			if txn != "" {
				if id != "" {
					return errors.New("give an invoice ID or --transaction, not both")
				}
				resp, err := c.call(cmd, deckhand.Request{Method: http.MethodPost, Path: "/api/v1/wallet/invoices/generate/" + url.PathEscape(txn)})
				if err != nil {
					return err
				}
				var gen struct {
					InvoiceID string `json:"invoice_id"`
				}
				if err := json.Unmarshal(resp.Data, &gen); err != nil || gen.InvoiceID == "" {
					return fmt.Errorf("control plane %s: the answer names no invoice", c.cfg.ControlURL)
				}
				id = gen.InvoiceID
			}
			if id == "" {
				if pdf != "" {
					return errors.New("--pdf: name the invoice (ID or --transaction)")
				}
				q := pf.query()
				if filter != "" {
					q.Set("filter", filter)
				}
				return show(cmd, deckhand.Request{Method: http.MethodGet, Path: "/api/v1/wallet/invoices", Query: q},
					pagedTable("invoices", output.Cols("ID=id", "NUMBER=invoice_number", "STATUS=status", "AMOUNT=amount",
						"CURRENCY=currency", "TRANSACTION=transaction_id", "ISSUED=issue_date")))
			}
			if pdf != "" {
				resp, err := c.call(cmd, deckhand.Request{Method: http.MethodGet, Path: "/api/v1/wallet/invoices/" + url.PathEscape(id) + "/pdf"})
				if err != nil {
					return err
				}
				if ct := resp.Header.Get("Content-Type"); ct != "application/pdf" {
					return fmt.Errorf("control plane %s: the invoice PDF came as %q", c.cfg.ControlURL, ct)
				}
				if pdf == "-" {
					_, err := cmd.OutOrStdout().Write(resp.Body)
					return err
				}
				if err := atomicfile.Write(pdf, resp.Body, 0o644); err != nil {
					return err
				}
				out := map[string]any{"invoice_id": id, "pdf": pdf, "bytes": len(resp.Body)}
				return output.New(cmd).Line(out, "Invoice %s saved to %s (%d bytes).", id, pdf, len(resp.Body))
			}
			resp, err := c.call(cmd, deckhand.Request{Method: http.MethodGet, Path: "/api/v1/wallet/invoices/" + url.PathEscape(id)})
			if err != nil {
				return err
			}
			return printData(cmd, resp.Data, func(t *output.TableWriter, d any) {
				t.Object(d, output.Cols("ID=id", "NUMBER=invoice_number", "STATUS=status", "AMOUNT=amount", "CURRENCY=currency",
					"TRANSACTION=transaction_id", "ISSUED=issue_date", "PAID=paid_date", "PAID WITH=billing_details.payment_method"))
				if items, _ := output.Field(d, "items").([]any); len(items) > 0 {
					t.Line("")
					t.Objects(items, output.Cols("ITEM=type", "DESCRIPTION=description", "AMOUNT=amount"))
				}
			})
		},
	}
	pf.add(cmd)
	cmd.Flags().StringVar(&pdf, "pdf", "", "save the invoice's PDF to this file (- for stdout)")
	cmd.Flags().StringVar(&txn, "transaction", "", "the invoice of this transaction (made when it has none)")
	cmd.Flags().StringVar(&filter, "filter", "", "JSON filter over the invoice fields (list only)")
	return cmd
}
