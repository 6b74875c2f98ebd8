package daemon

import (
	"net/http"

	"deckhand/platform"
)

// Routes is the daemon's route table.
func (s *Service) Routes() []platform.Route {
	tags := []string{"programs"}
	id := "/api/v1/daemon/programs/{id}"
	return []platform.Route{
		{Method: http.MethodGet, Path: "/api/v1/daemon/programs", OperationID: "listPrograms", Tags: tags,
			Summary: "List programs with their status", Op: platform.Op(s.List)},
		{Method: http.MethodGet, Path: id, OperationID: "getProgram", Tags: tags, Summary: "One program", Op: platform.Op(s.Get)},
		{Method: http.MethodPost, Path: "/api/v1/daemon/reload", OperationID: "reloadPrograms", Tags: tags, Summary: "Re-read the program files",
			Description: "As supervisorctl update: new files add programs (started when autostart), changed ones replace the " +
				"definition (a supervised program restarts with it), removed ones stop their program. The whole directory is " +
				"checked first: a file that does not load, an unknown dependency or a cycle answers 400 INVALID with details " +
				"\"<id>.json: <field>\" and nothing changes; skipped_files is cleared by a good reload.",
			Op: platform.ReadOp(s.Reload)},
		{Method: http.MethodPut, Path: id, OperationID: "putProgram", Tags: tags, Summary: "Create or replace a program",
			Description: "Writes <id>.json atomically. 201 when new (started when autostart, the default), 200 when replaced: a " +
				"supervised program is stopped and started again with the new definition. An invalid definition, an unknown " +
				"dependency or a dependency cycle answers 400 INVALID naming the field (depends_on: cycle: a → b → a) and nothing changes.",
			Status: http.StatusCreated, Statuses: []int{http.StatusOK}, Op: platform.Op(s.Put)},
		{Method: http.MethodDelete, Path: id, OperationID: "deleteProgram", Tags: tags, Summary: "Stop and delete a program",
			Description: "Stops the program (stop_signal, then SIGKILL after stop_timeout) and removes its file; answers its last view. " +
				"409 CONFLICT while other programs depend on it.",
			Op: platform.Op(s.Delete)},
		{Method: http.MethodPost, Path: id + "/enable", OperationID: "enableProgram", Tags: tags, Summary: "Start it with the service (autostart true)",
			Description: "As systemctl enable: sets autostart and writes the file; it does not start the program now.", Op: platform.Op(s.Enable)},
		{Method: http.MethodPost, Path: id + "/disable", OperationID: "disableProgram", Tags: tags, Summary: "Do not start it with the service (autostart false)",
			Description: "As systemctl disable: clears autostart; it does not stop the program.", Op: platform.Op(s.Disable)},
		{Method: http.MethodPost, Path: id + "/start", OperationID: "startProgram", Tags: tags, Summary: "Start a program",
			Description: "Starts the program (and the dependencies it needs) unless it is already supervised (starting, running, " +
				"backoff); a fatal or exited program starts afresh with its counters reset.",
			Op: platform.Op(s.Start)},
		{Method: http.MethodPost, Path: id + "/stop", OperationID: "stopProgram", Tags: tags, Summary: "Stop a program",
			Description: "Sends stop_signal to the process group and every descendant, waits stop_timeout, then SIGKILLs them all; " +
				"answers when it is stopped.", Op: platform.Op(s.Stop)},
		{Method: http.MethodPost, Path: id + "/restart", OperationID: "restartProgram", Tags: tags, Summary: "Stop, then start a program",
			Op: platform.Op(s.Restart)},
		{Method: http.MethodPost, Path: id + "/signal", OperationID: "signalProgram", Tags: tags, Summary: "Send a signal",
			Description: "Sends any signal to the running program's process group (or, with group false, its main process). " +
				"409 CONFLICT when it has no running process.",
			Op: platform.Op(s.Signal)},
	}
}
