package daemon

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"deckhand/platform"
	"deckhand/platform/atomicfile"
	"deckhand/platform/fault"
)

// Programs live one per file, <programs dir>/<id>.json, holding the same
// JSON as the API's PUT body: a person can drop a file in, and the API
// writes the same files (atomically: a temporary file renamed over it).

// loadDir reads every <id>.json of dir. A file that does not parse or
// validate is skipped and reported in problems (path: reason); the rest
// load. The dependency graph is checked over what loaded.
func loadDir(dir string) (map[string]*Program, []fileProblem, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return map[string]*Program{}, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	progs := map[string]*Program{}
	var problems []fileProblem
	for _, e := range ents {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".json") || strings.HasPrefix(name, ".") {
			continue
		}
		path := filepath.Join(dir, name)
		p, err := readProgram(path, strings.TrimSuffix(name, ".json"))
		if err != nil {
			problems = append(problems, problemOf(path, err))
			continue
		}
		progs[p.ID] = p
	}
	// A dependency on a program that failed to load, or a cycle between
	// files, leaves those programs out rather than starting them wrongly.
	for {
		bad, err := graphProblem(progs)
		if err == nil {
			break
		}
		for _, id := range bad {
			problems = append(problems, problemOf(filepath.Join(dir, id+".json"), err))
			delete(progs, id)
		}
	}
	return progs, problems, nil
}

// fileProblem is why one program file did not load.
type fileProblem struct {
	path  string
	field string // the field at fault, "" when the file did not read
	err   string
}

func (p fileProblem) String() string { return p.path + ": " + p.err }

func problemOf(path string, err error) fileProblem {
	fp := fileProblem{path: path, err: fault.Text(err)}
	var pe *fault.Error
	if errors.As(err, &pe) {
		fp.field = pe.Details
	}
	return fp
}

// programFile decodes a file strictly but without Program.Validate.
type programFile Program

// readProgram reads and validates one program file.
func readProgram(path, id string) (*Program, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var p Program
	// Decoded as a type without Validate: the id comes from the file name.
	if err := platform.DecodeBytes(raw, (*programFile)(&p)); err != nil {
		return nil, err
	}
	if p.ID != "" && p.ID != id {
		return nil, fault.Invalid("id", "%q differs from the file name %q", p.ID, id)
	}
	p.ID = id
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return &p, nil
}

// writeProgram writes p atomically as <dir>/<id>.json (0600).
func writeProgram(dir string, p *Program) error {
	raw, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteWith(filepath.Join(dir, p.ID+".json"), 0o600, atomicfile.Options{UID: -1, MkdirMode: 0o700},
		func(w io.Writer) error { _, err := w.Write(append(raw, '\n')); return err })
}

// removeProgram deletes <dir>/<id>.json.
func removeProgram(dir, id string) error {
	err := os.Remove(filepath.Join(dir, id+".json"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("remove %s: %w", id, err)
	}
	return nil
}
