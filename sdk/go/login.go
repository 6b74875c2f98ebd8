package deckhand

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// ConfigEnv names the variable pointing at the CLI's login file.
const ConfigEnv = "DECKHAND_CONFIG"

// LoginFile is where `deckhand login` keeps the control plane's URL and
// the credential: $DECKHAND_CONFIG, else
// $XDG_CONFIG_HOME/deckhand/config.json, else
// ~/.config/deckhand/config.json.
func LoginFile() (string, error) {
	if p := os.Getenv(ConfigEnv); p != "" {
		return p, nil
	}
	dir := os.Getenv("XDG_CONFIG_HOME")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("deckhand: the login file: set %s or XDG_CONFIG_HOME: %w", ConfigEnv, err)
		}
		dir = filepath.Join(home, ".config")
	}
	return filepath.Join(dir, "deckhand", "config.json"), nil
}

// FromLogin builds a Client from the CLI's login file (LoginFile): the
// control plane it logged in to and its credential. o's Token, when set,
// wins over the file's.
func FromLogin(o Options) (*Client, error) {
	path, err := LoginFile()
	if err != nil {
		return nil, err
	}
	st, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("deckhand: no login at %s: run `deckhand login` first, or use New with a URL and a token", path)
		}
		return nil, err
	}
	if st.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("deckhand: %s is readable by others (mode %o): it holds a secret; chmod 600 it", path, st.Mode().Perm())
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var cfg struct {
		ControlURL string `json:"control_url"`
		Credential *struct {
			Token string `json:"token"`
		} `json:"credential"`
	}
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return nil, fmt.Errorf("deckhand: %s: not the login file's JSON: %w", path, err)
	}
	if cfg.ControlURL == "" {
		return nil, fmt.Errorf("deckhand: %s: control_url: missing; run `deckhand login`", path)
	}
	if o.Token == "" && cfg.Credential != nil {
		o.Token = cfg.Credential.Token
	}
	if o.Token == "" {
		return nil, fmt.Errorf("deckhand: %s: credential: missing; run `deckhand login`", path)
	}
	return New(cfg.ControlURL, o)
}
