package images

import (
	"context"
	"runtime"
	"strings"

	"deckhand/control/events"
	"deckhand/platform/store"
)

// Builtin are the images `make image` builds into the local engine
// (scripts/image.sh) for this version of deckhand: free, published by the
// platform, with image_name the engine reference the runtime starts. Their
// alias is that reference too, so a version registers its own pair once.
func Builtin(version string) []CreateInput {
	var out []CreateInput
	for _, v := range []struct{ variant, description string }{
		{"base", "Debian 12 (bookworm) minbase with bash, coreutils, curl, git, python3 and apt; the deckhand agent is PID 1 and commands run as user (uid 1000, home /home/user)."},
		{"desktop", "deckhand/base with an X desktop: Xvfb (:99, 1280x800), openbox, xterm, a session D-Bus and the accessibility bus, kept running by the agent."},
	} {
		ref := "deckhand/" + v.variant + ":" + version
		out = append(out, CreateInput{Alias: ref, ImageName: ref, Description: v.description, OS: "debian", Release: "12",
			Variant: v.variant, Architecture: runtime.GOARCH, Tags: []string{"deckhand", v.variant, "debian"}})
	}
	return out
}

// RegisterBuiltin registers the Builtin images of version whose alias is
// not in the catalog yet and answers how many it added (the server calls
// it at start with platform.Version). It is one transaction: replicas
// starting together serialize on the aliases, and a restart finds them
// registered.
func (s *Service) RegisterBuiltin(ctx context.Context, version string) (int, error) {
	ins := Builtin(version)
	for i := range ins {
		if err := ins[i].Validate(); err != nil {
			return 0, err
		}
	}
	var added []string
	err := s.env.Store.UpdateContext(ctx, func(tx *store.Tx) error {
		added = added[:0] // the function runs again after a conflict
		for i := range ins {
			if tx.GetRaw(bucketAliases, strings.ToLower(ins[i].Alias)) != nil {
				continue
			}
			r, err := s.insert(tx, &ins[i])
			if err != nil {
				return err
			}
			// The platform publishes them: no user acted.
			if _, err := s.env.Events.Append(tx, events.Event{EventType: "image.created", ResourceType: "image", ResourceID: r.ID,
				Payload: events.Payload(map[string]any{"alias": r.Alias, "price": r.Price, "source": "bootstrap"})}); err != nil {
				return err
			}
			added = append(added, r.Alias)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	if len(added) > 0 {
		s.env.Logger.Info("built-in images registered", "images", strings.Join(added, ","))
	}
	return len(added), nil
}
