// Package lazyre owns regular expressions compiled at their first use
// instead of at program start. A counted repetition such as {0,127}
// compiles into a program of that many steps; compiled as package
// variables, every rule would cost every start of the binary (the agent
// in a new container, each CLI command), though most runs check few.
package lazyre

import (
	"regexp"
	"sync"
)

// Regexp is a regular expression compiled on its first match.
type Regexp struct {
	expr string
	once sync.Once
	re   *regexp.Regexp
}

// New is expr, compiled when first used; an invalid expr panics then
// (as regexp.MustCompile would at start: the packages' tests use each).
func New(expr string) *Regexp { return &Regexp{expr: expr} }

// MatchString reports whether s matches.
func (r *Regexp) MatchString(s string) bool {
	r.once.Do(func() { r.re = regexp.MustCompile(r.expr) })
	return r.re.MatchString(s)
}

// String is the expression.
func (r *Regexp) String() string { return r.expr }
