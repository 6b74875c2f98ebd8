package daemon

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/gofiber/fiber/v3"

	"deckhand/platform"
	"deckhand/platform/proc"
)

// View is a program's definition and live status.
type View struct {
	Program
	Status Status `json:"status" required:"true"`
}

// List is the answer of GET /api/v1/daemon/programs.
type List struct {
	Programs     []View   `json:"programs" required:"true"`
	SkippedFiles []string `json:"skipped_files" required:"true" doc:"program files not loaded at start, each \"path: reason\""`
}

// SignalRequest is the body of POST .../{id}/signal.
type SignalRequest struct {
	Signal string `json:"signal" required:"true" doc:"a name with or without SIG (HUP, SIGUSR1) or a number"`
	Group  *bool  `json:"group,omitempty" doc:"send to the whole process group (default true) or only the main process"`
}

// Validate checks the signal.
func (r *SignalRequest) Validate() error {
	if r.Signal == "" {
		return platform.Invalid("signal", "required")
	}
	if _, err := proc.ParseSignal(r.Signal); err != nil {
		return platform.Invalid("signal", "%s", err.Error())
	}
	return nil
}

// Routes is the daemon's route table.
func (s *Service) Routes() []platform.Route {
	tags := []string{"programs"}
	id := "/api/v1/daemon/programs/{id}"
	wait := []platform.Param{
		{Name: "wait", Type: "boolean", Default: "false", Description: "answer once the program is running, exited or fatal (at most timeout seconds) instead of at once"},
		{Name: "timeout", Type: "number", Range: &platform.Range{Min: 0, Max: 600, ExclusiveMin: true}, Default: "30", Description: "seconds wait=true waits at most"},
	}
	return []platform.Route{
		{Method: http.MethodGet, Path: "/api/v1/daemon/programs", Tags: tags, Summary: "List programs with their status",
			Query:    []platform.Param{{Name: "state", Enum: []string{StateStopped, StateStarting, StateRunning, StateBackoff, StateExited, StateFatal}, Description: "only programs in this state"}},
			Response: List{}, Handler: s.handleList},
		{Method: http.MethodGet, Path: id, Tags: tags, Summary: "One program", Response: View{}, Handler: s.handleGet},
		{Method: http.MethodPost, Path: "/api/v1/daemon/reload", Tags: tags, Summary: "Re-read the program files",
			Description: "As supervisorctl update: new files add programs (started when autostart), changed ones replace the " +
				"definition (a supervised program restarts with it), removed ones stop their program. The whole directory is " +
				"checked first: a file that does not load, an unknown dependency or a cycle answers 400 INVALID with details " +
				"\"<id>.json: <field>\" and nothing changes; skipped_files is cleared by a good reload.",
			Response: Reloaded{}, Handler: s.handleReload},
		{Method: http.MethodPut, Path: id, Tags: tags, Summary: "Create or replace a program",
			Description: "Writes <id>.json atomically. 201 when new (started when autostart, the default), 200 when replaced: a " +
				"supervised program is stopped and started again with the new definition. An invalid definition, an unknown " +
				"dependency or a dependency cycle answers 400 INVALID naming the field (depends_on: cycle: a → b → a) and nothing changes.",
			Body: Program{}, Response: View{}, Status: http.StatusCreated, Handler: s.handlePut},
		{Method: http.MethodDelete, Path: id, Tags: tags, Summary: "Stop and delete a program",
			Description: "Stops the program (stop_signal, then SIGKILL after stop_timeout) and removes its file; answers its last view. " +
				"409 CONFLICT while other programs depend on it.",
			Response: View{}, Handler: s.handleDelete},
		{Method: http.MethodPost, Path: id + "/enable", Tags: tags, Summary: "Start it with the service (autostart true)",
			Description: "As systemctl enable: sets autostart and writes the file; it does not start the program now.", Response: View{}, Handler: s.handleEnable},
		{Method: http.MethodPost, Path: id + "/disable", Tags: tags, Summary: "Do not start it with the service (autostart false)",
			Description: "As systemctl disable: clears autostart; it does not stop the program.", Response: View{}, Handler: s.handleDisable},
		{Method: http.MethodPost, Path: id + "/start", Tags: tags, Summary: "Start a program",
			Description: "Starts the program (and the dependencies it needs) unless it is already supervised (starting, running, " +
				"backoff); a fatal or exited program starts afresh with its counters reset.",
			Query: wait, Response: View{}, Handler: s.handleStart},
		{Method: http.MethodPost, Path: id + "/stop", Tags: tags, Summary: "Stop a program",
			Description: "Sends stop_signal to the process group and every descendant, waits stop_timeout, then SIGKILLs them all; " +
				"answers when it is stopped.", Response: View{}, Handler: s.handleStop},
		{Method: http.MethodPost, Path: id + "/restart", Tags: tags, Summary: "Stop, then start a program",
			Query: wait, Response: View{}, Handler: s.handleRestart},
		{Method: http.MethodPost, Path: id + "/signal", Tags: tags, Summary: "Send a signal",
			Description: "Sends any signal to the running program's process group (or, with group false, its main process). " +
				"409 CONFLICT when it has no running process.",
			Body: SignalRequest{}, Response: View{}, Handler: s.handleSignal},
	}
}

