package projects

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/crypto/ssh"

	"deckhand/control/domain"
	"deckhand/control/events"
	"deckhand/platform"
	"deckhand/platform/fault"
	"deckhand/platform/store"
)

// A container's SSH keys are the public keys its agent writes into the
// authorized keys of the image's user (the agent's --run-as user), for an
// ssh server in the container reached through the tunnel (program ssh):
// the control plane keeps them, and the agent polls the effective list
// with its agent token (ETag, 304 when unchanged) and rewrites its block of
// the file.

// SSHKeysEffectivePath is the route the agent polls.
const SSHKeysEffectivePath = "/api/v1/containers/{id}/ssh-keys/effective"

// Buckets and bounds of SSH keys.
const (
	bucketSSHKeys   = "projects_ssh_keys" // container/key id → record
	maxSSHKeys      = 32
	maxSSHKeyLength = 16 << 10
)

// sshKeyRec is a stored key; PublicKey is the authorized-keys form the
// agent writes (type, base64, the name as comment).
type sshKeyRec struct {
	ID          string    `json:"id"`
	ContainerID string    `json:"container_id"`
	Name        string    `json:"name"`
	PublicKey   string    `json:"public_key"`
	Fingerprint string    `json:"fingerprint"`
	CreatedAt   time.Time `json:"created_at"`
	CreatedBy   string    `json:"created_by"`
}

// SSHKey is a key as answered.
type SSHKey = sshKeyRec

// SSHKeyInput is the body of POST /api/v1/containers/{id}/ssh-keys.
type SSHKeyInput struct {
	Name      string `json:"name" required:"true" doc:"a label for the key: 1-64 characters, no control characters"`
	PublicKey string `json:"public_key" required:"true" doc:"one public key in authorized_keys form (ssh-ed25519 AAAA... comment); options before the type are refused"`
}

// normalize checks the input and answers the key's authorized-keys line
// and fingerprint.
func (in *SSHKeyInput) normalize() (line, fingerprint string, err error) {
	in.Name = strings.TrimSpace(in.Name)
	if in.Name == "" || utf8.RuneCountInString(in.Name) > 64 || strings.ContainsFunc(in.Name, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return "", "", fault.Invalid("name", "must be 1-64 characters without control characters")
	}
	raw := strings.TrimSpace(in.PublicKey)
	if raw == "" || len(raw) > maxSSHKeyLength || strings.ContainsAny(raw, "\r\n") {
		return "", "", fault.Invalid("public_key", "must be one public key on one line, at most %d bytes", maxSSHKeyLength)
	}
	pub, _, options, rest, err := ssh.ParseAuthorizedKey([]byte(raw))
	if err != nil {
		return "", "", fault.Invalid("public_key", "is not an SSH public key in authorized_keys form (ssh-ed25519 AAAA... comment)")
	}
	if len(options) > 0 || len(strings.TrimSpace(string(rest))) > 0 {
		return "", "", fault.Invalid("public_key", "must be one key without options")
	}
	if pub.Type() == ssh.KeyAlgoRSA {
		if ck, ok := pub.(ssh.CryptoPublicKey); ok {
			if k, ok := ck.CryptoPublicKey().(interface{ Size() int }); ok && k.Size()*8 < 2048 {
				return "", "", fault.Invalid("public_key", "an RSA key must have at least 2048 bits")
			}
		}
	}
	// The comment is the key's name, sanitized to one word run.
	comment := strings.Join(strings.Fields(in.Name), "_")
	line = strings.TrimSpace(string(ssh.MarshalAuthorizedKey(pub))) + " " + comment
	return line, ssh.FingerprintSHA256(pub), nil
}

// SSHKeyCreate is POST /api/v1/containers/{id}/ssh-keys.
type SSHKeyCreate struct {
	ContainerRef
	Body SSHKeyInput
}

// SSHKeyRef names one key of a container.
type SSHKeyRef struct {
	ContainerRef
	KeyID string `path:"keyId" doc:"an SSH key id: 1-40 lowercase letters or digits"`
}

// SSHKeyList is the list answer.
type SSHKeyList struct {
	Keys []SSHKey `json:"keys"`
}

