package curl

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// httpOnlyPrefix marks an HttpOnly cookie in curl's jars.
const httpOnlyPrefix = "#HttpOnly_"

// cookie is one line of a jar.
type cookie struct {
	Domain            string
	IncludeSubdomains bool
	Path              string
	Secure            bool
	Expires           int64 // Unix seconds; 0 = session cookie
	Name              string
	Value             string
	HTTPOnly          bool
}

// parseJar reads a Netscape cookie file. Comments and blank lines are
// skipped; a malformed line is an error naming its number (never its
// content, which may hold a value).
func parseJar(r io.Reader) ([]cookie, error) {
	var out []cookie
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimRight(sc.Text(), "\r")
		if strings.TrimSpace(line) == "" {
			continue
		}
		c := cookie{}
		if strings.HasPrefix(line, httpOnlyPrefix) {
			c.HTTPOnly = true
			line = line[len(httpOnlyPrefix):]
		} else if strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, "\t")
		if len(f) == 6 { // an empty value may lose its tab
			f = append(f, "")
		}
		if len(f) != 7 {
			return nil, fmt.Errorf("line %d: want 7 tab-separated fields, got %d", n, len(f))
		}
		c.Domain, c.IncludeSubdomains, c.Path, c.Secure = f[0], strings.EqualFold(f[1], "TRUE"), f[2], strings.EqualFold(f[3], "TRUE")
		exp, err := strconv.ParseInt(f[4], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("line %d: expiry is not a number", n)
		}
		c.Expires, c.Name, c.Value = exp, f[5], f[6]
		out = append(out, c)
	}
	return out, sc.Err()
}

// formatJar writes cookies the way curl does.
func formatJar(cs []cookie) []byte {
	var b bytes.Buffer
	b.WriteString("# Netscape HTTP Cookie File\n# https://curl.se/docs/http-cookies.html\n# Written by deckhand; curl reads and rewrites it.\n\n")
	for _, c := range cs {
		if c.HTTPOnly {
			b.WriteString(httpOnlyPrefix)
		}
		fmt.Fprintf(&b, "%s\t%s\t%s\t%s\t%d\t%s\t%s\n", c.Domain, tf(c.IncludeSubdomains), c.Path, tf(c.Secure), c.Expires, c.Name, c.Value)
	}
	return b.Bytes()
}

func tf(b bool) string {
	if b {
		return "TRUE"
	}
	return "FALSE"
}

func (c cookie) expired(now time.Time) bool { return c.Expires != 0 && c.Expires < now.Unix() }
