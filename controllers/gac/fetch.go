package gac

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/temco/temco/contract"
	"github.com/temco/temco/controllers"
)

// URLs says which $(URL)$ values gac fetches: those on a host an admin allowed (temco
// worker --gac-url-allow). EMCO fetches any URL; temco's worker would then let every
// project reach every host its network reaches, so by default it fetches none. A URL
// naming the kv-pairs route is read from temco's store whatever its host (kvRoute).
type URLs struct {
	Allow    []string      // "host" (any port) or "host:port", as ParseAllowList returns them
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

// ParseAllowList reads a comma-separated list of host or host:port entries (an IPv6
// address in brackets when it has a port), in lower case.
func ParseAllowList(list string) ([]string, error) {
	var out []string
	for _, e := range strings.Split(list, ",") {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		entry, err := allowEntry(e)
		if err != nil {
			return nil, fmt.Errorf("gac URL allow-list entry %q: %v", e, err)
		}
		out = append(out, entry)
	}
	return out, nil
}

func allowEntry(e string) (string, error) {
	if strings.ContainsAny(e, "/@?# ") {
		return "", errors.New("give a host or host:port, not a URL")
	}
	e = strings.ToLower(e)
	if ip := net.ParseIP(strings.Trim(e, "[]")); ip != nil && !strings.Contains(e, "]:") {
		return ip.String(), nil // an IP address without port
	}
	if !strings.Contains(e, ":") {
		return e, nil
	}
	host, port, err := net.SplitHostPort(e)
	if err != nil {
		return "", err
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return "", fmt.Errorf("port %q is not 1-65535", port)
	}
	if host == "" {
		return "", errors.New("no host")
	}
	if ip := net.ParseIP(host); ip != nil {
		host = ip.String()
	}
	return net.JoinHostPort(host, port), nil
}

// fetcher gets $(URL)$ values from the allowed hosts. A nil fetcher allows none.
type fetcher struct {
	allow  map[string]bool
	client *http.Client
	max    int64
}

func newFetcher(u URLs) *fetcher {
	f := &fetcher{allow: map[string]bool{}, max: u.MaxBytes}
	for _, a := range u.Allow {
		f.allow[a] = true
	}
	if f.max <= 0 {
		f.max = DefaultURLMaxBytes
	}
	timeout := u.Timeout
	if timeout <= 0 {
		timeout = DefaultURLTimeout
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxResponseHeaderBytes = 64 << 10
	f.client = &http.Client{Transport: tr, Timeout: timeout,
		// A redirect could lead anywhere, past the allow-list: its answer is refused.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return f
}

// allowed reports whether u's host is on the list, alone or with u's port (the scheme's
// when u names none).
func (f *fetcher) allowed(u *url.URL) bool {
	if f == nil {
		return false
	}
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if ip := net.ParseIP(host); ip != nil {
		host = ip.String()
	}
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	return f.allow[host] || f.allow[net.JoinHostPort(host, port)]
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
