package mcptool

import (
	"encoding/json"
	"fmt"
)

// secretKeys are argument names whose values never reach the journal:
// only their length does.
var secretKeys = map[string]bool{"content": true, "text": true, "stdin": true, "data": true, "value": true,
	"old_string": true, "new_string": true, "env": true, "password": true, "token": true}

// Summarize keeps a tool call's arguments short for the journal: scalars
// cut to 80 characters, lists to their first items, and the values of
// secretKeys as their length.
func Summarize(raw json.RawMessage) map[string]any {
	var args map[string]any
	if json.Unmarshal(raw, &args) != nil {
		return nil
	}
	out := make(map[string]any, len(args))
	for k, v := range args {
		if secretKeys[k] {
			b, _ := json.Marshal(v)
			out[k] = fmt.Sprintf("<%d bytes>", len(b))
			continue
		}
		out[k] = short(v)
	}
	return out
}

func short(v any) any {
	switch x := v.(type) {
	case string:
		if len(x) > 80 {
			return x[:80] + "…"
		}
		return x
	case []any:
		if len(x) > 8 {
			x = append(x[:8:8], "…")
		}
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = short(e)
		}
		return out
	case map[string]any:
		return fmt.Sprintf("<object of %d keys>", len(x))
	}
	return v
}
