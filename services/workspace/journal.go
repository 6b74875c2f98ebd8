package workspace

import (
	"cmp"
	"context"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"deckhand/platform/fault"
	"deckhand/platform/store"
)

// The journal's inverted index is the postings table (tables.go) beside
// the entries, and one record of totals per workspace:
//
//	terms   ws/term/seq → [term frequency, the entry's length in terms]
//	jstats  ws          → {"docs": N, "terms": total length}
//
// A search reads, per query term, the postings under ws/term/ (document
// frequency = how many), and scores each entry with BM25.
const (
	bucketJournal = "journal"
	bucketTerms   = "terms"
	bucketJStats  = "jstats"
)

// maxTermBytes bounds an indexed term (longer tokens are cut).
const maxTermBytes = 64

// Entry is one memory journal entry.
type Entry struct {
	ID        string    `json:"id" required:"true"`
	Content   string    `json:"content" required:"true"`
	Tags      []string  `json:"tags" required:"true"`
	CreatedAt time.Time `json:"created_at" required:"true"`
}

// AppendEntry is the body of POST .../memory/journal.
type AppendEntry struct {
	Content string   `json:"content" required:"true"`
	Tags    []string `json:"tags" doc:"up to 16 tags of 1-64 of A-Z a-z 0-9 . _ - : (indexed with the content)"`
}

// Validate checks the entry; the length limit comes from the memory
// configuration and is checked by the domain.
func (r *AppendEntry) Validate() error {
	if strings.TrimSpace(r.Content) == "" {
		return fault.Invalid("content", "required (not blank)")
	}
	if len(r.Tags) > 16 {
		return fault.Invalid("tags", "at most 16 tags, got %d", len(r.Tags))
	}
	for i, t := range r.Tags {
		if !tagRule(t) {
			return fault.Invalid("tags["+strconv.Itoa(i)+"]", "must be 1-64 of A-Z a-z 0-9 . _ - :, got %q", t)
		}
	}
	return nil
}

func tagRule(t string) bool {
	if t == "" || len(t) > 64 {
		return false
	}
	for _, r := range t {
		if !(r < utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune("._-:", r))) {
			return false
		}
	}
	return true
}

// EntryList is the answer of GET .../memory/journal.
type EntryList struct {
	Entries []Entry `json:"entries" required:"true" doc:"newest first"`
	Next    string  `json:"next,omitempty" doc:"send it as before= to read the next page"`
}

// Count is the answer of GET .../memory/journal/count.
type Count struct {
	Count int `json:"count" required:"true"`
}

// SearchRequest is the body of POST .../memory/journal/search.
type SearchRequest struct {
	Query string `json:"query" required:"true" doc:"words; entries containing any of them are ranked by BM25"`
	Limit int    `json:"limit" doc:"1-100, default 10"`
	Tag   string `json:"tag" doc:"only entries with this tag"`
}

// Validate checks the search.
func (r *SearchRequest) Validate() error {
	if len(tokenize(r.Query)) == 0 {
		return fault.Invalid("query", "must contain at least one word (letters or digits)")
	}
	r.Limit = cmp.Or(r.Limit, 10)
	if r.Limit < 1 || r.Limit > 100 {
		return fault.Invalid("limit", "must be 1-100, got %d", r.Limit)
	}
	return nil
}

// Hit is one search result.
type Hit struct {
	Entry
	Score float64 `json:"score" required:"true" doc:"BM25 score; higher ranks first"`
}

// SearchResult is the answer of a search.
type SearchResult struct {
	Query string   `json:"query" required:"true"`
	Terms []string `json:"terms" required:"true" doc:"the query as indexed terms"`
	Hits  []Hit    `json:"hits" required:"true" doc:"best first; ties by newest"`
}

type jstats struct {
	Docs  int64 `json:"docs"`
	Terms int64 `json:"terms"`
}

