package notes

import (
	"cmp"
	"context"
	"encoding/json"
	"strings"
	"time"

	"deckhand/platform/fault"
	"deckhand/platform/store"
)

// ListQuery is the query of GET /api/v1/notes.
type ListQuery struct {
	Notebook string `query:"notebook" doc:"only this notebook's nodes; the id rule of notebookId (else 400)"`
	After    string `query:"after" doc:"start after this node, \"notebookId/nodeId\" (the previous page's next; else 400)"`
	Limit    int    `query:"limit" minimum:"1" maximum:"1000" default:"100" doc:"at most this many nodes"` // maximum: maxList
}

const maxList = 1000

// Validate checks the filter and the cursor.
func (q *ListQuery) Validate() error {
	if q.Notebook != "" {
		if err := checkID("notebook", q.Notebook); err != nil {
			return err
		}
	}
	if q.After != "" {
		nb, node, ok := strings.Cut(q.After, "/")
		if !ok || checkID("after", nb) != nil || checkID("after", node) != nil {
			return fault.Invalid("after", "must be \"notebookId/nodeId\" (a page's next), got %q", q.After)
		}
	}
	if q.Limit < 0 || q.Limit > maxList {
		return fault.Invalid("limit", "must be 1-%d", maxList)
	}
	return nil
}

// NodeSummary is a node in a list: its document without the blocks.
type NodeSummary struct {
	NotebookID string    `json:"notebook_id" required:"true"`
	NodeID     string    `json:"node_id" required:"true"`
	Title      string    `json:"title" required:"true"`
	Version    int64     `json:"version" required:"true"`
	Blocks     int       `json:"blocks" required:"true" doc:"how many blocks the document has"`
	CreatedAt  time.Time `json:"created_at" required:"true"`
	UpdatedAt  time.Time `json:"updated_at" required:"true"`
}

// NodeList is a page of nodes in notebook, then node id order.
type NodeList struct {
	Nodes []NodeSummary `json:"nodes" required:"true"`
	Next  string        `json:"next,omitempty" doc:"pass as after= for the next page; absent on the last page"`
}

// List answers a page of the nodes that have a document, without their
// blocks (GET .../document reads one).
func (s *Service) List(ctx context.Context, q ListQuery) (NodeList, error) {
	limit := cmp.Or(q.Limit, 100)
	var fs []store.Filter
	if q.Notebook != "" {
		fs = append(fs, store.Where("notebook_id", store.Eq, q.Notebook))
	}
	if q.After != "" {
		fs = append(fs, store.Where("key", store.Gt, q.After))
	}
	out := NodeList{Nodes: []NodeSummary{}}
	err := s.db.ViewContext(ctx, func(tx *store.Tx) error {
		pg, err := tx.Page(docTable, store.Query{Filters: fs, Limit: limit, SkipTotal: true})
		if err != nil {
			return err
		}
		out.Nodes = make([]NodeSummary, 0, len(pg.Items))
		for _, it := range pg.Items {
			// The ids are the key's halves; the blocks are only counted
			// (a struct{} per block: nothing of them is kept).
			var d struct {
				Title     string     `json:"title"`
				Version   int64      `json:"version"`
				Blocks    []struct{} `json:"blocks"`
				CreatedAt time.Time  `json:"created_at"`
				UpdatedAt time.Time  `json:"updated_at"`
			}
			if err := json.Unmarshal(it.Value, &d); err != nil {
				return err
			}
			nb, node, _ := strings.Cut(it.Key, "/")
			out.Nodes = append(out.Nodes, NodeSummary{NotebookID: nb, NodeID: node, Title: d.Title,
				Version: d.Version, Blocks: len(d.Blocks), CreatedAt: d.CreatedAt, UpdatedAt: d.UpdatedAt})
		}
		if pg.Next != "" {
			out.Next = pg.Items[len(pg.Items)-1].Key
		}
		return nil
	})
	if err != nil {
		return NodeList{}, fault.Internal("list the notes", err)
	}
	return out, nil
}
