// Package meta owns the control plane's public discovery endpoints: the
// regions a free-tier server can be placed in and the signing key set that
// clients and agents verify responses and claims with. Both answer without a
// credential.
package meta

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"strings"

	"deckhand/control/domain"
	clockpkg "deckhand/platform/clock"
	"deckhand/platform/fault"
	"deckhand/platform/signing"
)

// Region is one region availability record (docs/spec/interface.md).
type Region struct {
	Region    string `json:"region" required:"true"`
	Country   string `json:"country" required:"true"`
	City      string `json:"city" required:"true"`
	Available bool   `json:"available" required:"true"`
}

// DefaultRegions are served when no regions file exists. The first
// available one is the signup default when nothing better is known.
var DefaultRegions = []Region{
	{Region: "eu-central-1", Country: "DE", City: "Frankfurt", Available: true},
	{Region: "eu-north-1", Country: "FI", City: "Helsinki", Available: true},
	{Region: "us-east-1", Country: "US", City: "Ashburn", Available: true},
	{Region: "us-west-1", Country: "US", City: "Hillsboro", Available: true},
	{Region: "ap-southeast-1", Country: "SG", City: "Singapore", Available: false},
}

// LoadRegions reads a regions file: a JSON array of region records, or an
// object {"regions": [...]}. When path is empty or, with optional set, the
// file does not exist, it returns DefaultRegions.
func LoadRegions(path string, optional bool) ([]Region, error) {
	if path == "" {
		return append([]Region(nil), DefaultRegions...), nil
	}
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) && optional {
		return append([]Region(nil), DefaultRegions...), nil
	}
	if err != nil {
		return nil, fmt.Errorf("regions file: %w", err)
	}
	raw = bytes.TrimSpace(raw)
	var list []Region
	if len(raw) > 0 && raw[0] == '{' {
		var doc struct {
			Regions []Region `json:"regions"`
		}
		err = strictJSON(raw, &doc)
		list = doc.Regions
	} else {
		err = strictJSON(raw, &list)
	}
	if err != nil {
		return nil, fmt.Errorf("regions file %s: %v", path, err)
	}
	if len(list) == 0 {
		return nil, fmt.Errorf("regions file %s: lists no regions", path)
	}
	seen := map[string]bool{}
	for i, r := range list {
		if strings.TrimSpace(r.Region) == "" {
			return nil, fmt.Errorf("regions file %s: regions[%d].region is empty", path, i)
		}
		if seen[r.Region] {
			return nil, fmt.Errorf("regions file %s: region %q listed twice", path, r.Region)
		}
		seen[r.Region] = true
	}
	return list, nil
}

func strictJSON(raw []byte, dst any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("unexpected data after the JSON value")
	}
	return nil
}

// Config is the meta domain's config section.
type Config struct {
	Regions []Region
	// Keys is nil when response signing is off; the public-key endpoint
	// then answers 503 SIGNING_NOT_CONFIGURED.
	Keys *signing.KeySet
}

// Service serves the discovery endpoints.
type Service struct {
	regions []Region
	keys    *signing.KeySet
	clock   clockpkg.Clock
}

// New builds the meta domain.
func New(env domain.Env[Config]) (*Service, error) {
	clock := env.Clock
	if clock == nil {
		clock = clockpkg.SystemClock{}
	}
	return &Service{regions: env.Config.Regions, keys: env.Config.Keys, clock: clock}, nil
}

// RegionsResponse is data of available-regions.
type RegionsResponse struct {
	Regions []Region `json:"regions" required:"true"`
}

// Regions is the region availability list.
func (s *Service) Regions(context.Context) (RegionsResponse, error) {
	return RegionsResponse{Regions: s.regions}, nil
}

var errSigningOff = &fault.Error{Code: fault.CodeSigningNotConfigured,
	Message: "Response signing is not configured on this server"}

// KeySetAnswer is the key set as served: every key of the set signs the
// very bytes sent (EndorsementHeader), so a verifier that trusts any one
// of them accepts the set (signing.AcceptKeySet).
type KeySetAnswer struct {
	Body signing.PublicKeySet
	keys *signing.KeySet
	at   int64
}

// BodyHeaders endorses the envelope written.
func (a KeySetAnswer) BodyHeaders(body []byte) http.Header {
	return http.Header{signing.EndorsementHeader: a.keys.Endorse(a.at, signing.PublicKeyPath, body)}
}

// PublicKeys is the signing key set with its endorsements.
func (s *Service) PublicKeys(context.Context) (KeySetAnswer, error) {
	if s.keys == nil {
		return KeySetAnswer{}, errSigningOff
	}
	return KeySetAnswer{Body: s.keys.PublicSet(), keys: s.keys, at: s.clock.Now().Unix()}, nil
}
