package config_test

import (
	"strings"
	"testing"
	"time"

	"deckhand/platform/config"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func TestFlagBeatsEnvBeatsDefault(t *testing.T) {
	cases := []struct {
		name string
		args []string
		env  string
		want string
	}{
		{"default", nil, "", "127.0.0.1:7700"},
		{"env", nil, "127.0.0.1:9000", "127.0.0.1:9000"},
		{"flag beats env", []string{"--listen", "127.0.0.1:9100"}, "127.0.0.1:9000", "127.0.0.1:9100"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.env != "" {
				t.Setenv("DECKHAND_LISTEN", tc.env)
			}
			var got string
			cmd := &cobra.Command{Use: "x", RunE: func(*cobra.Command, []string) error { return nil },
				PersistentPreRunE: func(c *cobra.Command, _ []string) error { return config.ApplyEnv(c) }}
			cmd.Flags().StringVar(&got, "listen", "127.0.0.1:7700", "")
			cmd.SetArgs(tc.args)
			if err := cmd.Execute(); err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("got %q want %q", got, tc.want)
			}
		})
	}
}

func TestBadEnvValueIsAnError(t *testing.T) {
	t.Setenv("DECKHAND_PORT_BASE", "seven")
	var n int
	cmd := &cobra.Command{Use: "x", RunE: func(*cobra.Command, []string) error { return nil },
		PersistentPreRunE: func(c *cobra.Command, _ []string) error { return config.ApplyEnv(c) }}
	cmd.Flags().IntVar(&n, "port-base", 7700, "")
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	if err := cmd.Execute(); err == nil {
		t.Fatal("want error for DECKHAND_PORT_BASE=seven")
	}
	if config.EnvName("port-base") != "DECKHAND_PORT_BASE" {
		t.Fatal(config.EnvName("port-base"))
	}
}

// Env carries a flag set's values to a child: applied to a fresh set of the
// same flags through the environment, every kind comes back unchanged.
func TestEnvRoundTrips(t *testing.T) {
	declare := func() (*pflag.FlagSet, *string, *bool, *int, *time.Duration) {
		fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
		return fs, fs.String("files-root", "/", ""), fs.Bool("cron-runner", true, ""), fs.Int("terminal-max-sessions", 1000, ""),
			fs.Duration("terminal-idle-timeout", time.Minute, "")
	}
	parent, _, _, _, _ := declare()
	if err := parent.Parse([]string{"--files-root", "/srv/a b,c", "--cron-runner=false", "--terminal-max-sessions", "7", "--terminal-idle-timeout", "90m"}); err != nil {
		t.Fatal(err)
	}
	for _, kv := range config.Env(parent) {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	child, root, runner, max, idle := declare()
	if err := config.ApplyEnvFlags(child); err != nil {
		t.Fatal(err)
	}
	if *root != "/srv/a b,c" || *runner || *max != 7 || *idle != 90*time.Minute {
		t.Fatalf("child got %q %v %d %v", *root, *runner, *max, *idle)
	}
}
