// Command deckhand is the in-container agent and its client: `deckhand run`
// supervises every container service and the gateway, `deckhand service
// NAME` runs one service alone, `deckhand status` asks a running agent how
// its services are, and `deckhand version` prints the build; the client
// commands (login, tokens, wallet, events, ls, cp, logs, ...) come from
// package agent/cli. Every command prints through agent/cli/output (-o
// table|json|yaml). Every flag also reads its DECKHAND_<FLAG> environment
// variable; a flag given on the command line beats the variable.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"deckhand/agent"
	"deckhand/agent/access"
	"deckhand/agent/cli"
	"deckhand/agent/cli/output"
	"deckhand/platform"
	"deckhand/platform/config"
)

const groupAgent = "serve"

func main() {
	if err := root().Execute(); err != nil {
		var exit *cli.ExitError
		if errors.As(err, &exit) {
			if exit.Message != "" {
				fmt.Fprintln(os.Stderr, "deckhand:", exit.Message)
			}
			os.Exit(exit.Code)
		}
		fmt.Fprintln(os.Stderr, "deckhand:", err)
		os.Exit(1)
	}
}

func root() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "deckhand",
		Short: "deckhand in-container agent and client",
		Long: "deckhand is the in-container agent (run, service, status) and the client of the control plane and of\n" +
			"containers' agents.\n\nEvery flag can also be set with DECKHAND_<FLAG> (--port-base: DECKHAND_PORT_BASE);\n" +
			"a flag on the command line beats the variable. Every command takes -o table|json|yaml.",
		SilenceUsage:      true,
		SilenceErrors:     true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error { return config.ApplyEnv(cmd) },
	}
	output.AddFlag(cmd, cmd.PersistentFlags())
	cmd.AddGroup(append([]*cobra.Group{{ID: groupAgent, Title: "The agent:"}}, cli.Groups()...)...)
	for _, c := range []*cobra.Command{runCmd(), serviceCmd(), statusCmd(), networkCmd(), versionCmd()} {
		c.GroupID = groupAgent
		cmd.AddCommand(c)
	}
	cmd.AddCommand(tunnelCmd(), execCmd())
	cmd.AddCommand(cli.Commands()...)
	return cmd
}

// dataDefaultDoc is how the reference states defaultData.
const dataDefaultDoc = "`/var/lib/deckhand` as root, else `$XDG_DATA_HOME/deckhand` (`~/.local/share/deckhand`)"

// defaultData is /var/lib/deckhand as root, else $XDG_DATA_HOME/deckhand.
func defaultData() string {
	if os.Geteuid() == 0 {
		return "/var/lib/deckhand"
	}
	if x := os.Getenv("XDG_DATA_HOME"); x != "" {
		return filepath.Join(x, "deckhand")
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".local", "share", "deckhand")
	}
	return "deckhand-data"
}

