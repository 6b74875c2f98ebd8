package projects

import (
	"time"

	"deckhand/platform/fault"
	"deckhand/platform/store"
)

// projectTable and containerTable declare the projects' and containers'
// buckets as tables: the owner of a project and the project of a
// container are indexed fields kept in the transaction of each write, so
// "my projects" and "a project's containers" are store pages in creation
// order (on PostgreSQL the tables projects and projects_containers).
var (
	projectTable = store.Declare(bucketProjects, []store.Field[Project]{
		store.Text("owner_id", func(p *Project) string { return p.OwnerID }),
		store.Text("name", func(p *Project) string { return p.Name }),
		store.Time("created_at", func(p *Project) time.Time { return p.CreatedAt }),
	}, store.Index{Fields: []string{"owner_id"}}, store.Index{Fields: []string{"created_at"}, Sort: true})

	containerTable = store.Declare(bucketContainers, []store.Field[Container]{
		store.Text("project_id", func(c *Container) string { return c.ProjectID }),
		store.Text("name", func(c *Container) string { return c.Name }),
		store.Text("status", func(c *Container) string { return c.Status }),
		store.Time("created_at", func(c *Container) time.Time { return c.CreatedAt }),
	}, store.Index{Fields: []string{"project_id", "created_at"}, Sort: true})
)

// Tables are the tables this package declares.
var Tables = []*store.Table{projectTable, containerTable, snapshotTable, workspaceTable, poolTable}

// legacyBuckets held hand-built indexes the tables replace (a project's
// owner, a container's project); New drops them.
var legacyBuckets = []string{"projects_by_owner", "projects_containers_by_project"}

// get is the record of bucket under key, nil when there is none.
func get[T any](tx *store.Tx, bucket, key string) (*T, error) {
	var v T
	ok, err := tx.Get(bucket, key, &v)
	if err != nil || !ok {
		return nil, err
	}
	return &v, nil
}

// where is the records of table whose field is value, oldest first, at
// most limit (0: every one).
func where[T any](tx *store.Tx, table *store.Table, field, value string, limit int) ([]T, error) {
	pg, err := store.PageOf[T](tx, table, store.Query{Filters: []store.Filter{store.Where(field, store.Eq, value)},
		Sort: []string{"created_at"}, Limit: limit, SkipTotal: true})
	return pg.Items, err
}

func getProject(tx *store.Tx, id string) (*Project, error) {
	return get[Project](tx, bucketProjects, id)
}

func getContainer(tx *store.Tx, id string) (*Container, error) {
	return get[Container](tx, bucketContainers, id)
}

// findProject is project id, 404 when there is none.
func findProject(tx *store.Tx, id string) (*Project, error) {
	p, err := getProject(tx, id)
	if err == nil && p == nil {
		err = fault.NotFound("project", id)
	}
	return p, err
}

// findContainer is container id, 404 when there is none.
func findContainer(tx *store.Tx, id string) (*Container, error) {
	c, err := getContainer(tx, id)
	if err == nil && c == nil {
		err = fault.NotFound("container", id)
	}
	return c, err
}

// projectContainers is project id's containers oldest first, at most
// limit (0: every one).
func projectContainers(tx *store.Tx, id string, limit int) ([]Container, error) {
	return where[Container](tx, containerTable, "project_id", id, limit)
}
