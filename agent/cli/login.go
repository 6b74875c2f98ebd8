package cli

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"

	deckhand "github.com/deckhand-dev/deckhand/sdk/go"
	"github.com/spf13/cobra"

	"deckhand/agent/cli/output"
	"deckhand/platform/config"
)

func loginCmd() *cobra.Command {
	var (
		email, token, code string
		passwordStdin      bool
	)
	cmd := &cobra.Command{
		Use:   "login [URL]",
		Short: "Log in to a control plane and keep the credential in the config file",
		Long: "Log in to the control plane at URL (default: the one in the config file).\n\n" +
			"With --email, the password is read from stdin (--password-stdin) or asked on the terminal; when the\n" +
			"account has two-factor authentication on, the code is asked on the terminal or taken from --totp-code\n" +
			"(a backup code works too). With --token svc_... (or DECKHAND_TOKEN) an auth token is kept instead, for\n" +
			"automation. The credential is kept 0600 in $" + ConfigEnv + ", else\n" +
			"$XDG_CONFIG_HOME/deckhand/config.json. Before anything is sent the control plane's key set is fetched\n" +
			"(and cached 24 h beside the config); every answer must carry its valid signature.",
		Example: "  deckhand login http://127.0.0.1:8080 --email me@example.com\n" +
			"  printf '%s\\n' \"$PASSWORD\" | deckhand login https://cp.example.com --email me@example.com --password-stdin --totp-code 123456\n" +
			"  deckhand login https://cp.example.com --token svc_...",
		Args:    cobra.MaximumNArgs(1),
		GroupID: GroupControl,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := loadControl(false)
			if err != nil {
				return err
			}
			url := c.cfg.ControlURL
			if len(args) == 1 {
				url = args[0]
			}
			if url == "" {
				return errors.New("give the control plane's URL: deckhand login URL")
			}
			// DECKHAND_TOKEN may hold an agent's token in a container; an
			// explicit --email means a password login.
			if email != "" && token != "" && token == os.Getenv(config.EnvName("token")) {
				token = ""
			}
			if email != "" && token != "" {
				return errors.New("give --email or --token, not both")
			}
			cfg := &Config{}
			client, err := newControl(url, c.path, cfg)
			if err != nil {
				return err
			}
			ctx, stop := Context(cmd)
			defer stop()
			if err := client.do(ctx, func() error { return client.client.FetchKeys(ctx) }); err != nil {
				return err
			}
			var user loginUser
			var userRaw json.RawMessage
			switch {
			case token != "":
				if !strings.HasPrefix(token, "svc_") {
					return errors.New("--token: must be an auth token (svc_...) made with `deckhand tokens create`")
				}
				client.client.SetToken(token)
				resp, err := client.send(ctx, deckhand.Request{Method: http.MethodGet, Path: "/api/v1/users/auth/me"})
				if err != nil {
					return err
				}
				cfg.Credential = &Credential{Kind: KindToken, Token: token}
				userRaw = resp.Data
			default:
				lr, err := passwordLogin(cmd, client, email, passwordStdin, code)
				if err != nil {
					return err
				}
				cfg.Credential = &Credential{Kind: KindSession, Token: lr.Token,
					RefreshToken: lr.RefreshToken, ExpiresAt: lr.ExpiresAt}
				userRaw = lr.User
			}
			if err := json.Unmarshal(userRaw, &user); err != nil || user.ID == "" {
				return fmt.Errorf("control plane %s: the answer names no user", client.baseURL())
			}
			cfg.ControlURL = client.baseURL()
			cfg.Credential.UserID, cfg.Credential.Email = user.ID, user.Email
			if err := cfg.Save(c.path); err != nil {
				return err
			}
			out := map[string]any{"control_url": cfg.ControlURL, "credential": cfg.Credential.Kind, "config": c.path, "user": userRaw}
			return output.New(cmd).Line(out, "Logged in to %s as %s (%s credential kept in %s).",
				cfg.ControlURL, nameOf(user), cfg.Credential.Kind, c.path)
		},
	}
	f := cmd.Flags()
	f.StringVar(&email, "email", "", "account email (or username); asked on the terminal when absent")
	f.BoolVar(&passwordStdin, "password-stdin", false, "read the password from stdin (one line)")
	f.StringVar(&code, "totp-code", "", "two-factor code (TOTP or backup code) when the account asks for one")
	f.StringVar(&token, "token", "", "log in with an auth token (svc_...) instead; prefer DECKHAND_TOKEN: flags show in ps")
	return cmd
}

// loginUser is the part of the profile the CLI keeps.
type loginUser struct {
	ID       string `json:"id"`
	Email    string `json:"email"`
	Username string `json:"username"`
}

func nameOf(u loginUser) string {
	if u.Email != "" {
		return u.Email
	}
	return u.Username
}

