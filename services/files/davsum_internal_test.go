package files

import (
	"strconv"
	"testing"
)

// The checksum cache holds at most its bound, drops the least recently
// used first and answers only for the ETag it was filled at.
func TestSumCacheIsBounded(t *testing.T) {
	t.Parallel()
	c := newSumCache(2)
	for i := range 3 {
		p := "/f" + strconv.Itoa(i)
		c.put(p, fileSums{etag: "e" + p, sha1: "s" + p})
		if i == 1 {
			c.get("/f0", "e/f0") // /f0 is now the most recent
		}
	}
	if n := c.order.Len(); n != 2 {
		t.Fatalf("%d entries, want 2", n)
	}
	if _, ok := c.get("/f1", "e/f1"); ok {
		t.Error("the least recently used entry stayed")
	}
	if got, ok := c.get("/f0", "e/f0"); !ok || got.sha1 != "s/f0" {
		t.Errorf("/f0: %v %v", got, ok)
	}
	if _, ok := c.get("/f2", "another"); ok {
		t.Error("answered for another ETag")
	}
}
