// Package egress decides where temco connects on a user's behalf (a URL, a host or a
// Temporal server named in a resource): only to hosts an admin allowed, with timeouts and
// without following redirects. An empty list allows none: a shared temco must not let
// every project reach every host its network reaches.
package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Allow is a list of hosts: "host" (any port) or "host:port".
type Allow struct{ hosts map[string]bool }

// Parse reads a comma-separated list of host or host:port entries (an IPv6 address in
// brackets when it has a port); names are compared in lower case.
func Parse(list string) (*Allow, error) {
	a := &Allow{hosts: map[string]bool{}}
	for _, e := range strings.Split(list, ",") {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		entry, err := entryOf(e)
		if err != nil {
			return nil, fmt.Errorf("allow-list entry %q: %v", e, err)
		}
		a.hosts[entry] = true
	}
	return a, nil
}

// MustParse is Parse for lists known to be valid (tests, constants).
func MustParse(list string) *Allow {
	a, err := Parse(list)
	if err != nil {
		panic(err)
	}
	return a
}

func entryOf(e string) (string, error) {
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
	return net.JoinHostPort(canonical(host), port), nil
}

func canonical(host string) string {
	host = strings.ToLower(host)
	if ip := net.ParseIP(host); ip != nil {
		return ip.String()
	}
	return host
}

// Empty reports whether the list allows nothing.
func (a *Allow) Empty() bool { return a == nil || len(a.hosts) == 0 }

// Allows reports whether host (with port; "" for none) is on the list, alone or with
// its port. A nil list allows nothing.
func (a *Allow) Allows(host, port string) bool {
	if a == nil {
		return false
	}
	host = canonical(strings.Trim(host, "[]"))
	return a.hosts[host] || port != "" && a.hosts[net.JoinHostPort(host, port)]
}

// AllowsURL reports whether u's host is on the list, alone or with u's port (the
// scheme's when u names none).
func (a *Allow) AllowsURL(u *url.URL) bool {
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	return a.Allows(u.Hostname(), port)
}

// AllowsAddr reports whether a "host:port" address is on the list.
func (a *Allow) AllowsAddr(addr string) bool {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || host == "" || port == "" {
		return false
	}
	return a.Allows(host, port)
}

// Refused is a host the list does not allow.
type Refused struct{ Host string }

func (e *Refused) Error() string {
	return fmt.Sprintf("%s is not on the hosts an admin allowed temco to reach", e.Host)
}

// Unreachable is an allowed host that did not answer. Its message says no more than
// that: how a connection failed (refused, reset, timed out) would tell a caller what
// listens where.
type Unreachable struct {
	Host string
	Err  error // for the server's log, never for a response
}

func (e *Unreachable) Error() string { return e.Host + " did not answer" }
func (e *Unreachable) Unwrap() error { return e.Err }

// HTTPClient is a client for the list: a request to a host the list does not allow is
// refused before it is sent, a redirect is never followed (its answer is returned as it
// is), and a request with its answer takes at most timeout.
func (a *Allow) HTTPClient(timeout time.Duration) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxResponseHeaderBytes = 64 << 10
	return &http.Client{Transport: guarded{a, tr}, Timeout: timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

type guarded struct {
	allow *Allow
	next  http.RoundTripper
}

func (g guarded) RoundTrip(r *http.Request) (*http.Response, error) {
	if !g.allow.AllowsURL(r.URL) {
		return nil, &Refused{Host: r.URL.Host}
	}
	resp, err := g.next.RoundTrip(r)
	if err != nil && r.Context().Err() == nil {
		return nil, &Unreachable{Host: r.URL.Host, Err: err}
	}
	return resp, err
}

// CloseIdleConnections closes the idle connections of the transport below.
func (g guarded) CloseIdleConnections() {
	if c, ok := g.next.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// Check refuses an address ("host:port") the list does not allow, before it is dialled.
func (a *Allow) Check(addr string) error {
	if !a.AllowsAddr(addr) {
		return &Refused{Host: addr}
	}
	return nil
}

// DialTimeout bounds a connection to an allowed host that temco makes for one request.
const DialTimeout = 10 * time.Second

// WithDialTimeout is ctx bounded by DialTimeout.
func WithDialTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, DialTimeout)
}

// HTTPClientFollowing is HTTPClient following up to 5 redirects, each to an allowed host
// (a registry's blobs are often served from another host; Go drops the credentials of a
// request redirected to another one).
func (a *Allow) HTTPClientFollowing(timeout time.Duration) *http.Client {
	c := a.HTTPClient(timeout)
	c.CheckRedirect = func(_ *http.Request, via []*http.Request) error {
		if len(via) >= 5 {
			return errors.New("more than 5 redirects")
		}
		return nil
	}
	return c
}
