package process

import (
	"context"
	"strconv"
)

// defaultTextChars is what a text read answers at most unless told.
const defaultTextChars = 20000

// OutputTextInput is GET .../output/text.
type OutputTextInput struct {
	ID       string `json:"-" path:"id" doc:"the process's id"`
	Offset   int64  `json:"-" query:"offset" minimum:"0" doc:"byte offset in the process's output (both streams, in order) to read from; pass next_offset of the previous answer"`
	MaxChars int    `json:"-" query:"max_chars" minimum:"0" maximum:"1000000" doc:"characters to answer at most (default 20000)"`
}

// OutputText is a process's output from an offset as one text.
type OutputText struct {
	Text       string `json:"text" required:"true" doc:"the output from offset, stdout and stderr interleaved as written; binary output is named by its size"`
	NextOffset int64  `json:"next_offset" required:"true" doc:"pass as offset to read on"`
	Done       bool   `json:"done" required:"true" doc:"the process has ended and all its output was read"`
	State      string `json:"state" required:"true"`
	ExitCode   *int   `json:"exit_code"`
	Skipped    int64  `json:"skipped,omitempty" doc:"bytes before the answer's text that were no longer kept"`
}

// ReadOutputText answers a process's output from an offset as one text of
// at most max_chars characters, ending before the first chunk that does
// not fit (next_offset is that chunk's). It does not wait for output.
func (s *Service) ReadOutputText(ctx context.Context, in OutputTextInput) (OutputText, error) {
	max := in.MaxChars
	if max <= 0 {
		max = defaultTextChars
	}
	// max characters are at most 4 bytes each.
	pg, err := s.Output(ctx, OutputInput{ID: in.ID, Since: in.Offset, MaxBytes: int64(min(4*max, maxPageBytes))})
	if err != nil {
		return OutputText{}, err
	}
	text, next, chars := make([]byte, 0, 4*max), pg.NextOffset, 0
	for _, c := range pg.Chunks {
		data := c.Data
		if c.Encoding == encodingBase64 {
			data = "<" + strconv.Itoa(len(c.Data)*3/4) + " bytes of binary output>"
		}
		n := len([]rune(data))
		if len(text) > 0 && chars+n > max {
			next = c.Offset // read on from the first chunk left out
			break
		}
		text, chars = append(text, data...), chars+n
	}
	o := OutputText{Text: string(text), NextOffset: next, Done: pg.Done && next == pg.NextOffset,
		State: pg.Process.State, ExitCode: pg.Process.ExitCode}
	if pg.Gap != nil {
		o.Skipped = pg.Gap.To - pg.Gap.From
	}
	return o, nil
}
