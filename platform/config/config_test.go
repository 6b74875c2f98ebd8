package config_test

import (
	"testing"

	"deckhand/platform/config"

	"github.com/spf13/cobra"
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
