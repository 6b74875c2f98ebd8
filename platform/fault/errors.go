package fault

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// Stable error codes. Domains return *Error values carrying one of these (or a
// domain-specific code registered with RegisterCode); HTTP layers never pick
// a status themselves.
const (
	CodeBadRequest           = "BAD_REQUEST"
	CodeInvalid              = "INVALID"
	CodeUnauthorized         = "UNAUTHORIZED"
	CodeForbidden            = "FORBIDDEN"
	CodeNotFound             = "NOT_FOUND"
	CodeMethodNotAllowed     = "METHOD_NOT_ALLOWED"
	CodeConflict             = "CONFLICT"
	CodeGone                 = "GONE"
	CodePreconditionFailed   = "PRECONDITION_FAILED"
	CodePreconditionRequired = "PRECONDITION_REQUIRED"
	CodePayloadTooLarge      = "PAYLOAD_TOO_LARGE"
	CodeUnsupportedMedia     = "UNSUPPORTED_MEDIA_TYPE"
	CodeTooManyRequests      = "TOO_MANY_REQUESTS"
	CodeInternal             = "INTERNAL"
	CodeBackend              = "BACKEND_ERROR"
	CodeUnavailable          = "UNAVAILABLE"
	CodeSigningNotConfigured = "SIGNING_NOT_CONFIGURED"
	CodeTimeout              = "TIMEOUT"
	// CodeNotImplemented: a request method the server does not know.
	CodeNotImplemented = "NOT_IMPLEMENTED"
	// CodeMisdirected: the Host is not one this server answers for (the
	// request policy's DNS-rebinding guard).
	CodeMisdirected = "MISDIRECTED_REQUEST"
)

var codeStatus = map[string]int{
	CodeBadRequest:           http.StatusBadRequest,
	CodeInvalid:              http.StatusBadRequest,
	CodeUnauthorized:         http.StatusUnauthorized,
	CodeForbidden:            http.StatusForbidden,
	CodeNotFound:             http.StatusNotFound,
	CodeMethodNotAllowed:     http.StatusMethodNotAllowed,
	CodeConflict:             http.StatusConflict,
	CodeGone:                 http.StatusGone,
	CodePreconditionFailed:   http.StatusPreconditionFailed,
	CodePreconditionRequired: http.StatusPreconditionRequired,
	CodePayloadTooLarge:      http.StatusRequestEntityTooLarge,
	CodeUnsupportedMedia:     http.StatusUnsupportedMediaType,
	CodeTooManyRequests:      http.StatusTooManyRequests,
	CodeInternal:             http.StatusInternalServerError,
	CodeBackend:              http.StatusInternalServerError,
	CodeUnavailable:          http.StatusServiceUnavailable,
	CodeSigningNotConfigured: http.StatusServiceUnavailable,
	CodeTimeout:              http.StatusGatewayTimeout,
	CodeNotImplemented:       http.StatusNotImplemented,
	CodeMisdirected:          http.StatusMisdirectedRequest,
}

// RegisterCode adds a domain-specific code (for example TRANSFER_FEE_CHANGED
// → 409). Call it from an init function of the domain package; codes are
// global so the map stays the single source of truth.
func RegisterCode(code string, status int) {
	if _, dup := codeStatus[code]; dup {
		panic("platform: error code registered twice: " + code)
	}
	codeStatus[code] = status
}

