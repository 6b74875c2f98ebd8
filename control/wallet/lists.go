package wallet

import (
	"context"
	"encoding/json"
	"net/http"
	"sort"
	"strings"
	"time"

	"deckhand/control/domain"
	"deckhand/control/money"
	"deckhand/platform"
	"deckhand/platform/store"
)

// AIFee is one platform fee taken on a transfer.
type AIFee struct {
	ID            string         `json:"id"`
	UserID        string         `json:"user_id"`
	TransactionID string         `json:"transaction_id"`
	Amount        money.Amount   `json:"amount"`
	CreatedAt     time.Time      `json:"created_at"`
	Transaction   FeeTransaction `json:"transaction"`
}

// FeeTransaction is the transfer a fee was taken on.
type FeeTransaction struct {
	ID     string       `json:"id"`
	Reason string       `json:"reason"`
	Amount money.Amount `json:"amount"`
}

// Pagination is data.pagination.
type Pagination = domain.Pagination

// paginate is the pagination of total entries and the bounds [lo, hi) of
// the page's entries.
func paginate(total, page, limit int) (Pagination, int, int) {
	lo := min((page-1)*limit, total)
	hi := min(lo+limit, total)
	return domain.Paginate(total, page, limit), lo, hi
}

// FeeList is GET /api/v1/wallet/ai-fees.
type FeeList struct {
	Fees       []AIFee    `json:"fees"`
	Pagination Pagination `json:"pagination"`
}

// TransactionList is GET /api/v1/wallet/transactions.
type TransactionList struct {
	Transactions []Transaction `json:"transactions"`
	Pagination   Pagination    `json:"pagination"`
}

// ListQuery is a list's parsed query.
type ListQuery struct {
	Page, Limit int
	SortBy      string
	Desc        bool
	Filter      string
}

func listQuery(p domain.PageQuery, sortBy, filter string) ListQuery {
	lq := ListQuery{Page: p.Page, Limit: p.Limit, SortBy: sortBy, Desc: p.Desc(), Filter: filter}
	if lq.Page < 1 {
		lq.Page = 1
	}
	if lq.Limit < 1 {
		lq.Limit = 20
	}
	return lq
}

// FeeQuery is GET /api/v1/wallet/ai-fees.
type FeeQuery struct {
	domain.PageQuery
	SortBy string `query:"sort_by" enum:"created_at,amount,transaction_id" default:"created_at"`
}

// TransactionQuery is GET /api/v1/wallet/transactions.
type TransactionQuery struct {
	domain.PageQuery
	SortBy string `query:"sort_by" enum:"id,transaction_type,status,amount,created_at,updated_at" default:"created_at"`
}

// TransactionRef names one of the caller's transactions.
type TransactionRef struct {
	ID string `path:"id" doc:"a transaction id (txn_...)"`
}

func (s *Service) listRoutes() []platform.Route {
	tag := []string{"wallet"}
	return []platform.Route{
		{Method: http.MethodGet, Path: "/api/v1/wallet/ai-fees", OperationID: "listAIFees", Policy: platform.SignedIn, Tags: tag,
			Summary: "The caller's AI fee records (one per transfer with a fee)", Message: "AI fees", Op: platform.Op(s.ListFees)},
		{Method: http.MethodGet, Path: "/api/v1/wallet/transactions", OperationID: "listTransactions", Policy: platform.SignedIn, Tags: tag,
			Summary:     "The caller's ledger transactions",
			Description: "Each carries its signed `entries` (they sum to zero) and `general_balance_after`. `page` is an extension beside the interface's `limit`.",
			Message:     "Transactions", Op: platform.Op(s.ListTransactions)},
		{Method: http.MethodGet, Path: "/api/v1/wallet/transactions/{id}", OperationID: "getTransaction", Policy: platform.SignedIn, Tags: tag,
			Summary: "One of the caller's transactions", Message: "Transaction", Op: platform.Op(s.GetTransaction)},
	}
}

// scanUser decodes every record of the user in bucket.
func scanUser[T any](tx *store.Tx, bucket, userID string) ([]T, error) {
	var out []T
	err := tx.Scan(bucket, store.ScanOptions{Prefix: userID + "/"}, func(_ string, raw []byte) error {
		var v T
		if err := json.Unmarshal(raw, &v); err != nil {
			return err
		}
		out = append(out, v)
		return nil
	})
	return out, err
}