func runCmd() *cobra.Command {
	var (
		cfg                          agent.Config
		services, isolate, tokenFile string
	)
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Supervise every enabled service on its own port, then the gateway",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			names, err := agent.Select(services)
			if err != nil {
				return err
			}
			if cfg.Isolate, err = agent.SelectIsolated(isolate, names); err != nil {
				return err
			}
			cfg.Services = names
			if tokenFile != "" {
				if cfg.Token != "" {
					return errors.New("--token and --token-file: give one")
				}
				if cfg.Token, err = access.ReadTokenFile(tokenFile); err != nil {
					return err
				}
				cfg.TokenFile = tokenFile
			}
			set := agentSettings(cfg.PortBase, agent.OwnPorts(cfg.PortBase, cfg.Listen, cfg.ControlURL), cfg.Bind)
			// The mcp service offers the tools of the services run here.
			set = append(set, [2]string{"mcp-services", strings.Join(names, ",")})
			if err := setUnlessGiven(cmd, cfg.Settings, set); err != nil {
				return err
			}
			if err := cfg.Settings.Validate(names); err != nil {
				return err
			}
			if agent.NeedsInit() {
				// PID 1 of a container: reap orphans as init, run the agent
				// as its child (flags were checked above, so mistakes show
				// once).
				os.Exit(agent.RunInit())
			}
			cfg.Logger = config.Logger(os.Stderr, cfg.LogLevel)
			cfg.Out = os.Stdout
			sup, err := agent.New(cfg)
			if err != nil {
				return err
			}
			ctx, stop := cli.Context(cmd)
			defer stop()
			return sup.Run(ctx)
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Data, "data", defaultData(), "all state: bbolt files, scrollback, journal")
	config.DocDefault(f, "data", dataDefaultDoc)
	f.StringVar(&cfg.Listen, "listen", "127.0.0.1:7700", "gateway address")
	f.StringVar(&cfg.Bind, "bind", "127.0.0.1", "host the services listen on")
	f.IntVar(&cfg.PortBase, "port-base", 7700, "service ports are base + their offset")
	f.StringVar(&services, "services", "all", "comma list of services to run (available: "+strings.Join(agent.Registered(), ",")+")")
	f.StringVar(&cfg.ControlURL, "control-url", "", "control plane to sync proxy permissions from (none: standalone)")
	f.StringVar(&cfg.ControlKey, "control-key", "", "pin the control plane's signing key: a public key in hex, or a file holding one or its key set "+
		"(GET /api/v1/meta/public-key); with it only key sets a pinned key signed are trusted, and keys kept from an unpinned start are dropped; "+
		"without it the first key set is taken from an https or loopback --control-url")
	f.BoolVar(&cfg.InsecureControlURL, "insecure-control-url", false, "allow a plain http --control-url that is not on loopback (anyone on the path could withhold updates)")
	f.StringVar(&cfg.ContainerID, "container-id", "", "this container's id")
	f.StringVar(&cfg.ProjectID, "project-id", "", "this container's project id")
	f.StringVar(&cfg.Token, "token", "", "the container's agent token (agt_...) for the control plane; prefer DECKHAND_TOKEN, flags show in ps")
	f.StringVar(&tokenFile, "token-file", "", "a file holding the container's agent token (the control plane's runtime writes one only root reads); "+
		"refused when other users may read it; read again when the control plane refuses the token (a warm-pool container's claim replaces it)")
	f.StringVar(&cfg.PermissionsFile, "permissions-file", "", "a local proxy permissions document, reloaded on change (when no control plane is used)")
	f.StringVar(&cfg.SSHD, "sshd", "", "an OpenSSH sshd the agent keeps running as root on 127.0.0.1:22 for ssh through the tunnel, with a host key of "+
		"its own made on the first start; only as root with --run-as (deckhand/base sets /usr/sbin/sshd; empty: none)")
	f.StringVar(&isolate, "isolate", "display", "comma list of services to run as child processes (none: all in-process)")
	f.StringVar(&cfg.LogLevel, "log-level", "info", "debug, info, warn or error")
	cfg.Settings = agent.DeclareSettings(f)
	return cmd
}

// agentSettings are what the services learn of the agent they run in:
// the tunnel service its port base and its own ports (all denied), the
// mcp service where the services its tools call listen (the port base and
// --bind). An isolated child gets them from its agent as flags.
func agentSettings(base int, own, bind string) [][2]string {
	return [][2]string{
		{"tunnel-port-base", strconv.Itoa(base)}, {"tunnel-agent-ports", own},
		{"mcp-port-base", strconv.Itoa(base)}, {"mcp-service-host", bind},
	}
}

// setUnlessGiven sets each setting (name, value) whose flag was not given.
func setUnlessGiven(cmd *cobra.Command, st *agent.Settings, settings [][2]string) error {
	for _, s := range settings {
		if f := cmd.Flags().Lookup(s[0]); f != nil && !f.Changed {
			if err := st.Set(s[0], s[1]); err != nil {
				return err
			}
		}
	}
	return nil
}

