package client

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
)

// Error is an answer of the API other than 2xx.
type Error struct {
	Method string
	Path   string // below /v2, as requested
	Code   int
	// Message is the API's {"message": ...}, else the answer's body (its first 512 bytes).
	Message string
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s /v2%s: %d %s", e.Method, e.Path, e.Code, e.Message)
}

// Refused reports whether the API refused the request (4xx): something in the request or
// in the state of what it names, which asking again unchanged does not mend. A 5xx, or
// no answer at all, is a failure of the API or the way to it.
func (e *Error) Refused() bool { return e.Code >= 400 && e.Code < 500 }

// IsRefusal reports whether err is a refusal (4xx) by the API, and returns it.
func IsRefusal(err error) (*Error, bool) {
	var e *Error
	if errors.As(err, &e) && e.Refused() {
		return e, true
	}
	return nil, false
}

// IsNotFound reports whether err is the API's 404.
func IsNotFound(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == http.StatusNotFound
}

// messageOf is what an error answer says: the API's {"message": ...}, else its body;
// own reports which.
func messageOf(body []byte) (msg string, own bool) {
	var m struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(body, &m) == nil && m.Message != "" {
		return m.Message, true
	}
	return string(bytes.TrimSpace(body)), false
}

// errorOf is the *Error of an answer other than 2xx; a body that is not the API's own
// message (a proxy's page, say) is cut to its first 512 bytes.
func errorOf(req Request, body []byte, code int) *Error {
	msg, own := messageOf(body)
	if !own && len(msg) > 512 {
		msg = msg[:512] + "..."
	}
	return &Error{Method: req.Method, Path: req.Path, Code: code, Message: msg}
}
