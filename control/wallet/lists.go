package wallet

import (
	"cmp"
	"context"
	"net/http"
	"strings"
	"time"

	"deckhand/control/domain"
	"deckhand/control/money"
	"deckhand/platform"
	"deckhand/platform/fault"
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

// listQuery fills a list's defaults, also for in-process callers that
// never went through the binder (newest first by created_at, page 1 of 20).
func listQuery(p domain.PageQuery, sortBy, filter string) ListQuery {
	lq := ListQuery{Page: p.Page, Limit: p.Limit, SortBy: cmp.Or(sortBy, "created_at"), Desc: p.Desc(), Filter: filter}
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

// pageOf answers a page of the caller's records of table: those of the
// user, filtered, sorted by sortBy (ties by key), the page'th of limit.
func pageOf[T any](ctx context.Context, s *Service, table *store.Table, q ListQuery, sortBy string, filters []store.Filter, op string) ([]T, Pagination, error) {
	p, err := platform.Caller(ctx)
	if err != nil {
		return nil, Pagination{}, err
	}
	if q.Page < 1 || q.Limit < 1 {
		return nil, Pagination{}, fault.Invalid("page", "page and limit must be at least 1")
	}
	var pg store.Page[T]
	err = s.db.ViewContext(ctx, func(tx *store.Tx) error {
		var err error
		pg, err = store.PageOf[T](tx, table, store.Query{
			Filters: append([]store.Filter{store.Where("user_id", store.Eq, p.UserID)}, filters...),
			Sort:    []string{sortBy}, Desc: q.Desc, Offset: (q.Page - 1) * q.Limit, Limit: q.Limit})
		return err
	})
	if err != nil {
		if len(filters) > 0 {
			err = filterError(err) // the conditions came from the filter parameter
		}
		return nil, Pagination{}, fault.Wrap(op, err)
	}
	return pg.Items, domain.Paginate(pg.Total, q.Page, q.Limit), nil
}

// ListFees answers a page of the caller's AI fee records.
func (s *Service) ListFees(ctx context.Context, fq FeeQuery) (*FeeList, error) {
	q := listQuery(fq.PageQuery, fq.SortBy, "")
	fees, pg, err := pageOf[AIFee](ctx, s, feeTable, q, q.SortBy, nil, "list AI fees")
	if err != nil {
		return nil, err
	}
	return &FeeList{Fees: fees, Pagination: pg}, nil
}

// ListTransactions answers the caller's transactions.
func (s *Service) ListTransactions(ctx context.Context, tq TransactionQuery) (*TransactionList, error) {
	q := listQuery(tq.PageQuery, tq.SortBy, "")
	txns, pg, err := pageOf[Transaction](ctx, s, txnTable, q, q.SortBy, nil, "list transactions")
	if err != nil {
		return nil, err
	}
	return &TransactionList{Transactions: txns, Pagination: pg}, nil
}

// validID accepts ids this package makes (and nothing that could escape a
// key prefix).
func validID(field, id string) error {
	if id == "" || len(id) > 100 || strings.ContainsAny(id, "/\x00") {
		return fault.Invalid(field, "must be an id this API returned")
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
		return nil, fault.Internal("read the "+kind, err)
	}
	if !ok {
		return nil, fault.NotFound(kind, id)
	}
	return &v, nil
}

// GetTransaction answers one of the caller's transactions.
func (s *Service) GetTransaction(ctx context.Context, ref TransactionRef) (*Transaction, error) {
	return getOne[Transaction](ctx, s, bucketTxns, "transaction", ref.ID)
}
