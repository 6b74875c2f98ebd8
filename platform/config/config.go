// Package config owns how both binaries read their settings: cobra flags,
// each backed by a DECKHAND_<FLAG_IN_UPPER_SNAKE> environment variable that
// the flag beats, plus the shared logger setup.
package config

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// EnvName is the variable that backs a flag: --port-base → DECKHAND_PORT_BASE.
func EnvName(flag string) string {
	return "DECKHAND_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// ApplyEnv fills every flag of cmd that was not given on the command line
// from its environment variable. Call it from PersistentPreRunE.
func ApplyEnv(cmd *cobra.Command) error {
	if err := ApplyEnvFlags(cmd.Flags()); err != nil {
		return err
	}
	return ApplyEnvFlags(cmd.InheritedFlags())
}

// ApplyEnvFlags is ApplyEnv for a bare flag set (tests building a service's
// settings, binaries without cobra).
func ApplyEnvFlags(fs *pflag.FlagSet) error {
	var firstErr error
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Changed || firstErr != nil {
			return
		}
		if v, ok := os.LookupEnv(EnvName(f.Name)); ok {
			if err := f.Value.Set(v); err != nil {
				firstErr = fmt.Errorf("%s=%q: %w", EnvName(f.Name), v, err)
				return
			}
			f.Changed = true
		}
	})
	return firstErr
}

// Env is the environment that gives a child process the same values fs
// holds now: DECKHAND_<FLAG>=value for every flag of fs. The agent starts an
// isolated service with it so the child's settings are exactly the
// parent's (and, unlike arguments, they do not show in ps).
func Env(fs *pflag.FlagSet) []string {
	var env []string
	fs.VisitAll(func(f *pflag.Flag) { env = append(env, EnvName(f.Name)+"="+f.Value.String()) })
	return env
}

// Logger builds the process logger: JSON lines on w at the given level
// ("debug", "info", "warn", "error").
func Logger(w io.Writer, level string) *slog.Logger {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		l = slog.LevelInfo
	}
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: l}))
}
