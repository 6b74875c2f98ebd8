package wallet

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	"deckhand/control/money"
	"deckhand/platform/store"
)

// Report is what Verify found: the ledger's totals and every account
// whose stored balance differs from the sum of its ledger entries.
type Report struct {
	Accounts     int
	Transactions int
	// Totals per ledger account over every user (external is negative:
	// the money that came in).
	Totals map[string]money.Amount
	// FeeRecords is the sum of the AI fee records.
	FeeRecords money.Amount
	Problems   []string
}

// OK reports whether the ledger and the balances agree.
func (r *Report) OK() bool { return len(r.Problems) == 0 }

// Verify reads every account, transaction and fee record in one snapshot
// and checks: each transaction's entries sum to zero; each user's general
// balance and AI limit equal the sums of their ledger entries; each user's
// fee records equal their fee entries; and all money that came in equals
// what the general balances, AI limits, fees and sales hold.
func Verify(ctx context.Context, db *store.DB) (*Report, error) {
	r := &Report{Totals: map[string]money.Amount{}}
	err := db.ViewContext(ctx, func(tx *store.Tx) error {
		derived := map[string]map[string]money.Amount{} // user → ledger account → sum
		sum := func(user string) map[string]money.Amount {
			m := derived[user]
			if m == nil {
				m = map[string]money.Amount{}
				derived[user] = m
			}
			return m
		}
		if err := tx.ForEach(bucketTxns, func(k string, raw []byte) error {
			var t Transaction
			if err := json.Unmarshal(raw, &t); err != nil {
				r.Problems = append(r.Problems, fmt.Sprintf("transaction %s: unreadable: %v", k, err))
				return nil
			}
			r.Transactions++
			var zero money.Amount
			m := sum(t.UserID)
			for _, e := range t.Entries {
				zero += e.Amount
				m[e.Account] += e.Amount
				r.Totals[e.Account] += e.Amount
			}
			if zero != 0 {
				r.Problems = append(r.Problems, fmt.Sprintf("transaction %s of user %s: entries sum to %s, not 0", t.ID, t.UserID, zero))
			}
			return nil
		}); err != nil {
			return err
		}
		fees := map[string]money.Amount{}
		if err := tx.ForEach(bucketFees, func(k string, raw []byte) error {
			var f AIFee
			if err := json.Unmarshal(raw, &f); err != nil {
				r.Problems = append(r.Problems, fmt.Sprintf("fee %s: unreadable: %v", k, err))
				return nil
			}
			fees[f.UserID] += f.Amount
			r.FeeRecords += f.Amount
			return nil
		}); err != nil {
			return err
		}
		seen := map[string]bool{}
		if err := tx.ForEach(bucketAccounts, func(k string, raw []byte) error {
			var a account
			if err := json.Unmarshal(raw, &a); err != nil {
				r.Problems = append(r.Problems, fmt.Sprintf("account %s: unreadable: %v", k, err))
				return nil
			}
			r.Accounts++
			seen[a.UserID] = true
			m := derived[a.UserID]
			if a.General != m[AccGeneral] {
				r.Problems = append(r.Problems, fmt.Sprintf("account %s (user %s): general_balance %s, ledger says %s", a.ID, a.UserID, a.General, m[AccGeneral]))
			}
			if a.AILimit != m[AccAILimit] {
				r.Problems = append(r.Problems, fmt.Sprintf("account %s (user %s): ai_limit %s, ledger says %s", a.ID, a.UserID, a.AILimit, m[AccAILimit]))
			}
			return nil
		}); err != nil {
			return err
		}
		users := make([]string, 0, len(derived))
		for u := range derived {
			users = append(users, u)
		}
		sort.Strings(users)
		for _, u := range users {
			m := derived[u]
			if !seen[u] && (m[AccGeneral] != 0 || m[AccAILimit] != 0) {
				r.Problems = append(r.Problems, fmt.Sprintf("account %s (user %s): missing, ledger says general %s, ai_limit %s", accountID(u), u, m[AccGeneral], m[AccAILimit]))
			}
			if fees[u] != m[AccFees] {
				r.Problems = append(r.Problems, fmt.Sprintf("account %s (user %s): AI fee records sum to %s, ledger fees %s", accountID(u), u, fees[u], m[AccFees]))
			}
		}
		in := -r.Totals[AccExternal]
		held := r.Totals[AccGeneral] + r.Totals[AccAILimit] + r.Totals[AccFees] + r.Totals[AccSales]
		if in != held {
			r.Problems = append(r.Problems, fmt.Sprintf("ledger: credits total %s but balances, AI limits, fees and sales hold %s", in, held))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return r, nil
}
