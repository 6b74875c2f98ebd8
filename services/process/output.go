package process

import (
	"context"
	"encoding/base64"
	"unicode/utf8"

	"deckhand/platform"
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
	got := 0
	for got < max {
		pieces, gap, done, _ := c.next(max - got)
		if gap != nil && page.Gap == nil && got == 0 {
			page.Gap = gap
		}
		if len(pieces) == 0 {
			page.Done = done
			break
		}
		chunks, used := encodeChunks(pieces, c.atEnd())
		page.Chunks = append(page.Chunks, chunks...)
		got += int(used)
		if back := sum(pieces) - used; back > 0 {
			// An incomplete character at the end: the next page starts
			// with it.
			c.pos -= back
			break
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
		return platform.Invalid("since", "is past the end of the output (%d bytes so far)", total)
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
