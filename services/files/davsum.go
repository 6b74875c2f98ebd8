package files

import (
	"container/list"
	"crypto/md5"
	"crypto/sha1"
	"encoding/hex"
	"encoding/xml"
	"hash"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/net/webdav"

	"deckhand/platform/fault"
)

// ocNS is the ownCloud namespace of the checksums property that sync
// tools read (rclone's webdav backend with vendor owncloud or nextcloud).
const ocNS = "http://owncloud.org/ns"

// ocChecksums is <oc:checksums>: one <oc:checksum> holding "SHA1:<hex>
// MD5:<hex>", as ownCloud answers it.
var ocChecksums = xml.Name{Space: ocNS, Local: "checksums"}

// fileSums are a file's digests for the validator they were computed at:
// its ETag (inode, mtime and size) and its ctime.
type fileSums struct {
	etag, sha1, md5 string
}

// sumCache keeps the digests of the most recently asked files, so a sync
// tool that lists a tree again reads no file that is unchanged (same path,
// inode, size, mtime and ctime). It
// holds at most max entries, the least recently used going first.
type sumCache struct {
	mu    sync.Mutex
	max   int
	order *list.List // of *sumEntry, most recent first
	byKey map[string]*list.Element
}

type sumEntry struct {
	path string
	sums fileSums
}

func newSumCache(max int) *sumCache {
	return &sumCache{max: max, order: list.New(), byKey: map[string]*list.Element{}}
}

func (c *sumCache) get(path, etag string) (fileSums, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byKey[path]
	if !ok {
		return fileSums{}, false
	}
	e := el.Value.(*sumEntry)
	if e.sums.etag != etag {
		return fileSums{}, false
	}
	c.order.MoveToFront(el)
	return e.sums, true
}

func (c *sumCache) put(path string, s fileSums) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byKey[path]; ok {
		el.Value.(*sumEntry).sums = s
		c.order.MoveToFront(el)
		return
	}
	c.byKey[path] = c.order.PushFront(&sumEntry{path: path, sums: s})
	for c.order.Len() > c.max {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.byKey, last.Value.(*sumEntry).path)
	}
}

// ocChecksumProp is the oc:checksums property of the open regular file f
// at p (an API path): its SHA-1 and MD5 from the cache while its ETag
// holds, else read once for both (through ReadAt: f's offset stays). A
// file written while it is read is neither cached nor answered.
func (s *Service) ocChecksumProp(f *os.File, p string) (webdav.Property, bool) {
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return webdav.Property{}, false
	}
	etag := etagOf(fi) + strconv.FormatInt(changeTime(fi), 16)
	got, ok := s.sums.get(p, etag)
	if !ok {
		h1, h5 := sha1.New(), md5.New()
		if _, err := io.Copy(io.MultiWriter(h1, h5), io.NewSectionReader(f, 0, fi.Size())); err != nil {
			return webdav.Property{}, false
		}
		after, err := f.Stat()
		if err != nil || etagOf(after)+strconv.FormatInt(changeTime(after), 16) != etag {
			return webdav.Property{}, false
		}
		got = fileSums{etag: etag, sha1: hex.EncodeToString(h1.Sum(nil)), md5: hex.EncodeToString(h5.Sum(nil))}
		s.sums.put(p, got)
	}
	inner := `<oc:checksum xmlns:oc="` + ocNS + `">SHA1:` + got.sha1 + " MD5:" + got.md5 + `</oc:checksum>`
	return webdav.Property{XMLName: ocChecksums, InnerXML: []byte(inner)}, true
}

// asksChecksums reports whether a PROPFIND body names oc:checksums; only
// then are digests computed (allprop leaves them out: it would read every
// file of a listing).
func asksChecksums(raw []byte) bool {
	d := xml.NewDecoder(strings.NewReader(string(raw)))
	for {
		tok, err := d.Token()
		if err != nil {
			return false
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name == ocChecksums {
			return true
		}
	}
}

// ocChecksum is a PUT's OC-Checksum header ("SHA1:<hex>" or "MD5:<hex>",
// as rclone and the ownCloud clients send it): the digest the content
// must have. Other algorithms (ADLER32) are not checked.
type ocChecksum struct {
	algo string // SHA1 or MD5
	sum  string // lower-case hex
}

func parseOCChecksum(v string) (*ocChecksum, error) {
	algo, sum, ok := strings.Cut(strings.TrimSpace(v), ":")
	if !ok {
		return nil, fault.Invalid("OC-Checksum", "must be <algorithm>:<hex digest>, e.g. SHA1:%s", strings.Repeat("0", 40))
	}
	algo = strings.ToUpper(algo)
	want := map[string]int{"SHA1": sha1.Size, "MD5": md5.Size}[algo]
	if want == 0 {
		return nil, nil
	}
	if b, err := hex.DecodeString(sum); err != nil || len(b) != want {
		return nil, fault.Invalid("OC-Checksum", "a %s digest must be %d hexadecimal digits", algo, 2*want)
	}
	return &ocChecksum{algo: algo, sum: strings.ToLower(sum)}, nil
}

func (c *ocChecksum) hash() hash.Hash {
	if c.algo == "MD5" {
		return md5.New()
	}
	return sha1.New()
}
