package wallet

import (
	"time"

	"deckhand/control/money"
	"deckhand/platform/store"
)

// The wallet's declared tables: the ledger, fee records, invoices and
// balances. Per-user records keep their "<user>/<id>" keys; user_id is a
// field, and each list's sort is an index led by it, so one user's page is
// one index range on both engines (on PostgreSQL the tables
// wallet_transactions, wallet_ai_fees, wallet_invoices, wallet_accounts).

func byUser(field string) store.Index {
	return store.Index{Fields: []string{"user_id", field}, Sort: true}
}

func cents(a money.Amount) int64 { return int64(a) }

var (
	txnTable = store.Declare(bucketTxns, []store.Field[Transaction]{
		store.Text("user_id", func(t *Transaction) string { return t.UserID }),
		store.Text("id", func(t *Transaction) string { return t.ID }),
		store.Text("transaction_type", func(t *Transaction) string { return t.TransactionType }),
		store.Text("status", func(t *Transaction) string { return t.Status }),
		store.Int("amount", func(t *Transaction) int64 { return cents(t.Amount) }),
		store.Int("fee", func(t *Transaction) int64 { return cents(t.Fee) }),
		store.Int("general_balance_after", func(t *Transaction) int64 { return cents(t.GeneralBalance) }),
		store.Time("created_at", func(t *Transaction) time.Time { return t.CreatedAt }),
		store.Time("updated_at", func(t *Transaction) time.Time { return t.UpdatedAt }),
	}, byUser("id"), byUser("transaction_type"), byUser("status"), byUser("amount"), byUser("created_at"), byUser("updated_at"))

	feeTable = store.Declare(bucketFees, []store.Field[AIFee]{
		store.Text("user_id", func(f *AIFee) string { return f.UserID }),
		store.Text("id", func(f *AIFee) string { return f.ID }),
		store.Text("transaction_id", func(f *AIFee) string { return f.TransactionID }),
		store.Int("amount", func(f *AIFee) int64 { return cents(f.Amount) }),
		store.Time("created_at", func(f *AIFee) time.Time { return f.CreatedAt }),
	}, byUser("created_at"), byUser("amount"), byUser("transaction_id"))

	// invoiceTable's fields are the invoice filter's and sort's.
	invoiceTable = store.Declare(bucketInvoices, []store.Field[Invoice]{
		store.Text("user_id", func(i *Invoice) string { return i.UserID }),
		store.Text("id", func(i *Invoice) string { return i.ID }),
		store.Text("invoice_number", func(i *Invoice) string { return i.InvoiceNumber }),
		store.Text("status", func(i *Invoice) string { return i.Status }),
		store.Int("amount", func(i *Invoice) int64 { return int64(i.Amount) }),
		store.Text("currency", func(i *Invoice) string { return i.Currency }),
		store.Time("issue_date", func(i *Invoice) time.Time { return i.IssueDate }),
		store.Time("due_date", func(i *Invoice) time.Time { return i.DueDate }),
		store.Time("paid_date", func(i *Invoice) time.Time {
			if i.PaidDate == nil {
				return time.Time{}
			}
			return *i.PaidDate
		}),
		store.Time("created_at", func(i *Invoice) time.Time { return i.CreatedAt }),
		store.Time("updated_at", func(i *Invoice) time.Time { return i.UpdatedAt }),
		store.Text("transaction_id", func(i *Invoice) string { return i.TransactionID }),
	}, byUser("id"), byUser("invoice_number"), byUser("status"), byUser("amount"), byUser("currency"), byUser("issue_date"),
		byUser("due_date"), byUser("paid_date"), byUser("created_at"), byUser("updated_at"), byUser("transaction_id"),
		store.Index{Fields: []string{"invoice_number"}, Unique: true})

	accountTable = store.Declare(bucketAccounts, []store.Field[account]{
		store.Text("user_id", func(a *account) string { return a.UserID }),
		store.Int("general_balance", func(a *account) int64 { return cents(a.General) }),
		store.Int("ai_limit", func(a *account) int64 { return cents(a.AILimit) }),
		store.Int("ai_usage", func(a *account) int64 { return cents(a.AIUsage) }),
		store.Time("updated_at", func(a *account) time.Time { return a.UpdatedAt }),
	})
)

// Tables are the tables this package declares.
var Tables = []*store.Table{txnTable, feeTable, invoiceTable, accountTable}