// tokenize is the one tokenizer of index and query: NFKC, lower case,
// runs of letters and digits.
func tokenize(s string) []string {
	s = strings.ToLower(norm.NFKC.String(s))
	words := strings.FieldsFunc(s, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	for i, w := range words {
		if len(w) > maxTermBytes {
			cut := maxTermBytes
			for cut > 0 && !utf8.RuneStart(w[cut]) {
				cut--
			}
			words[i] = w[:cut]
		}
	}
	return words
}

func entryID(seq uint64) string { return "j_" + strconv.FormatUint(seq, 10) }

func parseEntryID(id string) (uint64, bool) {
	if !strings.HasPrefix(id, "j_") {
		return 0, false
	}
	n, err := strconv.ParseUint(id[2:], 10, 64)
	return n, err == nil && n > 0
}

// Append adds an entry and indexes it.
func (s *Service) Append(ctx context.Context, req EntryAppend) (e Entry, err error) {
	ws, in := req.Workspace, req.Body
	err = s.db.UpdateContext(ctx, func(tx *store.Tx) error {
		cfg, err := s.loadConfig(tx, ws)
		if err != nil {
			return err
		}
		if n := utf8.RuneCountInString(in.Content); n > cfg.Memory.MaxEntryChars {
			return fault.Invalid("content", "is %d characters, over max_entry_chars (%d)", n, cfg.Memory.MaxEntryChars)
		}
		seq, err := tx.NextSeq(bucketJournal)
		if err != nil {
			return err
		}
		tags := in.Tags
		if tags == nil {
			tags = []string{}
		}
		e = Entry{ID: entryID(seq), Content: in.Content, Tags: tags, CreatedAt: s.clock.Now()}
		key := store.SeqKey(seq)
		if err := tx.Put(bucketJournal, prefix(ws)+key, e); err != nil {
			return err
		}
		return s.index(tx, ws, key, e, +1)
	})
	return e, fault.Wrap("append to the memory journal", err)
}

// index adds (dir +1) or removes (dir -1) an entry's postings and its
// share of the workspace's totals.
func (s *Service) index(tx *store.Tx, ws, key string, e Entry, dir int) error {
	if err := putPostings(tx, ws, key, e, dir); err != nil {
		return err
	}
	var st jstats
	if _, err := tx.Get(bucketJStats, ws, &st); err != nil {
		return err
	}
	st.Docs += int64(dir)
	st.Terms += int64(dir * len(entryTerms(e)))
	return tx.Put(bucketJStats, ws, st)
}

func entryTerms(e Entry) []string { return tokenize(e.Content + " " + strings.Join(e.Tags, " ")) }

// putPostings writes (dir +1) or deletes (dir -1) an entry's postings.
func putPostings(tx *store.Tx, ws, key string, e Entry, dir int) error {
	terms := entryTerms(e)
	tf := map[string]int{}
	for _, t := range terms {
		tf[t]++
	}
	for t, n := range tf {
		k := prefix(ws) + t + "/" + key
		var err error
		if dir > 0 {
			err = tx.Put(bucketTerms, k, posting{uint32(n), uint32(len(terms))})
		} else {
			err = tx.Delete(bucketTerms, k)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// JournalFilter pages through the journal.
type JournalFilter struct {
	Before string `query:"before" doc:"an entry id (the answer's next): entries older than it"`
	Tag    string `query:"tag" doc:"only entries with this tag"`
	Limit  int    `query:"limit" minimum:"1" maximum:"1000" default:"50" doc:"at most this many"` // 0: no limit
}

// Journal lists entries, newest first.
func (s *Service) Journal(ctx context.Context, q JournalQuery) (EntryList, error) {
	ws, f := q.Workspace, q.JournalFilter
	out := EntryList{Entries: []Entry{}}
	pq := store.Query{Filters: store.KeyPrefix(prefix(ws)), Desc: true, Limit: 1000, SkipTotal: true}
	if f.Before != "" {
		n, ok := parseEntryID(f.Before)
		if !ok {
			return out, fault.Invalid("before", "must be a journal entry id (j_N), got %q", f.Before)
		}
		pq.Filters = append(pq.Filters, store.Where("key", store.Lt, prefix(ws)+store.SeqKey(n)))
	}
	if f.Tag == "" && f.Limit > 0 {
		pq.Limit = f.Limit + 1 // one more tells whether a next page follows
	}
	err := s.db.ViewContext(ctx, func(tx *store.Tx) error {
		for {
			pg, err := store.PageOf[Entry](tx, journalTable, pq)
			if err != nil {
				return err
			}
			for _, e := range pg.Items {
				if f.Tag != "" && !slices.Contains(e.Tags, f.Tag) {
					continue
				}
				if f.Limit > 0 && len(out.Entries) == f.Limit {
					out.Next = out.Entries[len(out.Entries)-1].ID
					return nil
				}
				out.Entries = append(out.Entries, e)
			}
			if pg.Next == "" {
				return nil
			}
			pq.Cursor = pg.Next
		}
	})
	return out, fault.Wrap("list the memory journal", err)
}

// CountEntries counts a workspace's journal entries.
func (s *Service) CountEntries(ctx context.Context, ref WorkspaceRef) (Count, error) {
	n, err := s.countEntries(ctx, ref.Workspace)
	return Count{Count: n}, err
}

func (s *Service) countEntries(ctx context.Context, ws string) (int, error) {
	n := 0
	err := s.db.ViewContext(ctx, func(tx *store.Tx) error {
		n = tx.CountPrefix(bucketJournal, prefix(ws))
		return nil
	})
	return n, fault.Wrap("count the memory journal", err)
}

// JournalEntry reads one entry.
func (s *Service) JournalEntry(ctx context.Context, ref EntryRef) (Entry, error) {
	ws, id := ref.Workspace, ref.ID
	var e Entry
	n, ok := parseEntryID(id)
	if !ok {
		return e, fault.NotFound("journal entry", id)
	}
	err := s.db.ViewContext(ctx, func(tx *store.Tx) error {
		found, err := tx.Get(bucketJournal, prefix(ws)+store.SeqKey(n), &e)
		if err == nil && !found {
			return fault.NotFound("journal entry", id)
		}
		return err
	})
	return e, fault.Wrap("read a journal entry", err)
}

// DeleteEntry removes an entry and its postings.
func (s *Service) DeleteEntry(ctx context.Context, ref EntryRef) error {
	ws, id := ref.Workspace, ref.ID
	n, ok := parseEntryID(id)
	if !ok {
		return fault.NotFound("journal entry", id)
	}
	err := s.db.UpdateContext(ctx, func(tx *store.Tx) error {
		key := store.SeqKey(n)
		var e Entry
		found, err := tx.Get(bucketJournal, prefix(ws)+key, &e)
		if err != nil {
			return err
		}
		if !found {
			return fault.NotFound("journal entry", id)
		}
		if err := tx.Delete(bucketJournal, prefix(ws)+key); err != nil {
			return err
		}
		return s.index(tx, ws, key, e, -1)
	})
	return fault.Wrap("delete a journal entry", err)
}

// Search ranks the entries containing any query term with Okapi BM25:
//
//	score = Σ idf(t) · tf·(k1+1) / (tf + k1·(1 − b + b·len/avglen))
//	idf(t) = ln(1 + (N − df + 0.5)/(df + 0.5))
//
// (the non-negative idf Lucene uses, so a term in most entries still counts).
func (s *Service) Search(ctx context.Context, req SearchInput) (SearchResult, error) {
	ws, in := req.Workspace, req.Body
	terms := unique(tokenize(in.Query))
	res := SearchResult{Query: in.Query, Terms: terms, Hits: []Hit{}}
	err := s.db.ViewContext(ctx, func(tx *store.Tx) error {
		cfg, err := s.loadConfig(tx, ws)
		if err != nil {
			return err
		}
		k1, b := cfg.Memory.Search.K1, cfg.Memory.Search.B
		var st jstats
		if _, err := tx.Get(bucketJStats, ws, &st); err != nil {
			return err
		}
		if st.Docs == 0 {
			return nil
		}
		avg := float64(st.Terms) / float64(st.Docs)
		scores := map[string]float64{}
		for _, t := range terms {
			p := prefix(ws) + t + "/"
			ps, keys, err := store.All[posting](tx, postingTable, store.Query{Filters: store.KeyPrefix(p)})
			if err != nil {
				return err
			}
			df := len(ps)
			if df == 0 {
				continue
			}
			idf := math.Log(1 + (float64(st.Docs)-float64(df)+0.5)/(float64(df)+0.5))
			for i, k := range keys {
				tf, dl := float64(ps[i][0]), float64(ps[i][1])
				scores[k[len(p):]] += idf * tf * (k1 + 1) / (tf + k1*(1-b+b*dl/avg))
			}
		}
		docs := slices.Collect(maps.Keys(scores))
		sort.Slice(docs, func(i, j int) bool {
			if scores[docs[i]] != scores[docs[j]] {
				return scores[docs[i]] > scores[docs[j]]
			}
			return docs[i] > docs[j]
		})
		for _, d := range docs {
			var e Entry
			if _, err := tx.Get(bucketJournal, prefix(ws)+d, &e); err != nil {
				return err
			}
			if in.Tag != "" && !slices.Contains(e.Tags, in.Tag) {
				continue
			}
			res.Hits = append(res.Hits, Hit{Entry: e, Score: math.Round(scores[d]*1e6) / 1e6})
			if in.Limit > 0 && len(res.Hits) == in.Limit {
				break
			}
		}
		return nil
	})
	return res, fault.Wrap("search the memory journal", err)
}

func unique(ts []string) []string {
	seen := map[string]bool{}
	out := []string{}
	for _, t := range ts {
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out
}
