package deckhand

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// Error is an answer with a status of 400 or more: the control plane's
// error envelope ({statusCode, error, message}) or a container service's
// error body ({code, message, details}). Code is the server's stable code
// (VALIDATION_ERROR, NOT_FOUND, INSUFFICIENT_BALANCE ...).
type Error struct {
	Status  int    // HTTP status
	Code    string // the server's code
	Message string // the server's message
	Details string // a container service's details, if any
	Method  string
	Path    string
}

func (e *Error) Error() string {
	code := e.Code
	if code == "" {
		code = http.StatusText(e.Status)
	}
	return fmt.Sprintf("deckhand: %s %s: %d %s: %s", e.Method, e.Path, e.Status, code, e.Message)
}

// ErrorCode is the server's code of err when it is (or wraps) an *Error,
// else "".
func ErrorCode(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// SignatureError means a control-plane answer did not carry a valid
// signature: it was altered on the way or did not come from the control
// plane. Nothing of such an answer is returned.
type SignatureError struct {
	Method, Path string
	Err          error
}

func (e *SignatureError) Error() string {
	return fmt.Sprintf("deckhand: refusing the answer to %s %s: %v", e.Method, e.Path, e.Err)
}

func (e *SignatureError) Unwrap() error { return e.Err }

// errorOf reads an error answer's body into an *Error.
func errorOf(method, path string, status int, raw []byte) *Error {
	e := &Error{Status: status, Method: method, Path: path}
	var body struct {
		Error   json.RawMessage `json:"error"`
		Code    string          `json:"code"`
		Message string          `json:"message"`
		Details json.RawMessage `json:"details"`
	}
	if json.Unmarshal(raw, &body) == nil {
		e.Message = body.Message
		e.Code = body.Code
		var s string
		if e.Code == "" && json.Unmarshal(body.Error, &s) == nil {
			e.Code = s
		}
		if json.Unmarshal(body.Details, &s) == nil {
			e.Details = s
		} else if len(body.Details) > 0 && string(body.Details) != "null" {
			e.Details = string(body.Details)
		}
	}
	if e.Message == "" {
		e.Message = strings.TrimSpace(string(raw))
		if len(e.Message) > 512 {
			e.Message = e.Message[:512]
		}
		if e.Message == "" {
			e.Message = http.StatusText(status)
		}
	}
	return e
}
