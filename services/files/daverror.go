package files

import (
	"context"
	"errors"
	"html"
	"net/http"
	"strings"

	"golang.org/x/net/webdav"

	"deckhand/platform"
	"deckhand/platform/fault"
)

// Codes of WebDAV answers that have no code of their own in the platform.
const (
	// CodeLocked is a resource locked by a lock the request did not name
	// (423, RFC 4918 11.3).
	CodeLocked = "LOCKED"
	// CodeForeignDestination is a COPY or MOVE whose Destination lies on
	// another server or outside /dav/ (502, RFC 4918 9.8.5).
	CodeForeignDestination = "FOREIGN_DESTINATION"
)

func init() {
	fault.RegisterCode(CodeLocked, http.StatusLocked)
	fault.RegisterCode(CodeForeignDestination, http.StatusBadGateway)
}

// errorNS is the namespace of the code, details and message elements a
// DAV:error answer carries besides RFC 4918's precondition elements.
const errorNS = "urn:deckhand:error"

// davCondError is a refusal that RFC 4918 names with a precondition
// element in the DAV: namespace, e.g. propfind-finite-depth.
type davCondError struct {
	err  *fault.Error
	cond string
}

func (e *davCondError) Error() string { return e.err.Error() }
func (e *davCondError) Unwrap() error { return e.err }

func finiteDepthOnly() error {
	return &davCondError{cond: "propfind-finite-depth",
		err: fault.Errorf(fault.CodeForbidden, "PROPFIND of a collection answers Depth 0 or 1 only; infinite depth (also meant by no Depth header) is refused").WithDetails("Depth")}
}

// davError is the answer to a failed WebDAV request for a WebDAV client:
// the status and RFC 4918's DAV:error (application/xml), holding the
// precondition element where the RFC names one and the service's stable
// code, details and a client-safe message, never a Go error string. (A
// client whose Accept prefers application/json gets the JSON error.)
func (s *Service) davError(ctx context.Context, in DavInput, err error) DavAnswer {
	e := fault.AsError(err)
	if e.Code == fault.CodeInternal || e.Code == fault.CodeBackend {
		s.deps.Logger.Error("request failed", "request_id", platform.RequestIDOf(ctx),
			"path", "/dav/"+in.Path, "code", e.Code, "err", err)
	}
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="utf-8"?>` + "\n" + `<D:error xmlns:D="DAV:" xmlns:E="` + errorNS + `">`)
	var ce *davCondError
	if errors.As(err, &ce) {
		b.WriteString("<D:" + ce.cond + "/>")
	}
	b.WriteString("<E:code>" + html.EscapeString(e.Code) + "</E:code>")
	b.WriteString("<E:details>" + html.EscapeString(e.Details) + "</E:details>")
	b.WriteString("<E:message>" + html.EscapeString(e.Message) + "</E:message>")
	b.WriteString("</D:error>\n")
	out := DavAnswer{Status: e.Status(), Type: "application/xml; charset=utf-8", NoSniff: "nosniff",
		Length: int64(b.Len()), Body: strings.NewReader(b.String())}
	for k, v := range e.Headers {
		switch http.CanonicalHeaderKey(k) {
		case "Content-Range":
			out.Range = v
		case "Retry-After":
			out.RetryAfter = v
		}
	}
	return out
}

// davErrorTexts are the message and field of x/net's unexported errors
// whose answer does not depend on the method, by their text.
var davErrorTexts = map[string][2]string{
	"invalid destination":       {"Destination must be a URL of this server under the WebDAV prefix", "Destination"},
	"destination equals source": {"Destination is the resource itself", "Destination"},
	"invalid If header":         {"the If header does not parse (RFC 4918 10.4)", "If"},
	"invalid lock info":         {"the lockinfo body is not valid", "body"},
	"invalid lock token":        {"Lock-Token (or the If header of a refresh) must name one lock token as <token>", "Lock-Token"},
	"invalid propfind":          {"the propfind body is not valid", "body"},
	"invalid proppatch":         {"the propertyupdate body is not valid", "body"},
	"invalid timeout":           {"Timeout must be Infinite or Second-N", "Timeout"},
	"unsupported lock info":     {"only write locks are supported", "body"},
	"not a directory":           {"a part of the path is not a collection", ""},
	"directory not empty":       {"the collection is not empty", ""},
	"prefix mismatch":           {"the path is not under the WebDAV prefix", "path"},
}

// davStatusCodes are the service's codes of x/net's error statuses; a 400
// is INVALID when the field is known, and any other status of 500 and
// above is an internal error.
var davStatusCodes = map[int]string{
	http.StatusForbidden:            fault.CodeForbidden,
	http.StatusNotFound:             fault.CodeNotFound,
	http.StatusMethodNotAllowed:     fault.CodeMethodNotAllowed,
	http.StatusConflict:             fault.CodeConflict,
	http.StatusPreconditionFailed:   fault.CodePreconditionFailed,
	http.StatusUnsupportedMediaType: fault.CodeUnsupportedMedia,
	http.StatusLocked:               CodeLocked,
	http.StatusBadGateway:           CodeForeignDestination,
	http.StatusInsufficientStorage:  CodeInsufficientStorage,
}

// davStatusError turns an error answer of x/net/webdav (a status and the
// package's error, whose text is for logs) into the service's error.
func davStatusError(method string, status int, cause error) error {
	msg, field := "", ""
	switch {
	case cause == nil:
	case errors.Is(cause, webdav.ErrLocked):
		msg = "the resource is locked and the request names none of its lock tokens in an If header"
	case errors.Is(cause, webdav.ErrConfirmationFailed):
		msg, field = "no lock token of the If header holds for the resource", "If"
	case errors.Is(cause, webdav.ErrNoSuchLock):
		msg, field = "no such lock", "Lock-Token"
	default:
		// x/net's unexported errors, known by their text.
		text := strings.TrimPrefix(cause.Error(), "webdav: ")
		switch known, ok := davErrorTexts[text]; {
		case ok:
			msg, field = known[0], known[1]
		case text == "invalid depth":
			msg, field = "Depth must be 0 or infinity for "+method+" (PROPFIND: 0 or 1)", "Depth"
		case text == "unsupported method":
			msg = method + " is not a WebDAV method"
		case status == http.StatusBadRequest && (method == "PROPFIND" || method == "PROPPATCH" || method == "LOCK"):
			// The XML decoder's own error.
			msg, field = "the body is not well-formed XML", "body"
		}
	}
	code, ok := davStatusCodes[status]
	switch {
	case ok:
	case status == http.StatusBadRequest && field != "":
		code = fault.CodeInvalid
	case status >= 500:
		return fault.Internal("answer "+method, cause)
	default:
		code = fault.CodeBadRequest
	}
	if msg == "" {
		msg = method + ": " + strings.ToLower(http.StatusText(status))
		switch status {
		case http.StatusNotFound:
			msg = "no such resource"
		case http.StatusMethodNotAllowed:
			msg = method + " is not allowed on this resource"
		case http.StatusPreconditionFailed:
			msg = "a precondition of the request (If, Overwrite) does not hold"
		case http.StatusConflict:
			msg = "a parent collection is missing"
		}
	}
	e := fault.Errorf(code, "%s", msg)
	if field != "" {
		e = e.WithDetails("%s", field)
		e.Field = field
	}
	if status == http.StatusLocked && method == "LOCK" {
		return &davCondError{err: e, cond: "no-conflicting-lock"}
	}
	return e
}
