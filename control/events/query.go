package events

import (
	"slices"
	"time"

	"deckhand/platform/store"
)

// Filter selects events: empty fields match anything; Start and End are
// inclusive bounds on created_at (zero = open).
type Filter struct {
	EventType    string
	ResourceType string
	ResourceID   string
	ProjectID    string
	ContainerID  string
	RealmID      string
	Start, End   time.Time
}

// filters are f as store conditions. Dates bound the key, whose prefix is
// the creation time to the nanosecond: a range of the key (or of an
// index's key suffix) rather than a condition checked per event.
func (f Filter) filters() []store.Filter {
	var out []store.Filter
	for _, e := range [][2]string{{"resource_id", f.ResourceID}, {"container_id", f.ContainerID}, {"project_id", f.ProjectID},
		{"realm_id", f.RealmID}, {"resource_type", f.ResourceType}, {"event_type", f.EventType}} {
		if e[1] != "" {
			out = append(out, store.Where(e[0], store.Eq, e[1]))
		}
	}
	if !f.Start.IsZero() {
		out = append(out, store.Where("key", store.Gte, TimeKey(f.Start)))
	}
	if !f.End.IsZero() {
		out = append(out, store.Where("key", store.Lt, TimeKey(f.End.Add(time.Nanosecond))))
	}
	return out
}

// Matches reports whether ev passes every field of f.
func (f Filter) Matches(ev *Event) bool {
	switch {
	case f.EventType != "" && ev.EventType != f.EventType,
		f.ResourceType != "" && ev.ResourceType != f.ResourceType,
		f.ResourceID != "" && ev.ResourceID != f.ResourceID,
		f.ProjectID != "" && ev.ProjectID != f.ProjectID,
		f.ContainerID != "" && ev.ContainerID != f.ContainerID,
		f.RealmID != "" && ev.RealmID != f.RealmID,
		!f.Start.IsZero() && ev.CreatedAt.Before(f.Start),
		!f.End.IsZero() && ev.CreatedAt.After(f.End):
		return false
	}
	return true
}

// Viewer is whose view a read takes: admins see every event; a user sees
// the events they own or caused and those of projects Project admits.
type Viewer struct {
	All    bool
	UserID string
	// Project reports whether the viewer may see a project's events (the
	// projects domain's "project.member" check); nil admits none.
	Project func(projectID string) bool

	cache map[string]bool
}

func (v *Viewer) project(id string) bool {
	if id == "" || v.Project == nil {
		return false
	}
	if ok, seen := v.cache[id]; seen {
		return ok
	}
	if v.cache == nil {
		v.cache = map[string]bool{}
	}
	ok := v.Project(id)
	v.cache[id] = ok
	return ok
}

// Sees reports whether the viewer may see ev.
func (v *Viewer) Sees(ev *Event) bool {
	return v.All || (v.UserID != "" && (ev.UserID == v.UserID || ev.ActorID == v.UserID)) || v.project(ev.ProjectID)
}

// filter is the viewer as one group of alternatives: their own events
// (owned or caused) and those of the projects with events they may see.
func (v *Viewer) filter(tx *store.Tx) ([]store.Filter, error) {
	if v.All {
		return nil, nil
	}
	var alts []store.Filter
	if v.UserID != "" {
		alts = append(alts, store.Where("user_id", store.Eq, v.UserID), store.Where("actor_id", store.Eq, v.UserID))
	}
	if v.Project != nil {
		var ps []string
		err := tx.ForEach(ProjectsBucket, func(p string, _ []byte) error {
			if v.project(p) {
				ps = append(ps, p)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		for chunk := range slices.Chunk(ps, store.MaxInValues) {
			alts = append(alts, store.Where("project_id", store.In, chunk))
		}
	}
	if len(alts) == 0 {
		return []store.Filter{store.Where("key", store.In, []string{})}, nil // sees nothing
	}
	return []store.Filter{store.AnyOf(alts...)}, nil
}

// query is what f and v select, as conditions.
func query(tx *store.Tx, f Filter, v *Viewer) ([]store.Filter, error) {
	vf, err := v.filter(tx)
	return append(f.filters(), vf...), err
}

// Sort orders a list: by created_at (default) or by event_type then
// created_at; Desc reverses both.
type Sort struct {
	ByType bool
	Desc   bool
}

// Page is one page of a list and the number of events the whole list has.
type Page struct {
	Events []Event
	Total  int
}

// Find lists the events f and v select in order o, skipping offset and
// returning at most limit (0: every one).
func Find(tx *store.Tx, f Filter, v *Viewer, o Sort, offset, limit int) (Page, error) {
	fs, err := query(tx, f, v)
	if err != nil {
		return Page{}, err
	}
	q := store.Query{Filters: fs, Desc: o.Desc, Offset: offset, Limit: limit}
	if o.ByType {
		q.Sort = []string{"event_type"}
	}
	pg, err := store.PageOf[Event](tx, Table, q)
	if err != nil {
		return Page{}, err
	}
	return Page{Events: pg.Items, Total: pg.Total}, nil
}

// Stats counts the events f and v select by event type and by resource
// type (Total is their sum either way).
type Stats struct {
	Total          int            `json:"total"`
	ByEventType    map[string]int `json:"by_event_type"`
	ByResourceType map[string]int `json:"by_resource_type"`
}

// Count aggregates the events f and v select.
func Count(tx *store.Tx, f Filter, v *Viewer) (Stats, error) {
	fs, err := query(tx, f, v)
	if err != nil {
		return Stats{}, err
	}
	st := Stats{}
	if st.ByEventType, err = tx.CountBy(Table, fs, "event_type"); err != nil {
		return Stats{}, err
	}
	if st.ByResourceType, err = tx.CountBy(Table, fs, "resource_type"); err != nil {
		return Stats{}, err
	}
	for _, n := range st.ByEventType {
		st.Total += n
	}
	return st, nil
}

// DeleteBatch deletes at most max events f selects whose keys follow
// after (a key DeleteBatch returned; "" starts at the beginning), in key
// order. It returns how many it deleted and where to resume ("" when none
// is left). Deletion is an admin's act: no viewer.
func DeleteBatch(tx *store.Tx, f Filter, after string, max int) (int, string, error) {
	fs := f.filters()
	if after != "" {
		fs = append(fs, store.Where("key", store.Gt, after))
	}
	pg, err := tx.Page(Table, store.Query{Filters: fs, Limit: max, SkipTotal: true})
	if err != nil {
		return 0, "", err
	}
	for _, it := range pg.Items {
		if err := tx.Delete(Bucket, it.Key); err != nil {
			return 0, "", err
		}
	}
	next := ""
	if pg.Next != "" {
		next = pg.Items[len(pg.Items)-1].Key
	}
	return len(pg.Items), next, nil
}
