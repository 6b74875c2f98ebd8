package signing

import (
	"cmp"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// KeySource fetches the current public key set.
type KeySource func(ctx context.Context) (PublicKeySet, error)

// HTTPKeySource fetches GET <baseURL>/api/v1/meta/public-key and unwraps
// the control-plane envelope.
func HTTPKeySource(client *http.Client, baseURL string) KeySource {
	client = cmp.Or(client, http.DefaultClient)
	url := strings.TrimRight(baseURL, "/") + PublicKeyPath
	return func(ctx context.Context) (PublicKeySet, error) {
		raw, header, err := getKeySet(ctx, client, url)
		if err != nil {
			return PublicKeySet{}, err
		}
		var env struct {
			Data PublicKeySet `json:"data"`
		}
		if err := json.Unmarshal(raw, &env); err != nil {
			return PublicKeySet{}, fmt.Errorf("%s: malformed key set: %w", url, err)
		}
		if len(env.Data.Keys) == 0 {
			return PublicKeySet{}, fmt.Errorf("%s: key set has no keys", url)
		}
		// The set must carry a valid signature by one of its own keys: not
		// a trust anchor (pin keys for that), but it rejects a set that was
		// altered in transit or served by something that holds no key.
		sig, err := ParseHeader(header.Get(Header))
		if err != nil {
			return PublicKeySet{}, fmt.Errorf("%s: %w", url, err)
		}
		for _, pk := range env.Data.Keys {
			if pk.KID != sig.KID {
				continue
			}
			pub, err := pk.Decode()
			if err != nil {
				return PublicKeySet{}, fmt.Errorf("%s: %w", url, err)
			}
			if sig.Path != PublicKeyPath || !ed25519.Verify(pub, SignedData(sig.T, raw), sig.Sig) {
				return PublicKeySet{}, fmt.Errorf("%s: key set is not signed by its own key %q", url, sig.KID)
			}
			return env.Data, nil
		}
		return PublicKeySet{}, fmt.Errorf("%s: key set is signed by kid %q, which it does not contain", url, sig.KID)
	}
}

// StaticKeySource serves a fixed set (tests, pinned deployments).
func StaticKeySource(set PublicKeySet) KeySource {
	return func(context.Context) (PublicKeySet, error) { return set, nil }
}

// getKeySet GETs a key set (at most 1 MiB) and answers its body and
// headers; a status other than 200 is an error carrying the body.
func getKeySet(ctx context.Context, client *http.Client, url string) ([]byte, http.Header, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, nil, fmt.Errorf("%s answered %d: %s", url, resp.StatusCode, strings.TrimSpace(string(raw)))
	}
	return raw, resp.Header, nil
}

// HTTPKeySetFetcher fetches GET <baseURL>/api/v1/meta/public-key as it
// arrives, for a verifier that judges it itself (VerifierOptions.Fetch).
func HTTPKeySetFetcher(client *http.Client, baseURL string) func(ctx context.Context) (FetchedKeySet, error) {
	client = cmp.Or(client, http.DefaultClient)
	url := strings.TrimRight(baseURL, "/") + PublicKeyPath
	return func(ctx context.Context) (FetchedKeySet, error) {
		raw, header, err := getKeySet(ctx, client, url)
		if err != nil {
			return FetchedKeySet{}, err
		}
		sigs := append([]string(nil), header.Values(Header)...)
		sigs = append(sigs, header.Values(EndorsementHeader)...)
		if len(sigs) > MaxKeys+1 {
			sigs = sigs[:MaxKeys+1]
		}
		return FetchedKeySet{Body: raw, Signatures: sigs}, nil
	}
}
