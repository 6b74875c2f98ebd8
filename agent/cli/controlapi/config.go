package controlapi

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"deckhand/agent/cli/privfile"
)

// ConfigEnv names the variable that points at the config file.
const ConfigEnv = "DECKHAND_CONFIG"

// Credential kinds.
const (
	KindSession = "session" // a login's access and refresh tokens
	KindToken   = "token"   // an svc_ auth token
)

// Config is what `deckhand login` keeps: the control plane and the
// credential for it. The file holds secrets, so it is written 0600 in a
// 0700 directory and refused when others may read it.
type Config struct {
	ControlURL string      `json:"control_url,omitempty"`
	Credential *Credential `json:"credential,omitempty"`
}

// Credential is the bearer the client sends.
type Credential struct {
	Kind         string `json:"kind"`
	Token        string `json:"token"`
	RefreshToken string `json:"refresh_token,omitempty"`
	ExpiresAt    string `json:"expires_at,omitempty"`
	UserID       string `json:"user_id,omitempty"`
	Email        string `json:"email,omitempty"`
}

// ConfigPath is $DECKHAND_CONFIG, else $XDG_CONFIG_HOME/deckhand/config.json,
// else ~/.config/deckhand/config.json.
func ConfigPath() (string, error) {
	if p := os.Getenv(ConfigEnv); p != "" {
		return p, nil
	}
	dir := os.Getenv("XDG_CONFIG_HOME")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("config: set %s or XDG_CONFIG_HOME: %w", ConfigEnv, err)
		}
		dir = filepath.Join(home, ".config")
	}
	return filepath.Join(dir, "deckhand", "config.json"), nil
}

// KeyCachePath is where the control plane's key set is cached: beside the
// config file, config.json → config.keys.json.
func KeyCachePath(configPath string) string {
	return strings.TrimSuffix(configPath, ".json") + ".keys.json"
}

// StatePath is where unfinished transfers are remembered so a later run
// resumes them: config.json → config.transfers.json.
func StatePath(configPath string) string {
	return strings.TrimSuffix(configPath, ".json") + ".transfers.json"
}

// LoadConfig reads the config at path; a missing file is an empty config.
func LoadConfig(path string) (*Config, error) {
	var c Config
	if err := privfile.Read(path, &c); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return &c, nil
		}
		return nil, err
	}
	return &c, nil
}

// Save writes the config at path.
func (c *Config) Save(path string) error { return privfile.Write(path, c) }