// StatusOf maps a code to its HTTP status; unknown codes are 500.
func StatusOf(code string) int {
	if s, ok := codeStatus[code]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// Error is a domain error with a stable code. Message is safe to show to
// clients; Details carries extra client-safe context (a field name, bounds,
// close matches). Cause is for logs only and never reaches a client.
type Error struct {
	Code    string
	Message string
	Details string
	Field   string
	Headers map[string]string // e.g. Retry-After on TOO_MANY_REQUESTS
	// SetCookies are Set-Cookie lines the error answer carries, one
	// cookie a line (a refused session's cookies cleared).
	SetCookies []string
	Cause      error
}

func (e *Error) Error() string {
	if e.Cause != nil {
		return e.Code + ": " + e.Message + ": " + e.Cause.Error()
	}
	return e.Code + ": " + e.Message
}

func (e *Error) Unwrap() error { return e.Cause }

// Status is the HTTP status for the error's code.
func (e *Error) Status() int { return StatusOf(e.Code) }

// Errorf builds an *Error with a formatted client-safe message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Invalid reports that a request field broke a rule; the message names both.
func Invalid(field, rule string, args ...any) *Error {
	msg := rule
	if len(args) > 0 {
		msg = fmt.Sprintf(rule, args...)
	}
	return &Error{Code: CodeInvalid, Field: field, Message: field + ": " + msg, Details: field}
}

// NotFound reports a missing resource of the given kind.
func NotFound(kind, id string) *Error {
	return &Error{Code: CodeNotFound, Message: fmt.Sprintf("%s %q not found", kind, id), Details: kind}
}

// Internal wraps an unexpected failure; the client sees only the operation.
// A lost database (store.ErrUnavailable, or any error whose Unavailable
// method reports true) is no internal error but 503
// UNAVAILABLE with Retry-After: nothing was written and the same request
// may be sent again once the database is back. This is the one place that
// mapping lives; AsError applies it too.
func Internal(op string, cause error) *Error {
	if isUnavailable(cause) {
		return Unavailable(op, cause)
	}
	if e := storeRefusal(cause); e != nil {
		return e
	}
	return &Error{Code: CodeInternal, Message: "internal error while trying to " + op, Cause: cause}
}

// Wrap is what a domain returns for err from a store transaction or a
// step of op: a typed *Error (a domain refusal, also wrapped) passes
// through as it is, anything else becomes the internal failure of op (503
// when the database is gone), its text for logs only. nil stays nil.
func Wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	var pe *Error
	if errors.As(err, &pe) {
		return pe
	}
	return Internal(op, err)
}

// storeRefusal maps the store's refusals of a request: a query it cannot
// answer (an unknown field, a value of the wrong type) is 400 INVALID
// naming the field; a write a unique index refuses is 409 CONFLICT naming
// the fields. nil for any other error.
// The store's errors say which they are through these methods
// (store.QueryError and store.DuplicateError have them), so the kernel
// needs no import of the store.
func storeRefusal(err error) *Error {
	var qe interface{ InvalidField() (field, rule string) }
	if errors.As(err, &qe) {
		field, rule := qe.InvalidField()
		return Invalid(field, "%s", rule)
	}
	var de interface{ DuplicateFields() []string }
	if errors.As(err, &de) {
		fields := de.DuplicateFields()
		return &Error{Code: CodeConflict, Message: "another record already has the same " + strings.Join(fields, ", "),
			Details: strings.Join(fields, ","), Cause: err}
	}
	return nil
}

// Unavailable reports that the database could not be reached while trying
// to op; the cause goes to logs only.
func Unavailable(op string, cause error) *Error {
	return &Error{Code: CodeUnavailable, Cause: cause, Headers: map[string]string{"Retry-After": "1"},
		Message: "the database is unavailable while trying to " + op + "; nothing was changed, retry shortly"}
}

// WithDetails returns a copy with Details set.
func (e *Error) WithDetails(format string, args ...any) *Error {
	c := *e
	c.Details = fmt.Sprintf(format, args...)
	return &c
}

// AsError converts any error into an *Error, treating unknown errors as
// internal so their text never leaks.
func AsError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	if isUnavailable(err) {
		return Unavailable("answer", err)
	}
	if e := storeRefusal(err); e != nil {
		return e
	}
	return &Error{Code: CodeInternal, Message: "internal server error", Cause: err}
}

// isUnavailable reports whether err says its database could not be reached
// (store.ErrUnavailable does), so nothing was written and a retry may work.
func isUnavailable(err error) bool {
	var u interface{ Unavailable() bool }
	return errors.As(err, &u) && u.Unavailable()
}

// Text is err as the owner of a file the agent reads is told why it did
// not load: an *Error's message, with its cause when it has one (a read
// refused, a disk error: the answer for whoever owns the file, who sees
// the agent's logs anyway), or any other error's own text.
func Text(err error) string {
	var pe *Error
	if errors.As(err, &pe) {
		if pe.Cause != nil {
			return pe.Message + ": " + pe.Cause.Error()
		}
		return pe.Message
	}
	return err.Error()
}
