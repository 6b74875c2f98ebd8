package projects

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"deckhand/platform"
	"deckhand/platform/auth"
	"deckhand/platform/fault"
	"deckhand/platform/proxyperm"
	"deckhand/platform/store"
)

// The secrets of a proxy permissions document (a token's value, an HS256
// secret, a password's hash) are sealed under the master key at rest, each
// bound to its document, group and field, so a copy of the store opens
// nothing and a sealed value moved to another group does not open there.
// They leave the control plane in clear only on the effective route, to
// the container's own agent; every answer to a person is masked
// (proxyperm.Document.Mask).

// sealedFormat marks a stored document whose secrets are sealed; a record
// without it predates sealing and is sealed at start (Bootstrap).
const sealedFormat = 1

// storedDoc is a document at rest.
type storedDoc struct {
	proxyperm.Document
	Sealed int `json:"sealed_format,omitempty"`
}

func docSealPurpose(key, group, field string) string {
	return "projects/proxyperm/" + key + "/" + group + "/" + field
}

// secretFields are the sealed fields of g: pointers into g.
func secretFields(g *proxyperm.Group) map[string]*string {
	switch g.Type {
	case proxyperm.TypeJWT:
		if g.Algorithm == "HS256" {
			return map[string]*string{"secret": &g.Secret}
		}
	case proxyperm.TypePassword:
		return map[string]*string{"password": &g.Password}
	case proxyperm.TypeToken:
		return map[string]*string{"value": &g.Value}
	}
	return nil
}

// seal is the stored form of d under key.
func (s *Service) seal(key string, d *proxyperm.Document) (*storedDoc, error) {
	out := &storedDoc{Document: *d, Sealed: sealedFormat}
	out.Groups = make(map[string]proxyperm.Group, len(d.Groups))
	for name, g := range d.Groups {
		for field, v := range secretFields(&g) {
			if *v == "" {
				continue
			}
			sealed, err := s.sealer.Seal(docSealPurpose(key, name, field), []byte(*v))
			if err != nil {
				return nil, err
			}
			*v = sealed
		}
		out.Groups[name] = g
	}
	return out, nil
}

// open is the document of a stored record under key.
func (s *Service) open(key string, sd *storedDoc) (*proxyperm.Document, error) {
	d := sd.Document
	if sd.Sealed == 0 {
		return &d, nil // not yet migrated: the values are clear
	}
	d.Groups = make(map[string]proxyperm.Group, len(sd.Groups))
	for name, g := range sd.Groups {
		for field, v := range secretFields(&g) {
			if *v == "" {
				continue
			}
			plain, err := s.sealer.Open(docSealPurpose(key, name, field), *v)
			if err != nil {
				return nil, fmt.Errorf("proxy permissions document %s, group %s: %w", key, name, err)
			}
			*v = string(plain)
		}
		d.Groups[name] = g
	}
	return &d, nil
}

// readDoc is the stored document under key, its secrets opened (nil when
// none).
func (s *Service) readDoc(tx *store.Tx, key string) (*proxyperm.Document, error) {
	sd, err := get[storedDoc](tx, bucketDocs, key)
	if err != nil || sd == nil {
		return nil, err
	}
	d, err := s.open(key, sd)
	if err != nil {
		return nil, err
	}
	d.ETag = proxyperm.ETag(d.FileVersion)
	return d, nil
}

// putDoc stores d under key with its secrets sealed.
func (s *Service) putDoc(tx *store.Tx, key string, d *proxyperm.Document) error {
	sd, err := s.seal(key, d)
	if err != nil {
		return err
	}
	return tx.Put(bucketDocs, key, sd)
}

// sealLegacy seals the secrets of documents stored before they were sealed
// (one transaction per document; a replica starting at the same time finds
// them sealed and leaves them).
func (s *Service) sealLegacy(ctx context.Context) error {
	var legacy []string
	err := s.db.ViewContext(ctx, func(tx *store.Tx) error {
		return tx.ForEach(bucketDocs, func(key string, raw []byte) error {
			var mark struct {
				Sealed int `json:"sealed_format"`
			}
			if err := json.Unmarshal(raw, &mark); err != nil {
				return err
			}
			if mark.Sealed == 0 {
				legacy = append(legacy, key)
			}
			return nil
		})
	})
	if err != nil {
		return err
	}
	for _, key := range legacy {
		err := s.db.UpdateContext(ctx, func(tx *store.Tx) error {
			sd, err := get[storedDoc](tx, bucketDocs, key)
			if err != nil || sd == nil || sd.Sealed != 0 {
				return err
			}
			return s.putDoc(tx, key, &sd.Document)
		})
		if err != nil {
			return err
		}
	}
	if len(legacy) > 0 {
		s.log.Info("proxy permissions secrets sealed under the master key", "documents", len(legacy))
	}
	return nil
}

var errSecretRole = &fault.Error{Code: fault.CodeForbidden,
	Message: "setting a secret (a token value, an HS256 secret or a password) needs the project's manager role or its ownership; " +
		"send <field>_configured true to keep the stored one"}

// newSecrets reports whether next holds a secret that the groups before
// the write did not hold in the same place: what only a manager or the
// owner may write.
func newSecrets(before map[string]proxyperm.Group, next *proxyperm.Document) bool {
	for name, g := range next.Groups {
		old := before[name]
		if old.Type != g.Type {
			old = proxyperm.Group{}
		}
		was := map[string]bool{}
		for _, v := range old.Secrets() {
			was[v] = true
		}
		for _, v := range g.Secrets() {
			if !was[v] {
				return true
			}
		}
	}
	return false
}

// mayWriteSecrets checks that the caller is the project's owner or a
// manager on it (the project document's routes already demand it; a
// container document is also written by operators, who may change
// everything but its secrets).
func mayWriteSecrets(ctx context.Context, tx *store.Tx, projectID string) error {
	caller, err := platform.Caller(ctx)
	if err != nil {
		return err
	}
	if caller.Kind == auth.KindAgent {
		return errSecretRole
	}
	p, err := getProject(tx, projectID)
	if err != nil {
		return err
	}
	if p == nil {
		return errors.New("the document's project is gone")
	}
	lv, err := callerLevel(tx, p, caller.UserID)
	if err != nil {
		return err
	}
	if lv < roleManager {
		return errSecretRole
	}
	return nil
}
