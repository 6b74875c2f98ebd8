package agent

import (
	"errors"

	"github.com/spf13/pflag"

	"deckhand/display/api"
	"deckhand/platform"
	"deckhand/platform/config"
	"deckhand/platform/contract"
)

// Settings are every registered service's typed settings and the common
// ones, declared as flags of one command. `deckhand run` and `deckhand
// service NAME` declare the same set, so an isolated child accepts
// everything the agent does and gets it through Env.
type Settings struct {
	Common  contract.CommonSettings
	own     *pflag.FlagSet
	service map[string]contract.Settings
}

// DeclareSettings declares the common flags and every registered service's
// flags on fs and returns the settings they fill once fs is parsed. Two
// services claiming one flag name is a programming error (pflag panics on
// the redefinition as the binary starts).
func DeclareSettings(fs *pflag.FlagSet) *Settings {
	st := &Settings{own: pflag.NewFlagSet("services", pflag.ContinueOnError), service: map[string]contract.Settings{}}
	st.Common.Flags(st.own)
	for _, e := range registry {
		s := e.Settings()
		s.Flags(st.own)
		st.service[e.Name] = s
	}
	fs.AddFlagSet(st.own)
	return st
}

// DefaultSettings are the settings with every flag at its default (the
// DECKHAND_* variables are not read): for tests and embedders.
func DefaultSettings() *Settings {
	return DeclareSettings(pflag.NewFlagSet("defaults", pflag.ContinueOnError))
}

// Of is the named service's settings.
func (st *Settings) Of(name string) contract.Settings { return st.service[name] }

// Set sets one flag as the command line would (tests, embedders).
func (st *Settings) Set(flag, value string) error { return st.own.Set(flag, value) }

// Display is the X display the display service is given.
func (st *Settings) Display() string {
	if d, ok := st.service["display"].(*api.Settings); ok {
		return d.Display
	}
	return ""
}

// Validate checks the common settings (the request policy they make) and
// the settings of the services that will run.
func (st *Settings) Validate(names []string) error {
	var errs []error
	if err := st.Common.Validate(); err != nil {
		errs = append(errs, err)
	}
	for _, n := range names {
		if v, ok := st.service[n].(platform.Validator); ok {
			if err := v.Validate(); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// Env carries these settings to a child: DECKHAND_<FLAG>=value for each of
// them. A child reads them as it reads its own environment, so an isolated
// service sees exactly what an in-process one does.
func (st *Settings) Env() []string { return config.Env(st.own) }