// listUser reads the caller's records of bucket.
func listUser[T any](ctx context.Context, s *Service, bucket, op string) ([]T, string, error) {
	p, err := platform.Caller(ctx)
	if err != nil {
		return nil, "", err
	}
	var out []T
	err = s.db.ViewContext(ctx, func(tx *store.Tx) error {
		var err error
		out, err = scanUser[T](tx, bucket, p.UserID)
		return err
	})
	if err != nil {
		return nil, "", platform.Internal(op, err)
	}
	return out, p.UserID, nil
}

// sortBy orders items by key (ties by id) ascending or descending.
func sortBy[T any](items []T, desc bool, less func(a, b T) int) {
	sort.SliceStable(items, func(i, j int) bool {
		c := less(items[i], items[j])
		if desc {
			return c > 0
		}
		return c < 0
	})
}

func cmpAmount(a, b money.Amount) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func cmpTime(a, b time.Time) int { return a.Compare(b) }

// ListFees answers a page of the caller's AI fee records.
func (s *Service) ListFees(ctx context.Context, fq FeeQuery) (*FeeList, error) {
	q := listQuery(fq.PageQuery, fq.SortBy, "")
	fees, _, err := listUser[AIFee](ctx, s, bucketFees, "list AI fees")
	if err != nil {
		return nil, err
	}
	sortBy(fees, q.Desc, func(a, b AIFee) int {
		var c int
		switch q.SortBy {
		case "amount":
			c = cmpAmount(a.Amount, b.Amount)
		case "transaction_id":
			c = strings.Compare(a.TransactionID, b.TransactionID)
		default:
			c = cmpTime(a.CreatedAt, b.CreatedAt)
		}
		if c == 0 {
			c = strings.Compare(a.ID, b.ID)
		}
		return c
	})
	pg, lo, hi := paginate(len(fees), q.Page, q.Limit)
	return &FeeList{Fees: append([]AIFee{}, fees[lo:hi]...), Pagination: pg}, nil
}

// ListTransactions answers the caller's transactions.
func (s *Service) ListTransactions(ctx context.Context, tq TransactionQuery) (*TransactionList, error) {
	q := listQuery(tq.PageQuery, tq.SortBy, "")
	txns, _, err := listUser[Transaction](ctx, s, bucketTxns, "list transactions")
	if err != nil {
		return nil, err
	}
	sortBy(txns, q.Desc, func(a, b Transaction) int {
		var c int
		switch q.SortBy {
		case "id":
			c = strings.Compare(a.ID, b.ID)
		case "transaction_type":
			c = strings.Compare(a.TransactionType, b.TransactionType)
		case "status":
			c = strings.Compare(a.Status, b.Status)
		case "amount":
			c = cmpAmount(a.Amount, b.Amount)
		case "updated_at":
			c = cmpTime(a.UpdatedAt, b.UpdatedAt)
		default:
			c = cmpTime(a.CreatedAt, b.CreatedAt)
		}
		if c == 0 {
			c = strings.Compare(a.ID, b.ID)
		}
		return c
	})
	pg, lo, hi := paginate(len(txns), q.Page, q.Limit)
	return &TransactionList{Transactions: append([]Transaction{}, txns[lo:hi]...), Pagination: pg}, nil
}

// validID accepts ids this package makes (and nothing that could escape a
// key prefix).
func validID(field, id string) error {
	if id == "" || len(id) > 100 || strings.ContainsAny(id, "/\x00") {
		return platform.Invalid(field, "must be an id this API returned")
	}
	return nil
}

// getOne reads the caller's record id of bucket (404 naming kind when
// absent).
func getOne[T any](ctx context.Context, s *Service, bucket, kind, id string) (*T, error) {
	p, err := platform.Caller(ctx)
	if err != nil {
		return nil, err
	}
	if err := validID("id", id); err != nil {
		return nil, err
	}
	var v T
	var ok bool
	err = s.db.ViewContext(ctx, func(tx *store.Tx) error {
		var err error
		ok, err = tx.Get(bucket, userKey(p.UserID, id), &v)
		return err
	})
	if err != nil {
		return nil, platform.Internal("read the "+kind, err)
	}
	if !ok {
		return nil, platform.NotFound(kind, id)
	}
	return &v, nil
}

// GetTransaction answers one of the caller's transactions.
func (s *Service) GetTransaction(ctx context.Context, ref TransactionRef) (*Transaction, error) {
	return getOne[Transaction](ctx, s, bucketTxns, "transaction", ref.ID)
}
