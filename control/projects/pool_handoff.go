package projects

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"deckhand/platform/store"
	"deckhand/platform/tokenseal"
)

// The claimed container's token reaches its agent over the agent's own
// gateway, sealed under the pool token's hash (platform/tokenseal; the
// agent's side is agent/access: handoff.go): one request to an agent
// already thawed, which answers once it has synced with the new token,
// where writing the file through the engine's archive API mounts the
// container's filesystem (half a second and more on a busy engine). An
// agent that does not take it (an older agent, a hand-over that failed)
// gets the token written into its file through the engine instead.

// handoffTimeout bounds a hand-over: the agent's sync with its new token
// included (the agent gives that 5 s).
const handoffTimeout = 8 * time.Second

// poolTokenHash is the hash of pool member id's token in force (in tx),
// the key its hand-over is sealed under; "" when it has none.
func poolTokenHash(tx *store.Tx, id string) (string, error) {
	recs, err := store.Under[agentTokenRec](tx, bucketAgentTokens, id+"/")
	if err != nil || len(recs) == 0 {
		return "", err
	}
	return recs[len(recs)-1].Hash, nil
}

// handOver posts token, sealed under prevHash, to container id's agent at
// addr: nil once the agent has put it in force and synced with it.
func (s *Service) handOver(ctx context.Context, addr, id, prevHash, token string) error {
	sealed, err := tokenseal.Seal(prevHash, id, token)
	if err != nil {
		return err
	}
	body, err := json.Marshal(sealed)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+tokenseal.Path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	// The agent answers after a round trip to the control plane: more
	// than a health check's time on a busy machine.
	cl := &http.Client{Timeout: handoffTimeout, Transport: s.lc.rt.HealthClient.Transport}
	resp, err := cl.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("POST %s%s answered %d: %s", addr, tokenseal.Path, resp.StatusCode, bytes.TrimSpace(msg))
	}
	return nil
}
