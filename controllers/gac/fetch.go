package gac

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/temco/temco/contract"
	"github.com/temco/temco/controllers"
	"github.com/temco/temco/internal/adapters/egress"
)

// URLs says which $(URL)$ values gac fetches: those on a host an admin allowed (temco
// worker --gac-url-allow). EMCO fetches any URL; temco's worker would then let every
// project reach every host its network reaches, so by default it fetches none. A URL
// naming the kv-pairs route is read from temco's store whatever its host (kvRoute).
type URLs struct {
	Allow    *egress.Allow // nil: none
	Timeout  time.Duration // of one fetch, answer included; 0: 10 s
	MaxBytes int64         // of an answer; 0: 1 MiB
}

// Defaults of URLs.
const (
	DefaultURLTimeout  = 10 * time.Second
	DefaultURLMaxBytes = 1 << 20
)

// WithURLs returns all with gac's entry fetching $(URL)$ values as u says; all itself is
// not changed.
func WithURLs(all []controllers.Builtin, u URLs) []controllers.Builtin {
	out := make([]controllers.Builtin, len(all))
	copy(out, all)
	for i, b := range out {
		if b.Name == Controller.Name && b.Parent == "" {
			f := newFetcher(u)
			b.New = func(d controllers.Deps) contract.Controller {
				return &controller{store: d.Store, keys: d.Keys, urls: f}
			}
			out[i] = b
		}
	}
	return out
}

// fetcher gets $(URL)$ values from the allowed hosts. A nil fetcher allows none.
type fetcher struct {
	allow  *egress.Allow
	client *http.Client
	max    int64
}

func newFetcher(u URLs) *fetcher {
	f := &fetcher{allow: u.Allow, max: u.MaxBytes}
	if f.max <= 0 {
		f.max = DefaultURLMaxBytes
	}
	timeout := u.Timeout
	if timeout <= 0 {
		timeout = DefaultURLTimeout
	}
	// A redirect could lead anywhere, past the allow-list: its answer is refused (get).
	f.client = u.Allow.HTTPClient(timeout)
	return f
}

// allowed reports whether u's host is on the list.
func (f *fetcher) allowed(u *url.URL) bool {
	return f != nil && f.allow.AllowsURL(u)
}

// lookupError is why a $(URL)$ value could not be had. A transient one (the host is
// unreachable or slow, or answers 5xx, 408 or 429) is retried with the controller; any
// other fails the operation at once.
type lookupError struct {
	msg       string
	transient bool
}

func (e *lookupError) Error() string { return e.msg }

func permanent(format string, args ...any) error {
	return &lookupError{msg: fmt.Sprintf(format, args...)}
}

func transient(format string, args ...any) error {
	return &lookupError{msg: fmt.Sprintf(format, args...), transient: true}
}

// get fetches u, which must answer 200 with a JSON object holding "value" (EMCO's
// contract, clm's kv-pairs answer), and returns that value.
func (f *fetcher) get(ctx context.Context, u *url.URL) (any, error) {
	if !f.allowed(u) {
		return nil, permanent("the host is not on the worker's --gac-url-allow list")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, permanent("cannot make a request of it")
	}
	req.Header.Set("Accept", "application/json")
	resp, err := f.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			if ue.Timeout() {
				return nil, transient("it did not answer within %s", f.client.Timeout)
			}
			err = ue.Err // its URL may carry a user name
		}
		return nil, transient("fetching it failed: %v", err)
	}
	defer resp.Body.Close()
	switch code := resp.StatusCode; {
	case code == http.StatusOK:
	case code >= 300 && code < 400:
		return nil, permanent("it answered %s, a redirect, which gac does not follow", resp.Status)
	case code >= 500 || code == http.StatusTooManyRequests || code == http.StatusRequestTimeout:
		return nil, transient("it answered %s", resp.Status)
	default:
		return nil, permanent("it answered %s, not 200", resp.Status)
	}
	if resp.ContentLength > f.max {
		return nil, permanent("its answer (%d bytes) is larger than %d bytes", resp.ContentLength, f.max)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, f.max+1))
	switch {
	case err != nil && ctx.Err() != nil:
		return nil, ctx.Err()
	case err != nil:
		return nil, transient("reading its answer failed: %v", err)
	case int64(len(body)) > f.max:
		return nil, permanent("its answer is larger than %d bytes", f.max)
	}
	return valueOf(body)
}

// valueOf is the "value" of a JSON object; numbers keep their digits.
func valueOf(body []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber()
	var answer map[string]any
	if err := d.Decode(&answer); err != nil || answer == nil {
		return nil, permanent(`its answer is not a JSON object such as {"value": ...}`)
	}
	v, ok := answer["value"]
	if !ok {
		return nil, permanent(`its answer has no "value"`)
	}
	return v, nil
}
