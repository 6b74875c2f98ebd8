package process

import (
	"context"
	"encoding/base64"
	"unicode/utf8"

	"deckhand/platform/fault"
	"deckhand/services/process/outlog"
)

const (
	defaultPageBytes = 1 << 20
	maxPageBytes     = 16 << 20
)

// Output answers a page of a process's output from an offset.
func (s *Service) Output(ctx context.Context, in OutputInput) (OutputPage, error) {
	p, err := s.get(in.ID)
	if err != nil {
		return OutputPage{}, err
	}
	if err := checkSince(p, in.Since); err != nil {
		return OutputPage{}, err
	}
	max := int(in.MaxBytes)
	if max <= 0 {
		max = defaultPageBytes
	}
	c := p.log.Cursor(in.Since)
	defer c.Close()
	page := OutputPage{Chunks: []Chunk{}}
	for got := int64(0); got < int64(max); {
		chunks, gap, done, _, held := readText(c, max-int(got))
		if gap != nil && page.Gap == nil && got == 0 {
			page.Gap = gap
		}
		if len(chunks) == 0 {
			page.Done = done
			break
		}
		page.Chunks = append(page.Chunks, chunks...)
		got += chunks[len(chunks)-1].end - chunks[0].Offset
		if held > 0 {
			break // the next page starts with the incomplete character
		}
	}
	page.NextOffset = c.Pos
	page.Process = p.snapshot()
	if page.Process.OutputComplete && c.Pos >= page.Process.OutputBytes {
		page.Done = true
	}
	return page, nil
}

// checkSince refuses an offset past the end of the output.
func checkSince(p *process, since int64) error {
	if _, _, total, _, _ := p.log.Stats(); since > total {
		return fault.Invalid("since", "is past the end of the output (%d bytes so far)", total)
	}
	return nil
}

func sum(pieces []outlog.Chunk) int64 {
	n := int64(0)
	for _, p := range pieces {
		n += int64(len(p.Data))
	}
	return n
}

// readText reads up to max bytes at c as text chunks (encodeChunks).
// The start of a character whose rest has not been written yet stays
// unread (held says how many bytes) unless the output is complete; one
// whose rest lies past a segment's end is joined with it.
func readText(c *outlog.Cursor, max int) (chunks []Chunk, gap *Gap, done bool, wait <-chan struct{}, held int64) {
	pieces, g, done, wait := c.Next(max)
	gap = gapOf(g)
	for len(pieces) > 0 {
		out, used := encodeChunks(pieces, c.AtEnd())
		if used > 0 {
			held = sum(pieces) - used
			c.Pos -= held
			return out, gap, false, nil, held
		}
		// Nothing but the start of a character: take what follows too.
		carry := outlog.Chunk{Off: pieces[0].Off, Stream: pieces[0].Stream}
		for _, p := range pieces {
			carry.Data = append(carry.Data, p.Data...)
		}
		end := c.Pos
		more, g2, _, _ := c.Next(max)
		switch {
		case g2 != nil:
			// Its rest is no longer kept: the start goes as it is, and
			// the next read reports the gap.
			c.Pos = end
			out, _ := encodeChunks([]outlog.Chunk{carry}, true)
			return out, gap, false, nil, 0
		case len(more) == 0:
			held = int64(len(carry.Data))
			c.Pos = end - held
			return nil, gap, false, nil, held
		}
		pieces = append([]outlog.Chunk{carry}, more...)
	}
	return nil, gap, done, wait, 0
}

// encodeChunks turns pieces into messages, one per run of one stream:
// UTF-8 text when the bytes are, else base64. Unless final, an incomplete
// character at the very end is left out (used says how many bytes were
// taken), so text cut between two reads still arrives as text.
func encodeChunks(pieces []outlog.Chunk, final bool) (out []Chunk, used int64) {
	for i := 0; i < len(pieces); {
		j := i + 1
		for j < len(pieces) && pieces[j].Stream == pieces[i].Stream {
			j++
		}
		data := pieces[i].Data
		if j-i > 1 {
			data = make([]byte, 0, sum(pieces[i:j]))
			for _, p := range pieces[i:j] {
				data = append(data, p.Data...)
			}
		}
		c := Chunk{Type: "output", Stream: outlog.StreamName(pieces[i].Stream), Offset: pieces[i].Off}
		switch {
		case utf8.Valid(data):
			c.Data = string(data)
		case j == len(pieces) && !final && len(trimPartialRune(data)) < len(data):
			t := trimPartialRune(data)
			if len(t) == 0 {
				return out, used
			}
			c.Data = string(t)
			data = t
		default:
			c.Data, c.Encoding = base64.StdEncoding.EncodeToString(data), encodingBase64
		}
		c.end = c.Offset + int64(len(data))
		out = append(out, c)
		used += int64(len(data))
		i = j
	}
	return out, used
}
