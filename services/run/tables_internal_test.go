package run

import (
	"fmt"
	"testing"

	"deckhand/platform/store"
	"deckhand/platform/store/storetest"
)

// TestTablesKeepTheStoreContract holds the profiles and sources to the
// store contract on both engines, with the list and the name and dir
// checks' queries.
func TestTablesKeepTheStoreContract(t *testing.T) {
	profiles, sources := map[string]any{}, map[string]any{}
	dirs := []string{"app", "app/web", "lib", "/srv/data", "/srv/data/x", "apps", "app0"}
	for i := range 21 {
		name := fmt.Sprintf("p%02d", (i*7)%21)
		profiles[name] = Profile{Name: name, Shell: "/bin/sh", Cwd: "/", Env: map[string]string{}, Path: []string{}}
		id := fmt.Sprintf("src_%02d", i)
		sources[id] = storedSource{Source: Source{ID: id, Name: fmt.Sprintf("s%02d", (i*5)%21), Type: "git", Dir: dirs[i%len(dirs)] + "/" + []string{"", "./"}[i%2] + fmt.Sprint(i/len(dirs))}}
	}
	storetest.RunTablesOnEngines(t, []storetest.TableCase{
		{Table: profileTable, Records: profiles, Queries: []store.Query{{}}},
		{Table: sourceTable, Records: sources, Queries: []store.Query{
			{Sort: []string{"name"}},
			{Filters: []store.Filter{store.Where("name", store.Eq, "s10"), store.Where("key", store.Ne, "src_02")}, Limit: 1, SkipTotal: true},
			{Filters: []store.Filter{store.Where("dir", store.In, []string{"app/web/1", "app/web", "app"}), store.Where("key", store.Ne, "src_00")}},
			{Filters: []store.Filter{store.Where("dir", store.Gte, "app/"), store.Where("dir", store.Lt, "app0")}},
		}},
	})
}
