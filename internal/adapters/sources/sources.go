// Package sources fetches artifacts (charts) from where a Source says they are: an OCI
// registry (Helm's own registry client), a Helm repository (its index.yaml) or a URL.
// Each transport pins a source to a digest (Resolve), fetches the pinned bytes (Download)
// and their provenance (Provenance, when the worker has a keyring: provenance.go); adding
// a transport is one type and one line in transports. Every request
// goes through the admin's egress list, with the project's credentials for the host.
package sources

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/temco/temco/internal/adapters/egress"
	"github.com/temco/temco/internal/core/artifact"
)

// Transport fetches artifacts of one kind of source.
type Transport interface {
	// Resolve pins src to a digest, reading no more than an index or a manifest.
	Resolve(ctx context.Context, src artifact.Source, c *Client) (artifact.Resolved, error)
	// Download fetches what r pins, checking what the source itself can check.
	Download(ctx context.Context, r artifact.Resolved, c *Client) ([]byte, error)
	// Provenance fetches the provenance file of what r pins (where Helm looks for it) and
	// the archive's file name it signs for; none there is a permanent failure.
	Provenance(ctx context.Context, r artifact.Resolved, c *Client) (prov []byte, name string, err error)
}

// transports, by artifact.Source.Transport.
var transports = map[string]Transport{
	artifact.TransportOCI:  ociTransport{},
	artifact.TransportHelm: helmRepoTransport{},
	artifact.TransportURL:  urlTransport{},
}

// Credential is a user and password (or token) for a host.
type Credential struct{ Username, Password string }

// Client is what transports fetch with.
type Client struct {
	// HTTP reaches only the hosts the admin allowed, following redirects only to them.
	HTTP *http.Client
	// Credentials are the project's for a host ("host[:port]"); nil: none.
	Credentials func(host string) (Credential, bool)
	// Progress is told the bytes received so far (nil: nobody is).
	Progress func(n int64)
	// Indexes read each Helm repository's index once for the charts asked of it (nil:
	// each resolution reads it).
	Indexes *Indexes
}

// Close closes the client's idle connections (each client has its own transport).
func (c *Client) Close() { c.HTTP.CloseIdleConnections() }

// NewClient is a Client reaching the hosts of allow, each request bound to ctx; Close it.
func NewClient(ctx context.Context, allow *egress.Allow, creds func(string) (Credential, bool), progress func(int64)) *Client {
	h := allow.HTTPClientFollowing(5 * time.Minute)
	c := &Client{Credentials: creds, Progress: progress}
	h.Transport = &counting{ctx: ctx, next: h.Transport, c: c}
	c.HTTP = h
	return c
}

func (c *Client) credential(host string) (Credential, bool) {
	if c.Credentials == nil {
		return Credential{}, false
	}
	return c.Credentials(host)
}

// counting binds requests to ctx (Helm's registry client makes them without one) and
// counts the bytes of the answers' bodies for Progress.
type counting struct {
	ctx  context.Context
	next http.RoundTripper
	c    *Client
	n    atomic.Int64 // Helm's client fetches several blobs at once
}

func (t *counting) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(r.WithContext(t.ctx))
	if err == nil && t.c.Progress != nil {
		resp.Body = &countingBody{ReadCloser: resp.Body, t: t}
	}
	return resp, err
}

// CloseIdleConnections closes the idle connections of the transport below.
func (t *counting) CloseIdleConnections() {
	if c, ok := t.next.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

type countingBody struct {
	io.ReadCloser
	t *counting
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.t.c.Progress(b.t.n.Add(int64(n)))
	return n, err
}

// Resolve pins src to a digest with its transport.
func Resolve(ctx context.Context, src artifact.Source, c *Client) (artifact.Resolved, error) {
	t, ok := transports[src.Transport()]
	if !ok {
		return artifact.Resolved{}, Permanent(fmt.Errorf("no transport for %q", src.Location()))
	}
	r, err := t.Resolve(ctx, src, c)
	r.Transport = src.Transport()
	return r, err
}

// Download fetches what r pins and checks it against r's digest (an OCI chart's is its
// manifest's, which its transport checks), returning the bytes and their sha256.
func Download(ctx context.Context, r artifact.Resolved, c *Client) ([]byte, string, error) {
	t, ok := transports[r.Transport]
	if !ok {
		return nil, "", Permanent(fmt.Errorf("no transport %q", r.Transport))
	}
	data, err := t.Download(ctx, r, c)
	if err != nil {
		return nil, "", err
	}
	got := artifact.Digest(data)
	if r.Transport != artifact.TransportOCI && got != r.Digest {
		return nil, "", Permanent(&Mismatch{Ref: r.Ref, Want: r.Digest, Got: got})
	}
	return data, got, nil
}

// Mismatch is an artifact whose bytes are not what its digest says: never retried,
// never rendered.
type Mismatch struct{ Ref, Want, Got string }

func (e *Mismatch) Error() string {
	return fmt.Sprintf("%s: digest mismatch: expected %s, downloaded %s", e.Ref, e.Want, e.Got)
}

// permanent is a failure that trying again cannot mend (not found, refused, tampered).
type permanent struct{ error }

func (e permanent) Unwrap() error { return e.error }

// Permanent marks err as one trying again cannot mend.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return permanent{err}
}

// IsPermanent reports whether err cannot be mended by trying again.
func IsPermanent(err error) bool {
	var p permanent
	var refused *egress.Refused
	return errors.As(err, &p) || errors.As(err, &refused)
}

// get fetches url's body (at most artifact.MaxSize bytes, or max when larger), with the
// host's credentials: 404, 401, 403 and other 4xx are permanent, the rest transient.
func get(ctx context.Context, c *Client, url, host string, max int64) ([]byte, error) {
	body, err := open(ctx, c, url, host)
	if err != nil {
		return nil, err
	}
	defer body.Close()
	if max < artifact.MaxSize {
		max = artifact.MaxSize
	}
	var buf bytes.Buffer
	if _, err := io.Copy(&buf, io.LimitReader(body, max+1)); err != nil {
		return nil, fmt.Errorf("GET %s: %w", url, err)
	}
	if int64(buf.Len()) > max {
		return nil, Permanent(fmt.Errorf("GET %s: more than %d bytes", url, max))
	}
	return buf.Bytes(), nil
}

// open is get's answer as a stream, to be read and closed.
func open(ctx context.Context, c *Client, url, host string) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, Permanent(err)
	}
	if cr, ok := c.credential(host); ok {
		req.SetBasicAuth(cr.Username, cr.Password)
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		err := fmt.Errorf("GET %s: %s", url, resp.Status)
		if resp.StatusCode >= 400 && resp.StatusCode < 500 && resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode != http.StatusRequestTimeout {
			return nil, Permanent(err)
		}
		return nil, err
	}
	return resp.Body, nil
}
