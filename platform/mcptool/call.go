package mcptool

import (
	"encoding/json"
	"strconv"

	"deckhand/platform/fault"
)

// Call is one call of a route tool: the operation's arguments, and the
// budget and offset its face takes for itself.
type Call struct {
	Args        map[string]json.RawMessage
	Max, Offset int
}

// Prepare takes a tools/call's arguments (a JSON object) apart: max_chars
// (default budget) and offset are the face's own, but for an operation
// that applies its budget itself, which is given it as max_chars.
func (t *Tool) Prepare(raw json.RawMessage, budget int) (Call, error) {
	c := Call{Args: map[string]json.RawMessage{}, Max: budget}
	if len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &c.Args); err != nil {
			return c, fault.Invalid("arguments", "must be a JSON object")
		}
	}
	f := t.Face
	if f.Budget != "" || f.Pages != "" {
		if n, ok, err := count(c.Args, "max_chars"); err != nil {
			return c, err
		} else if ok && n > 0 {
			c.Max = min(n, MaxBudget)
		}
		if f.Budget == "operation" {
			c.Args["max_chars"] = json.RawMessage(strconv.Itoa(c.Max))
		}
	}
	if f.Pages != "" {
		n, _, err := count(c.Args, "offset")
		if err != nil {
			return c, err
		}
		c.Offset = n
	}
	return c, nil
}

// count takes the non-negative integer argument name out of args (ok: it
// was given).
func count(args map[string]json.RawMessage, name string) (n int, ok bool, err error) {
	raw, ok := args[name]
	if !ok {
		return 0, false, nil
	}
	delete(args, name)
	if json.Unmarshal(raw, &n) != nil || n < 0 {
		return 0, false, fault.Invalid(name, "must be a non-negative integer")
	}
	return n, true, nil
}
