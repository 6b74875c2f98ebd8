package process

import "context"

// StdinTextInput is POST .../stdin/text.
type StdinTextInput struct {
	ID   string `path:"id" doc:"the process's id (started with keep_stdin_open)"`
	Body StdinText
}

// StdinText is text for a process's input and whether to close it.
type StdinText struct {
	Text  string `json:"text,omitempty" doc:"text written to its standard input (add \\n for a line)"`
	Close bool   `json:"close,omitempty" doc:"close its standard input afterwards (end of file)"`
}

// StdinWritten answers POST .../stdin/text.
type StdinWritten struct {
	Written int  `json:"written" required:"true" doc:"bytes written"`
	Closed  bool `json:"closed" required:"true" doc:"its standard input was closed afterwards"`
}

// WriteStdinText writes text to a process's input, then closes it when
// asked: one call for what a client would otherwise send as two.
func (s *Service) WriteStdinText(ctx context.Context, in StdinTextInput) (StdinWritten, error) {
	var out StdinWritten
	if in.Body.Text != "" {
		w, err := s.WriteStdin(ctx, StdinInput{ID: in.ID, bytes: []byte(in.Body.Text)})
		if err != nil {
			return out, err
		}
		out.Written = w.Written
	}
	if in.Body.Close {
		if _, err := s.CloseStdin(ctx, IDInput{ID: in.ID}); err != nil {
			return out, err
		}
		out.Closed = true
	}
	return out, nil
}