func serviceCmd() *cobra.Command {
	var (
		cfg      agent.OneConfig
		bind     string
		portBase int
	)
	cmd := &cobra.Command{
		Use:   "service NAME",
		Short: "Run one service alone (--listen is then that service's address)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg.Name = args[0]
			if _, err := agent.Select(cfg.Name); err != nil {
				return err
			}
			if cfg.Listen == "" {
				cfg.Listen = agent.DefaultServiceAddr(bind, portBase, cfg.Name)
			}
			if err := setUnlessGiven(cmd, cfg.Settings, agentSettings(portBase, agent.OwnPorts(portBase, "", ""), bind)); err != nil {
				return err
			}
			cfg.Logger = config.Logger(os.Stderr, cfg.LogLevel)
			ctx, stop := cli.Context(cmd)
			defer stop()
			return agent.ServeOne(ctx, cfg)
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Data, "data", defaultData(), "all state: bbolt files, scrollback, journal")
	config.DocDefault(f, "data", dataDefaultDoc)
	f.StringVar(&cfg.Listen, "listen", "", "this service's address (default --bind and --port-base + its offset)")
	f.StringVar(&bind, "bind", "127.0.0.1", "host the service listens on when --listen is not given")
	f.IntVar(&portBase, "port-base", 7700, "port base when --listen is not given")
	f.StringVar(&cfg.LogLevel, "log-level", "info", "debug, info, warn or error")
	cfg.Settings = agent.DeclareSettings(f)
	return cmd
}

func statusCmd() *cobra.Command {
	var (
		listen string
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Ask a running agent for every service: name, address, state, pid, uptime, health",
		Long: "Asks the agent at --listen for its status. Exits non-zero when a service is not running (a service\n" +
			"that is unavailable, such as the display without an X server, does not count).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if asJSON {
				_ = cmd.Flags().Set(output.FlagName, string(output.JSON))
			}
			st, raw, err := fetchStatus(listen)
			if err != nil {
				return err
			}
			if err := output.New(cmd).Print(json.RawMessage(raw), func(t *output.TableWriter) { printStatus(t, st) }); err != nil {
				return err
			}
			if down := notRunning(st); down > 0 {
				return fmt.Errorf("%d service(s) not running", down)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&listen, "listen", "127.0.0.1:7700", "the agent's gateway address")
	cmd.Flags().BoolVar(&asJSON, "json", false, "same as -o json")
	return cmd
}

func printStatus(t *output.TableWriter, st agent.Status) {
	t.Line("agent pid %d, version %s, up %s, gateway %s, data %s",
		st.Agent.PID, st.Agent.Version, dur(st.Agent.UptimeSeconds), st.Agent.Listen, st.Agent.Data)
	t.Row("NAME", "ADDRESS", "STATE", "MODE", "PID", "UPTIME", "RESTARTS", "HEALTH")
	for _, s := range st.Services {
		health := s.HealthError
		if s.Health != nil {
			health = s.Health.Status
			if s.Health.Detail != "" {
				health += " (" + s.Health.Detail + ")"
			}
		}
		pid := "-"
		if s.PID != 0 {
			pid = fmt.Sprint(s.PID)
		}
		t.Row(s.Name, s.Address, s.State, s.Mode, pid, dur(s.UptimeSeconds), s.Restarts, health)
	}
}

// notRunning counts services that are neither running nor reporting
// themselves unavailable.
func notRunning(st agent.Status) int {
	down := 0
	for _, s := range st.Services {
		if s.State != agent.StateRunning && s.State != agent.StateUnavailable {
			down++
		}
	}
	return down
}

func dur(sec float64) string {
	return (time.Duration(sec) * time.Second).Round(time.Second).String()
}

func versionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			v := map[string]string{"version": platform.Version, "built": platform.BuildTime}
			line := "deckhand " + platform.Version
			if platform.BuildTime != "" {
				line += " (built " + platform.BuildTime + ")"
			}
			return output.New(cmd).Line(v, "%s", line)
		},
	}
}
