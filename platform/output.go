package platform

import (
	"io"
	"net/http"
	"reflect"
	"strings"
)

// BodyWriter writes a streamed answer as it is made, after the status and
// headers went out. It runs after the method returned (so it must not use
// the method's context) and stops when a write or Flush fails: the client
// is gone.
type BodyWriter func(w StreamWriter)

// StreamWriter is where a BodyWriter writes; Flush sends what is buffered
// to the client now (each Server-Sent Event, say).
type StreamWriter interface {
	io.Writer
	io.StringWriter
	Flush() error
}

var bodyWriterType = reflect.TypeFor[BodyWriter]()

// outputPlan is how one output type is written.
type outputPlan struct {
	typ     reflect.Type
	wrapper bool
	body    []int        // the wrapper's Body field
	bodyTyp reflect.Type // what goes out (typ when not a wrapper)
	raw     bool         // []byte: sent as it is
	stream  bool         // io.Reader: streamed
	writes  bool         // BodyWriter: written as it is made
	length  []int        // the Content-Length field of a streamed Body
	headers []outHeader
	status  []int // the wrapper's Status field
	message []int // the wrapper's Message field (the envelope's message)
	// bodyHeaders: the output implements BodyHeaders.
	bodyHeaders bool
}

type outHeader struct {
	index []int
	name  string
	doc   string
	num   bool
}

// binary reports whether the answer is bytes, not JSON.
func (p *outputPlan) binary() bool { return p.raw || p.stream || p.writes }

func planOutput(t reflect.Type) *outputPlan {
	p := &outputPlan{typ: t, bodyTyp: t}
	st := t
	if st.Kind() == reflect.Pointer {
		st = st.Elem()
	}
	if st.Kind() == reflect.Struct {
		for i := 0; i < st.NumField(); i++ {
			f := st.Field(i)
			if h := f.Tag.Get("header"); h != "" {
				if f.Type.Kind() != reflect.String && !isNumber(f.Type.Kind()) && f.Type != stringsType {
					panic("platform: output header " + st.String() + "." + f.Name + " must be a string, a []string or a number")
				}
				p.headers = append(p.headers, outHeader{index: f.Index, name: h, doc: f.Tag.Get("doc"), num: f.Type.Kind() != reflect.String})
				p.wrapper = true
			}
			switch {
			case isBodyField(f):
				p.body, p.bodyTyp, p.wrapper = f.Index, f.Type, true
			case f.Name == "Status" && f.Type.Kind() == reflect.Int:
				p.status = f.Index
			case f.Name == "Message" && f.Type.Kind() == reflect.String && f.Tag.Get("json") == "":
				p.message = f.Index
			}
		}
		if p.wrapper && p.body == nil {
			p.bodyTyp = nil // headers only
		}
		if !p.wrapper {
			p.status, p.message = nil, nil // a resource's own Status or Message field is data
		}
	}
	p.raw = p.bodyTyp == bytesType
	if (p.bodyTyp == readerType || p.bodyTyp == bodyWriterType) && !p.wrapper {
		panic("platform: output " + t.String() + " must be a wrapper struct with the stream as its Body")
	}
	p.stream = p.bodyTyp == readerType
	p.writes = p.bodyTyp == bodyWriterType
	if p.stream {
		for i, hd := range p.headers {
			if strings.EqualFold(hd.name, "Content-Length") {
				if f := st.FieldByIndex(hd.index); f.Type.Kind() != reflect.Int64 {
					panic("platform: output " + st.String() + "." + f.Name + " (Content-Length) must be an int64")
				}
				p.length = hd.index
				p.headers = append(p.headers[:i:i], p.headers[i+1:]...)
				break
			}
		}
	}
	p.bodyHeaders = t.Implements(bodyHeadersType)
	return p
}

var (
	stringsType     = reflect.TypeFor[[]string]()
	bodyHeadersType = reflect.TypeFor[BodyHeaders]()
)

// BodyHeaders is implemented by an output whose headers are computed from
// the bytes the host writes (a signature over the very body sent, which
// only exists once the answer is encoded): the host calls BodyHeaders with
// those bytes after writing them, and adds each value it answers as a
// header line. Headers it adds are not in the OpenAPI document: the
// route's Description names them.
type BodyHeaders interface {
	BodyHeaders(body []byte) http.Header
}
