package projects

import (
	"time"

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
