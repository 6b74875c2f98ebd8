package files

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"

	"deckhand/platform/fault"
)

// Checksum is a regular file's SHA-256 with the validator it was computed
// for, so a client can tell that bytes it downloaded (whose ETag it got
// with them) are the bytes that were hashed.
type Checksum struct {
	Path   string `json:"path" required:"true"`
	Size   int64  `json:"size" required:"true"`
	ETag   string `json:"etag" required:"true" doc:"the file's ETag when it was hashed (as the download answers it)"`
	SHA256 string `json:"sha256" required:"true" doc:"hex SHA-256 of the content"`
}

// ChecksumPath answers the SHA-256 of the file at in.Path. The file is stat'ed before and after
// hashing through the same descriptor; a write in between answers 409
// CONFLICT rather than a hash of neither version.
func (s *Service) ChecksumPath(_ context.Context, in PathQuery) (Checksum, error) {
	p := in.Path
	f, fi, err := s.open(p)
	if err != nil {
		return Checksum{}, err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return Checksum{}, fsError(p, err)
	}
	after, err := f.Stat()
	if err != nil {
		return Checksum{}, fsError(p, err)
	}
	if etagOf(after) != etagOf(fi) {
		return Checksum{}, fault.Errorf(fault.CodeConflict, "%s changed while it was hashed; ask again", p).WithDetails("path")
	}
	r, _ := rel("path", p)
	return Checksum{Path: apiPath(r), Size: fi.Size(), ETag: etagOf(fi), SHA256: hex.EncodeToString(h.Sum(nil))}, nil
}
