package process

import (
	"testing"

	"deckhand/services/process/outlog"
)

func TestEncodeChunksLeavesAPartialCharacter(t *testing.T) {
	t.Parallel()
	pieces := []outlog.Chunk{{Off: 0, Stream: outlog.Stdout, Data: []byte("ab\xe2\x82")}}
	out, used := encodeChunks(pieces, false)
	if used != 2 || len(out) != 1 || out[0].Data != "ab" || out[0].end != 2 {
		t.Fatalf("%+v %d", out, used)
	}
	out, used = encodeChunks(pieces, true)
	if used != 4 || out[0].Encoding != "base64" {
		t.Fatalf("%+v %d", out, used)
	}
}
