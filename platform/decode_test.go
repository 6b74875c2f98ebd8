package platform_test

import (
	"errors"
	"testing"

	"deckhand/platform"
	"deckhand/platform/fault"
)

type decodeInner struct {
	Cmd  []string `json:"cmd"`
	Deep struct {
		N int `json:"n"`
	} `json:"deep"`
}

type decodeOuter struct {
	decodeInner
	Max int `json:"max"`
}

// A type error inside an embedded struct names the body's field, not the
// Go path through the embedding (encoding/json reports decodeInner.cmd).
func TestDecodeNamesEmbeddedFieldsAsTheBodyHasThem(t *testing.T) {
	t.Parallel()
	for body, field := range map[string]string{
		`{"cmd":"x"}`:           "cmd",
		`{"deep":{"n":"x"}}`:    "deep.n",
		`{"max":"x"}`:           "max",
		`{"cmd":[1]}`:           "cmd",
		`{"deep":{"n":[true]}}`: "deep.n",
	} {
		var v decodeOuter
		err := platform.DecodeBytes([]byte(body), &v)
		var pe *fault.Error
		if !errors.As(err, &pe) || pe.Details != field || pe.Field != field {
			t.Errorf("%s: %v, want the field %s", body, err, field)
		}
	}
}