func containerSSHKeys(tx *store.Tx, id string) ([]sshKeyRec, error) {
	out, err := store.Under[sshKeyRec](tx, bucketSSHKeys, id+"/")
	slices.SortFunc(out, func(a, b sshKeyRec) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, err
}

// AddSSHKey adds a public key to container id.
func (s *Service) AddSSHKey(ctx context.Context, req SSHKeyCreate) (*SSHKey, error) {
	id, in := req.ID, req.Body
	line, fp, err := in.normalize()
	if err != nil {
		return nil, err
	}
	caller, err := platform.Caller(ctx)
	if err != nil {
		return nil, err
	}
	rec := sshKeyRec{ID: newID(), ContainerID: id, Name: in.Name, PublicKey: line, Fingerprint: fp, CreatedAt: s.now(), CreatedBy: caller.UserID}
	return domain.Transact(ctx, s.db.UpdateContext, "add the SSH key", func(tx *store.Tx) (*SSHKey, error) {
		c, err := findContainer(tx, id)
		if err != nil {
			return nil, err
		}
		have, err := containerSSHKeys(tx, id)
		if err != nil {
			return nil, err
		}
		if len(have) >= maxSSHKeys {
			return nil, fault.Errorf(fault.CodeConflict, "public_key: the container already has %d SSH keys, the most it may hold", maxSSHKeys)
		}
		for _, k := range have {
			if k.Fingerprint == fp {
				return nil, &fault.Error{Code: fault.CodeConflict, Field: "public_key", Details: "public_key",
					Message: "public_key: the container already has this key (" + k.Name + ")"}
			}
		}
		if err := tx.Put(bucketSSHKeys, id+"/"+rec.ID, rec); err != nil {
			return nil, err
		}
		return &rec, s.event(tx, ctx, events.Event{EventType: "container.ssh_key.added", ResourceType: "container",
			ResourceID: id, ProjectID: c.ProjectID, ContainerID: id})
	})
}

// ListSSHKeys lists container id's keys, oldest first.
func (s *Service) ListSSHKeys(ctx context.Context, ref ContainerRef) (*SSHKeyList, error) {
	return domain.Transact(ctx, s.db.ViewContext, "list the SSH keys", func(tx *store.Tx) (*SSHKeyList, error) {
		keys, err := containerSSHKeys(tx, ref.ID)
		return &SSHKeyList{Keys: nonNil(keys)}, err
	})
}

// RemoveSSHKey deletes one key of container id.
func (s *Service) RemoveSSHKey(ctx context.Context, ref SSHKeyRef) error {
	id := ref.ID
	if err := validID("keyId", ref.KeyID); err != nil {
		return err
	}
	err := s.db.UpdateContext(ctx, func(tx *store.Tx) error {
		var r sshKeyRec
		ok, err := tx.Get(bucketSSHKeys, id+"/"+ref.KeyID, &r)
		if err != nil {
			return err
		}
		if !ok {
			return fault.NotFound("SSH key", ref.KeyID)
		}
		if err := tx.Delete(bucketSSHKeys, id+"/"+ref.KeyID); err != nil {
			return err
		}
		ev := events.Event{EventType: "container.ssh_key.removed", ResourceType: "container", ResourceID: id, ContainerID: id}
		if c, err := getContainer(tx, id); err != nil {
			return err
		} else if c != nil {
			ev.ProjectID = c.ProjectID
		}
		return s.event(tx, ctx, ev)
	})
	return fault.Wrap("remove the SSH key", err)
}

// dropSSHKeys deletes every key of container id (in tx).
func dropSSHKeys(tx *store.Tx, id string) error {
	keys, err := containerSSHKeys(tx, id)
	if err != nil {
		return err
	}
	for _, k := range keys {
		if err := tx.Delete(bucketSSHKeys, id+"/"+k.ID); err != nil {
			return err
		}
	}
	return nil
}

// EffectiveSSHKeys is what the agent writes: the keys' lines, oldest
// first, and a version naming them.
type EffectiveSSHKeys struct {
	Keys    []string `json:"keys"`
	Version string   `json:"version"`
}

// EffectiveSSHKeysAnswer is the agent's poll answer; 304 without a body
// when it holds the version.
type EffectiveSSHKeysAnswer struct {
	ETag   string `header:"ETag" doc:"ssh-keys:<version>, quoted"`
	Status int
	Body   *EffectiveSSHKeys
}

// PollSSHKeys answers the agent of container id its keys.
func (s *Service) PollSSHKeys(ctx context.Context, in Poll) (*EffectiveSSHKeysAnswer, error) {
	d := &EffectiveSSHKeys{Keys: []string{}}
	err := s.db.ViewContext(ctx, func(tx *store.Tx) error {
		keys, err := containerSSHKeys(tx, in.ID)
		for _, k := range keys {
			d.Keys = append(d.Keys, k.PublicKey)
		}
		return err
	})
	if err != nil {
		return nil, fault.Wrap("read the SSH keys", err)
	}
	sum := sha256.Sum256([]byte(strings.Join(d.Keys, "\n")))
	d.Version = hex.EncodeToString(sum[:8])
	out := &EffectiveSSHKeysAnswer{}
	out.ETag, out.Status, out.Body = polled(in, "ssh-keys:"+d.Version, d)
	return out, nil
}
