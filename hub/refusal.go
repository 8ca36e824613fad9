package hub

import (
	"errors"

	temco "github.com/temco/temco/client"
)

// Refusal says that what an object declares is wrong, or waits for another object: the
// object's to mend, not the hub's. The API's refusals (4xx) are ones, and so are the
// hub's own (a namespace bound to no project, a key a ConfigMap lacks).
type Refusal struct {
	Code    int // the API's, or the one the hub gives its own (403, 409, 400)
	Message string
}

func (e *Refusal) Error() string { return e.Message }

// IsRefusal reports whether err is a refusal, the hub's or the API's, with it.
func IsRefusal(err error) (*Refusal, bool) {
	var r *Refusal
	if errors.As(err, &r) {
		return r, true
	}
	if e, ok := temco.IsRefusal(err); ok {
		return &Refusal{Code: e.Code, Message: e.Message}, true
	}
	return nil, false
}
