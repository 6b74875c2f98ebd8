package cli

import "github.com/spf13/cobra"

// containerStateCmds are the commands that keep or bring back a
// container's state: pause and resume, snapshots, forks and workspaces.
func containerStateCmds() []*cobra.Command {
	return []*cobra.Command{
		containerActionCmd("pause", "Pause a running container: its processes freeze, memory and output offsets stay"),
		containerActionCmd("resume", "Resume a paused container (waits until its agent answers again)"),
	}
}
