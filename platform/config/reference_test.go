package config_test

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"deckhand/platform/config"
)

func TestReferenceListsEveryVisibleFlagWithItsVariable(t *testing.T) {
	t.Parallel()
	root := &cobra.Command{Use: "tool", Short: "a tool"}
	root.PersistentFlags().StringP("output", "o", "table", "table | json")
	serve := &cobra.Command{Use: "serve", Short: "serve it", Run: func(*cobra.Command, []string) {}}
	serve.Flags().String("data", "/home/someone/.local/share/tool", "files under <data>/keys")
	config.DocDefault(serve.Flags(), "data", "`~/.local/share/tool`")
	serve.Flags().Int("port-base", 7700, "ports for *.example.com")
	serve.Flags().Bool("secret", false, "not for users")
	_ = serve.Flags().MarkHidden("secret")
	hidden := &cobra.Command{Use: "internal", Hidden: true, Run: func(*cobra.Command, []string) {}}
	root.AddCommand(serve, hidden)

	got := string(config.Reference(root))
	for _, want := range []string{
		"## tool\n",
		"| [`serve`](#tool-serve) | serve it |",
		"| `-o`, `--output` | `DECKHAND_OUTPUT` | string | `table` | table \\| json |",
		"## tool serve\n\nserve it\n\n```\ntool serve [flags]\n```",
		"| `--data` | `DECKHAND_DATA` | string | `~/.local/share/tool` | files under &lt;data&gt;/keys |",
		"| `--port-base` | `DECKHAND_PORT_BASE` | int | `7700` | ports for \\*.example.com |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("reference lacks %q:\n%s", want, got)
		}
	}
	for _, unwanted := range []string{"secret", "internal", "/home/someone"} {
		if strings.Contains(got, unwanted) {
			t.Errorf("reference shows %q:\n%s", unwanted, got)
		}
	}
}