// passwordLogin runs login and, when the account asks for it, the
// two-factor step.
func passwordLogin(cmd *cobra.Command, client *control, email string, fromStdin bool, code string) (*loginResult, error) {
	closeTTY := func() {}
	defer func() { closeTTY() }()
	getTTY := sync.OnceValues(func() (*terminal, error) {
		t, closer, err := openTerminal()
		closeTTY = closer
		return t, err
	})
	if email == "" {
		t, err := getTTY()
		if err != nil {
			return nil, errors.New("--email: required when there is no terminal to ask on (or log in with --token)")
		}
		if email, err = t.line("Email: "); err != nil || email == "" {
			return nil, errors.New("no email given")
		}
	}
	var password string
	if fromStdin {
		var err error
		if password, err = readLine(cmd.InOrStdin()); err != nil {
			return nil, fmt.Errorf("--password-stdin: %w", err)
		}
	} else {
		t, err := getTTY()
		if err != nil {
			return nil, errors.New("no terminal to ask the password on: pipe it in with --password-stdin")
		}
		if password, err = t.secret("Password: "); err != nil {
			return nil, fmt.Errorf("reading the password: %w", err)
		}
	}
	if password == "" {
		return nil, errors.New("the password is empty")
	}
	body := map[string]string{"password": password}
	if strings.Contains(email, "@") {
		body["email"] = email
	} else {
		body["username"] = email
	}
	ctx, stop := Context(cmd)
	defer stop()
	resp, err := client.send(ctx, deckhand.Request{Method: http.MethodPost, Path: "/api/v1/users/auth/login", Body: body})
	if err != nil {
		return nil, err
	}
	var lr loginResult
	if err := json.Unmarshal(resp.Data, &lr); err != nil {
		return nil, fmt.Errorf("control plane %s: unreadable login answer: %w", client.baseURL(), err)
	}
	if !lr.Requires2FA {
		if lr.Token == "" {
			return nil, fmt.Errorf("control plane %s: the login answer holds no token", client.baseURL())
		}
		return &lr, nil
	}
	if code == "" {
		t, err := getTTY()
		if err != nil {
			return nil, errors.New("the account has two-factor authentication on: give --totp-code (no terminal to ask on)")
		}
		if code, err = t.line("Two-factor code: "); err != nil || code == "" {
			return nil, errors.New("no two-factor code given")
		}
	}
	resp, err = client.send(ctx, deckhand.Request{Method: http.MethodPost, Path: "/api/v1/users/auth/2fa/verify",
		Body: map[string]string{"temp_token": lr.TempToken, "code": strings.TrimSpace(code)}})
	if err != nil {
		return nil, err
	}
	lr = loginResult{}
	if err := json.Unmarshal(resp.Data, &lr); err != nil || lr.Token == "" {
		return nil, fmt.Errorf("control plane %s: the two-factor answer holds no token", client.baseURL())
	}
	return &lr, nil
}

// readLine reads one line (without its newline) from r, as docker login
// --password-stdin does.
func readLine(r io.Reader) (string, error) {
	s, err := bufio.NewReader(r).ReadString('\n')
	if err != nil && err != io.EOF {
		return "", err
	}
	return strings.TrimRight(s, "\r\n"), nil
}

func logoutCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "logout",
		Short:   "End the session and forget the credential",
		Long:    "Ends the session on the control plane and removes the credential from the config file. An auth token (login --token) is only forgotten here: revoke it with `deckhand tokens revoke`.",
		Args:    cobra.NoArgs,
		GroupID: GroupControl,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := loadControl(true)
			if err != nil {
				return err
			}
			kind := c.cfg.Credential.Kind
			ended := false
			if kind == KindSession {
				_, err := c.call(cmd, deckhand.Request{Method: http.MethodPost, Path: "/api/v1/users/auth/logout"})
				var apiErr *deckhand.Error
				switch {
				case err == nil:
					ended = true
				case errors.As(err, &apiErr) && apiErr.Status == http.StatusUnauthorized:
					// already over
				default:
					return err
				}
			}
			c.cfg.Credential = nil
			if err := c.cfg.Save(c.path); err != nil {
				return err
			}
			out := map[string]any{"control_url": c.cfg.ControlURL, "credential": kind, "session_ended": ended}
			return output.New(cmd).Line(out, "Logged out of %s.", c.cfg.ControlURL)
		},
	}
}

func whoamiCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "whoami",
		Short:   "Show the logged-in user",
		Args:    cobra.NoArgs,
		GroupID: GroupControl,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := loadControl(true)
			if err != nil {
				return err
			}
			resp, err := c.call(cmd, deckhand.Request{Method: http.MethodGet, Path: "/api/v1/users/auth/me"})
			if err != nil {
				return err
			}
			return printData(cmd, resp.Data, func(t *output.TableWriter, d any) {
				t.Object(d, output.Cols("ID=id", "EMAIL=email", "USERNAME=username", "ROLE=role", "TWO-FACTOR=two_factor_enabled"))
				t.Row("CONTROL PLANE", c.cfg.ControlURL)
				t.Row("CREDENTIAL", c.cfg.Credential.Kind)
			})
		},
	}
}
