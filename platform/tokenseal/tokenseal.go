// Package tokenseal owns the sealed hand-over of a new agent token to an
// agent that still holds its previous one: the control plane, which keeps
// only the SHA-256 of a token, seals the new token under a key derived
// from that hash and the container's id; the agent, which holds the
// previous token itself, derives the same key and opens it. Nobody who
// knows neither the previous token nor its stored hash reads or forges a
// hand-over, and one sealed for a container opens in no other (the id is
// both in the key and the authenticated data).
package tokenseal

import (
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	"deckhand/platform/secrets"
)

// Path is the agent gateway's route that takes a sealed hand-over (POST,
// JSON Sealed).
const Path = "/_agent/identity"

// Sealed is a new token sealed for one container.
type Sealed struct {
	ContainerID string `json:"container_id"`
	Nonce       []byte `json:"nonce"`
	Box         []byte `json:"sealed"`
}

// Hash is the SHA-256 of token in hex, as the control plane stores it.
func Hash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

func aead(prevHash, containerID string) (cipher.AEAD, error) {
	return secrets.AEAD([]byte(prevHash), "deckhand agent token hand-over "+containerID)
}

// Seal seals token for containerID's agent, whose token in force has
// hash prevHash (Hash).
func Seal(prevHash, containerID, token string) (Sealed, error) {
	g, err := aead(prevHash, containerID)
	if err != nil {
		return Sealed{}, err
	}
	nonce := make([]byte, g.NonceSize())
	_, _ = rand.Read(nonce)
	return Sealed{ContainerID: containerID, Nonce: nonce, Box: g.Seal(nil, nonce, []byte(token), []byte(containerID))}, nil
}

// ErrNotOpened is a hand-over that is not sealed under the agent's token
// in force for its container.
var ErrNotOpened = errors.New("the hand-over is not sealed for this agent's token and container")

// Open opens s with prev, the token in force in containerID's agent.
func Open(prev, containerID string, s Sealed) (string, error) {
	if s.ContainerID != containerID {
		return "", fmt.Errorf("%w (it names container %q)", ErrNotOpened, s.ContainerID)
	}
	g, err := aead(Hash(prev), containerID)
	if err != nil {
		return "", err
	}
	if len(s.Nonce) != g.NonceSize() {
		return "", ErrNotOpened
	}
	tok, err := g.Open(nil, s.Nonce, s.Box, []byte(containerID))
	if err != nil {
		return "", ErrNotOpened
	}
	return string(tok), nil
}
