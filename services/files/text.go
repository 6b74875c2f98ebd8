package files

import (
	"context"
	"io"
	"strings"
	"unicode/utf8"

	"deckhand/platform/fault"
	"deckhand/platform/mcptool"
)

// maxText bounds the file a text read answers.
const maxText = 32 << 20

// TextQuery is GET /api/v1/files/text.
type TextQuery struct {
	Path string `query:"path" required:"true" doc:"absolute path of the file"`
}

// Text is a file's content for a reader of text: the text itself, else
// its bytes.
type Text struct {
	Path     string `json:"path" required:"true"`
	MimeType string `json:"mime_type" required:"true" doc:"by extension, else sniffed from the first 512 bytes"`
	Size     int64  `json:"size" required:"true" doc:"bytes"`
	ETag     string `json:"etag" required:"true" doc:"what if_match of PUT /api/v1/files/text compares"`
	Text     string `json:"text,omitempty" doc:"the content, when it is UTF-8 text"`
	Data     []byte `json:"data,omitempty" doc:"the content (base64) when it is an image or not UTF-8 text"`
}

// ReadText reads a whole file of at most 32 MiB: its text when it is
// UTF-8 and no image, else its bytes.
func (s *Service) ReadText(_ context.Context, in TextQuery) (Text, error) {
	c, err := s.fileContent(in.Path, false, FileConditions{})
	if err != nil {
		return Text{}, err
	}
	if cl, ok := c.Body.(io.Closer); ok {
		defer cl.Close()
	}
	if c.Length > maxText {
		return Text{}, fault.Errorf(fault.CodePayloadTooLarge, "%s is %d bytes, more than a text read answers (%d)", in.Path, c.Length, maxText).WithDetails("path")
	}
	raw, err := io.ReadAll(io.LimitReader(c.Body, maxText))
	if err != nil {
		return Text{}, fsError(in.Path, err)
	}
	ct, _, _ := strings.Cut(c.Type, ";")
	out := Text{Path: in.Path, MimeType: strings.TrimSpace(ct), Size: int64(len(raw)), ETag: c.ETag}
	if !mcptool.ModelImage(out.MimeType) && utf8.Valid(raw) {
		out.Text = string(raw)
	} else {
		out.Data = raw
	}
	return out, nil
}

// TextWrite is PUT /api/v1/files/text.
type TextWrite struct {
	Path    string `json:"path" required:"true" doc:"absolute path of the file; missing parent directories are created"`
	Content string `json:"content" doc:"the whole new content (text)"`
	IfMatch string `json:"if_match,omitempty" doc:"write only over the file with this ETag (412 PRECONDITION_FAILED when it changed)"`
}

// WriteText creates or replaces a whole file with text, as an upload
// does: readers never see half a file.
func (s *Service) WriteText(_ context.Context, in TextWrite) (Entry, error) {
	e, _, err := s.Write(WriteInput{Path: in.Path, Body: strings.NewReader(in.Content), Overwrite: true, IfMatch: in.IfMatch})
	return e, err
}
