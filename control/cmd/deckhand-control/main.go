// Command deckhand-control is the control plane: `serve` runs the HTTP API,
// `keys rotate` adds a new active signing key, `migrate` applies the
// PostgreSQL migrations without serving, `wallet verify` checks every
// balance against the ledger, `version` prints the version.
// Every flag also reads DECKHAND_<FLAG> from the environment; a flag given
// on the command line wins.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"deckhand/control/server"
	"deckhand/platform"
	"deckhand/platform/config"
	"deckhand/platform/secrets"
	"deckhand/platform/signing"

	"github.com/spf13/cobra"
)

func main() {
	if err := newRoot(os.Stdout, os.Stderr).Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "deckhand-control:", err)
		os.Exit(1)
	}
}

func newRoot(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "deckhand-control",
		Short:         "deckhand control plane",
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			return config.ApplyEnv(cmd)
		},
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(serveCmd(stdout, stderr), keysCmd(stdout), migrateCmd(stdout), versionCmd(stdout), walletCmd(stdout))
	return root
}

func serveCmd(stdout, stderr io.Writer) *cobra.Command {
	cfg := server.DefaultConfig()
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the control-plane HTTP API",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg.Logger = config.Logger(stderr, cfg.LogLevel)
			cfg.Stdout = stdout
			srv, err := server.New(cfg)
			if err != nil {
				return err
			}
			defer srv.Close()
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			// SIGHUP picks up a `keys rotate` run next to the live server.
			hup := make(chan os.Signal, 1)
			signal.Notify(hup, syscall.SIGHUP)
			defer signal.Stop(hup)
			go func() {
				for range hup {
					if err := srv.ReloadKeys(); err != nil {
						cfg.Logger.Error("signing keys reload failed; keeping the loaded set", "err", err)
					}
				}
			}()
			return srv.Run(ctx)
		},
	}
	cfg.Bind(cmd.Flags())
	return cmd
}

func keysCmd(stdout io.Writer) *cobra.Command {
	keys := &cobra.Command{Use: "keys", Short: "Manage the response-signing keys"}
	data, keyFile, dbURL := "./data", "", ""
	rotate := &cobra.Command{
		Use:   "rotate",
		Short: "Add a new ED25519 signing key and make it active (old keys stay published)",
		Long: "Adds a new ED25519 key, sealed under the master key, and makes it active: under <data>/keys, or in the " +
			"database with --database-url. Old keys stay in the published set, so signatures they made keep verifying. " +
			"Servers on a database pick the new key up within seconds (a notification, and a reload every 2 s); " +
			"a server on --data picks it up on restart or on SIGHUP. Prints the new key id.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dbURL != "" {
				return rotateInDB(stdout, data, keyFile, dbURL)
			}
			dir := server.KeysDir(data)
			_, statErr := os.Stat(dir)
			cfg := server.Config{Data: data, MasterKeyFile: keyFile}
			key, _, err := secrets.LoadOrCreate(cfg.MasterKeyPath())
			if err != nil {
				return fmt.Errorf("--master-key-file: %w", err)
			}
			sealer, err := secrets.New(key)
			if err != nil {
				return err
			}
			ks, err := signing.Open(dir, sealer)
			if err != nil {
				return err
			}
			// Open makes a first key in an empty directory; rotating right
			// after would leave an unused key, so the first key is the answer.
			if errors.Is(statErr, os.ErrNotExist) {
				fmt.Fprintln(stdout, ks.Active().ID)
				return nil
			}
			k, err := ks.Rotate()
			if err != nil {
				return err
			}
			fmt.Fprintln(stdout, k.ID)
			return nil
		},
	}
	rotate.Flags().StringVar(&data, "data", data, "data directory of the control plane")
	rotate.Flags().StringVar(&keyFile, "master-key-file", keyFile, "the master key the signing keys are sealed under (default <data>/master.key)")
	rotate.Flags().StringVar(&dbURL, "database-url", dbURL, "postgres://...: rotate the keys kept in this database (every replica uses the new key within seconds)")
	keys.AddCommand(rotate)
	return keys
}

// rotateInDB rotates the keys kept in the database. The master key must
// already exist (the servers created it): a new one would seal a key no
// replica can open, so it is never created here, and it must open the
// database's master-key check.
func rotateInDB(stdout io.Writer, data, keyFile, dbURL string) error {
	cfg := server.Config{Data: data, MasterKeyFile: keyFile}
	key, err := secrets.ReadKeyFile(cfg.MasterKeyPath())
	if err != nil {
		return fmt.Errorf("--master-key-file: %w (with --database-url pass the key file the servers use)", err)
	}
	sealer, err := secrets.New(key)
	if err != nil {
		return fmt.Errorf("--master-key-file %s: %w", cfg.MasterKeyPath(), err)
	}
	db, err := server.OpenStore(data, dbURL)
	if err != nil {
		return err
	}
	defer db.Close()
	if err := server.CheckMasterKey(db, sealer); err != nil {
		return fmt.Errorf("--master-key-file %s: %w", cfg.MasterKeyPath(), err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ks, err := signing.OpenDB(ctx, db, sealer)
	if err != nil {
		return err
	}
	k, err := ks.Rotate()
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, k.ID)
	return nil
}

func migrateCmd(stdout io.Writer) *cobra.Command {
	dbURL := ""
	from := fromBbolt{out: stdout}
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Apply the store's migrations (PostgreSQL) and exit",
		Long: "Applies the pending PostgreSQL migrations of --database-url (DECKHAND_DATABASE_URL) under an advisory lock, " +
			"so it is safe beside starting replicas, prints each one applied (or that none was pending) and exits. " +
			"`serve --database-url` applies them too; this command lets a deployment migrate before it rolls out.\n\n" +
			"With --from-bbolt PATH (a stopped control plane's --data dir or its control.db) it then copies that embedded store " +
			"and its signing keys into the database and checks every bucket's key count and sequence; an empty target is " +
			"required (a target already holding the same copy is left as it is), --force deletes the target's contents first.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if from.path != "" {
				ctx, cancel := context.WithTimeout(context.Background(), migrateTimeout)
				defer cancel()
				from.dbURL = dbURL
				return from.run(ctx)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			applied, err := server.Migrate(ctx, dbURL)
			for _, name := range applied {
				fmt.Fprintln(stdout, "applied", name)
			}
			if err != nil {
				return err
			}
			if len(applied) == 0 {
				fmt.Fprintln(stdout, "no pending migrations")
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&dbURL, "database-url", dbURL, "postgres://user:pass@host:port/db to migrate")
	cmd.Flags().StringVar(&from.path, "from-bbolt", "", "copy this embedded store (a --data dir or its control.db) into --database-url")
	cmd.Flags().StringVar(&from.keyFile, "master-key-file", "", "with --from-bbolt: the master key the store was sealed with (default <data>/master.key)")
	cmd.Flags().BoolVar(&from.force, "force", false, "with --from-bbolt: delete everything in a non-empty target first")
	return cmd
}

func versionCmd(stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		Run: func(*cobra.Command, []string) {
			if platform.BuildTime != "" {
				fmt.Fprintf(stdout, "deckhand-control %s (built %s)\n", platform.Version, platform.BuildTime)
				return
			}
			fmt.Fprintf(stdout, "deckhand-control %s\n", platform.Version)
		},
	}
}
