package files

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strings"

	"deckhand/platform/fault"
)

// Match is one search hit: a file whose name matched, or a line.
type Match struct {
	Path string `json:"path" required:"true"`
	Line int    `json:"line,omitempty" doc:"1-based line number of a content match"`
	Text string `json:"text,omitempty" doc:"the matching line, at most 500 bytes"`
}

// SearchResult is the answer of a search.
type SearchResult struct {
	Matches      []Match `json:"matches" required:"true"`
	FilesVisited int     `json:"files_visited" required:"true"`
	Truncated    bool    `json:"truncated" required:"true" doc:"a cap (max_results or max_files) was reached"`
}

// SearchInput bounds a search.
type SearchInput struct {
	Path        string `query:"path" required:"true" doc:"absolute path within the root, e.g. /notes/a.txt"`
	Name        string `query:"name" doc:"glob on the base name, e.g. *.go"`
	Content     string `query:"content" doc:"regular expression searched in file contents"`
	Hidden      bool   `query:"hidden" default:"false" doc:"descend into names starting with a dot"`
	GitIgnore   bool   `query:"gitignore" default:"false" doc:"skip what .gitignore files exclude"`
	MaxResults  int    `query:"max_results" minimum:"1" maximum:"10000" default:"500" doc:"stop after this many matches"`
	MaxFiles    int    `query:"max_files" minimum:"1" maximum:"10000000" default:"100000" doc:"stop after visiting this many files"`
	MaxFileSize int64  `query:"max_file_size" minimum:"1" maximum:"2147483647" default:"10485760" doc:"content search skips larger files"`
}

type ignoreRule struct {
	base    string // directory of the .gitignore, root-relative
	pattern string
	neg     bool
	dirOnly bool
	anchor  bool
}

func parseGitignore(base string, data []byte) []ignoreRule {
	var out []ignoreRule
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimRight(line, " \r")
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		r := ignoreRule{base: base}
		if strings.HasPrefix(line, "!") {
			r.neg, line = true, line[1:]
		}
		if strings.HasSuffix(line, "/") {
			r.dirOnly, line = true, strings.TrimSuffix(line, "/")
		}
		line = strings.TrimPrefix(line, "**/")
		if strings.Contains(line, "/") {
			r.anchor, line = true, strings.TrimPrefix(line, "/")
		}
		r.pattern = line
		out = append(out, r)
	}
	return out
}

// ignored applies rules in order; the last one that matches decides.
func ignored(rules []ignoreRule, r string, dir bool) bool {
	out := false
	for _, rule := range rules {
		if rule.dirOnly && !dir {
			continue
		}
		relp := r
		if rule.base != "." {
			if !strings.HasPrefix(r, rule.base+"/") {
				continue
			}
			relp = r[len(rule.base)+1:]
		}
		var ok bool
		if rule.anchor {
			ok, _ = path.Match(rule.pattern, relp)
		} else {
			ok, _ = path.Match(rule.pattern, path.Base(relp))
		}
		if ok {
			out = !rule.neg
		}
	}
	return out
}

// Search walks in.Path for names matching a glob and lines matching a
// regular expression, within its caps.
func (s *Service) Search(ctx context.Context, in SearchInput) (SearchResult, error) {
	r, err := rel("path", in.Path)
	if err != nil {
		return SearchResult{}, err
	}
	if in.Name != "" {
		if _, err := path.Match(in.Name, ""); err != nil {
			return SearchResult{}, fault.Invalid("name", "is not a valid glob: %v", err)
		}
	}
	var re *regexp.Regexp
	if in.Content != "" {
		if re, err = regexp.Compile(in.Content); err != nil {
			return SearchResult{}, fault.Invalid("content", "is not a valid regular expression: %v", err)
		}
	}
	if in.Name == "" && re == nil {
		return SearchResult{}, fault.Invalid("name", "name or content is required")
	}
	out := SearchResult{Matches: []Match{}}
	stop := false
	var walk func(dir string, rules []ignoreRule) error
	walk = func(dir string, rules []ignoreRule) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if in.GitIgnore {
			if data, err := s.root.ReadFile(path.Join(dir, ".gitignore")); err == nil {
				rules = append(append([]ignoreRule(nil), rules...), parseGitignore(dir, data)...)
			}
		}
		d, err := s.openDir(dir)
		if err != nil {
			return err
		}
		ents, err := d.ReadDir(-1)
		d.Close()
		if err != nil {
			return err
		}
		sort.Slice(ents, func(i, j int) bool { return ents[i].Name() < ents[j].Name() })
		for _, e := range ents {
			if stop {
				return nil
			}
			name := e.Name()
			p := path.Join(dir, name)
			isDir := e.Type()&fs.ModeType == fs.ModeDir
			if !in.Hidden && strings.HasPrefix(name, ".") {
				continue
			}
			if in.GitIgnore && (name == ".git" || ignored(rules, p, isDir)) {
				continue
			}
			if isDir {
				if err := walk(p, rules); err != nil && !isSkippable(err) {
					return err
				}
				continue
			}
			if !e.Type().IsRegular() {
				continue
			}
			out.FilesVisited++
			if out.FilesVisited > in.MaxFiles {
				out.Truncated, stop = true, true
				return nil
			}
			if in.Name != "" {
				if ok, _ := path.Match(in.Name, name); !ok {
					continue
				}
			}
			if re == nil {
				out.Matches = append(out.Matches, Match{Path: apiPath(p)})
			} else {
				s.grep(p, re, in, &out)
			}
			if len(out.Matches) >= in.MaxResults {
				out.Matches = out.Matches[:in.MaxResults]
				out.Truncated, stop = true, true
			}
		}
		return nil
	}
	err = s.id.run(func() error {
		if fi, err := s.root.Stat(r); err != nil {
			return err
		} else if !fi.IsDir() {
			return fault.Errorf(fault.CodeConflict, "%s is not a directory", in.Path).WithDetails("path")
		}
		return walk(r, nil)
	})
	if err != nil {
		return SearchResult{}, fsError(in.Path, err)
	}
	return out, nil
}

func (s *Service) grep(p string, re *regexp.Regexp, in SearchInput, out *SearchResult) {
	f, fi, err := s.openRegular(p)
	if err != nil {
		return
	}
	defer f.Close()
	if fi.Size() > in.MaxFileSize {
		return
	}
	br := bufio.NewReaderSize(f, 64<<10)
	head, _ := br.Peek(8 << 10)
	if bytes.IndexByte(head, 0) >= 0 {
		return // binary
	}
	sc := bufio.NewScanner(io.LimitReader(br, in.MaxFileSize))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Bytes()
		if re.Match(line) {
			if len(line) > 500 {
				line = line[:500]
			}
			out.Matches = append(out.Matches, Match{Path: apiPath(p), Line: n, Text: string(line)})
			if len(out.Matches) >= in.MaxResults {
				return
			}
		}
	}
}
