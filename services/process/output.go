package process

import (
	"context"
	"encoding/base64"
	"unicode/utf8"

	"deckhand/platform/fault"
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
	c := p.log.cursor(in.Since)
	defer c.close()
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
	page.NextOffset = c.pos
	page.Process = p.snapshot()
	if page.Process.OutputComplete && c.pos >= page.Process.OutputBytes {
		page.Done = true
	}
	return page, nil
}

// checkSince refuses an offset past the end of the output.
func checkSince(p *process, since int64) error {
	if _, _, total, _, _ := p.log.stats(); since > total {
		return fault.Invalid("since", "is past the end of the output (%d bytes so far)", total)
	}
	return nil
}

func sum(pieces []chunk) int64 {
	n := int64(0)
	for _, p := range pieces {
		n += int64(len(p.data))
	}
	return n
}

// readText reads up to max bytes at c as text chunks (encodeChunks).
// The start of a character whose rest has not been written yet stays
// unread (held says how many bytes) unless the output is complete; one
// whose rest lies past a segment's end is joined with it.
func readText(c *cursor, max int) (chunks []Chunk, gap *Gap, done bool, wait <-chan struct{}, held int64) {
	pieces, gap, done, wait := c.next(max)
	for len(pieces) > 0 {
		out, used := encodeChunks(pieces, c.atEnd())
		if used > 0 {
			held = sum(pieces) - used
			c.pos -= held
			return out, gap, false, nil, held
		}
		// Nothing but the start of a character: take what follows too.
		carry := chunk{off: pieces[0].off, stream: pieces[0].stream}
		for _, p := range pieces {
			carry.data = append(carry.data, p.data...)
		}
		end := c.pos
		more, g2, _, _ := c.next(max)
		switch {
		case g2 != nil:
			// Its rest is no longer kept: the start goes as it is, and
			// the next read reports the gap.
			c.pos = end
			out, _ := encodeChunks([]chunk{carry}, true)
			return out, gap, false, nil, 0
		case len(more) == 0:
			held = int64(len(carry.data))
			c.pos = end - held
			return nil, gap, false, nil, held
		}
		pieces = append([]chunk{carry}, more...)
	}
	return nil, gap, done, wait, 0
}

// encodeChunks turns pieces into messages, one per run of one stream:
// UTF-8 text when the bytes are, else base64. Unless final, an incomplete
// character at the very end is left out (used says how many bytes were
// taken), so text cut between two reads still arrives as text.
func encodeChunks(pieces []chunk, final bool) (out []Chunk, used int64) {
	for i := 0; i < len(pieces); {
		j := i + 1
		for j < len(pieces) && pieces[j].stream == pieces[i].stream {
			j++
		}
		data := pieces[i].data
		if j-i > 1 {
			data = make([]byte, 0, sum(pieces[i:j]))
			for _, p := range pieces[i:j] {
				data = append(data, p.data...)
			}
		}
		c := Chunk{Type: "output", Stream: streamName(pieces[i].stream), Offset: pieces[i].off}
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