func (s *Service) handleList(c fiber.Ctx) error {
	l := s.List(platform.QueryOf(c).String("state"))
	return platform.JSON(c, http.StatusOK, l)
}

func (s *Service) handleReload(c fiber.Ctx) error {
	r, err := s.Reload()
	if err != nil {
		return err
	}
	return platform.JSON(c, http.StatusOK, r)
}

func (s *Service) handleGet(c fiber.Ctx) error {
	v, err := s.Get(idParam(c))
	return answer(c, http.StatusOK, v, err)
}

func (s *Service) handlePut(c fiber.Ctx) error {
	var def Program
	if err := platform.DecodeBytes(c.Body(), (*programFile)(&def)); err != nil {
		return err
	}
	v, created, err := s.Put(c.Context(), idParam(c), def)
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	return answer(c, status, v, err)
}

func (s *Service) handleDelete(c fiber.Ctx) error {
	v, err := s.Delete(idParam(c))
	return answer(c, http.StatusOK, v, err)
}

func (s *Service) handleEnable(c fiber.Ctx) error {
	v, err := s.SetAutostart(idParam(c), true)
	return answer(c, http.StatusOK, v, err)
}

func (s *Service) handleDisable(c fiber.Ctx) error {
	v, err := s.SetAutostart(idParam(c), false)
	return answer(c, http.StatusOK, v, err)
}

func (s *Service) handleStart(c fiber.Ctx) error {
	q := platform.QueryOf(c)
	v, err := s.Start(c.Context(), idParam(c), q.Bool("wait"), time.Duration(q.Float("timeout")*float64(time.Second)))
	return answer(c, http.StatusOK, v, err)
}

func (s *Service) handleStop(c fiber.Ctx) error {
	v, err := s.Stop(idParam(c))
	return answer(c, http.StatusOK, v, err)
}

func (s *Service) handleRestart(c fiber.Ctx) error {
	q := platform.QueryOf(c)
	if _, err := s.Stop(idParam(c)); err != nil {
		return err
	}
	v, err := s.Start(c.Context(), idParam(c), q.Bool("wait"), time.Duration(q.Float("timeout")*float64(time.Second)))
	return answer(c, http.StatusOK, v, err)
}

func (s *Service) handleSignal(c fiber.Ctx) error {
	var req SignalRequest
	if err := platform.Decode(c, &req); err != nil {
		return err
	}
	v, err := s.Signal(idParam(c), req)
	return answer(c, http.StatusOK, v, err)
}

func answer(c fiber.Ctx, status int, v View, err error) error {
	if err != nil {
		return err
	}
	return platform.JSON(c, status, v)
}

// waitSettled waits until p is running, exited, fatal or stopped, or
// until timeout or ctx ends.
func (s *Service) waitSettled(ctx context.Context, p *program, timeout time.Duration) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		ch := s.changes()
		switch p.status().State {
		case StateRunning, StateExited, StateFatal, StateStopped:
			return
		}
		select {
		case <-ch:
		case <-deadline.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

// idParam copies the path's id: Fiber's values point into a buffer it
// reuses after the handler returns, and the id becomes a map key.
func idParam(c fiber.Ctx) string { return strings.Clone(c.Params("id")) }
