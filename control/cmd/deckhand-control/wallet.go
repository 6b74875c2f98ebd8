package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"deckhand/control/server"
	"deckhand/control/wallet"

	"github.com/spf13/cobra"
)

func walletCmd(stdout io.Writer) *cobra.Command {
	w := &cobra.Command{Use: "wallet", Short: "Inspect the wallet's ledger"}
	data, dbURL := "./data", ""
	verify := &cobra.Command{
		Use:   "verify",
		Short: "Check every balance against the ledger; exit non-zero naming the accounts that disagree",
		Long: "Reads every wallet account, ledger transaction and AI fee record in one snapshot of the store (--data's control.db, " +
			"or --database-url) and checks that each transaction's entries sum to zero, that each user's general balance and AI limit " +
			"equal the sums of their ledger entries, that fee records equal fee entries, and that all money credited equals what " +
			"general balances, AI limits, fees and sales hold. A server on --data holds the file lock: stop it first (PostgreSQL needs no stop).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			db, err := server.OpenStore(data, dbURL)
			if err != nil {
				return err
			}
			defer db.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			r, err := wallet.Verify(ctx, db)
			if err != nil {
				return fmt.Errorf("read the ledger: %w", err)
			}
			fmt.Fprintf(stdout, "accounts %d, transactions %d, credited %s, general %s, ai_limit %s, fees %s (fee records %s), sales %s\n",
				r.Accounts, r.Transactions, (-r.Totals[wallet.AccExternal]).String(), r.Totals[wallet.AccGeneral], r.Totals[wallet.AccAILimit],
				r.Totals[wallet.AccFees], r.FeeRecords, r.Totals[wallet.AccSales])
			for _, p := range r.Problems {
				fmt.Fprintln(stdout, "MISMATCH", p)
			}
			if !r.OK() {
				return fmt.Errorf("wallet verify: %d problem(s) found", len(r.Problems))
			}
			fmt.Fprintln(stdout, "ok: every balance agrees with the ledger")
			return nil
		},
	}
	verify.Flags().StringVar(&data, "data", data, "data directory of the control plane (its control.db)")
	verify.Flags().StringVar(&dbURL, "database-url", dbURL, "postgres://...: verify the wallet kept in this database")
	w.AddCommand(verify)
	return w
}
