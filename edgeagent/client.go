// Package edgeagent is temco agent (docs/agent.md): it runs inside an edge cluster with
// that cluster's own credentials, calls temco's api (outbound only) with a credential that
// speaks for that one cluster, and applies the work published to it with the push path's
// own run (activities/cluster.Local), reporting statuses and outcomes back.
package edgeagent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/temco/temco/internal/core/agent"
	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/lifecycle"
)

// API is temco's api as an agent calls it.
type API struct {
	Base       string // e.g. https://temco.example.com (without /v2)
	Credential string
	HTTP       *http.Client
}

// ErrRefused: the api refused the agent's credential (revoked, rotated, or its cluster
// registered anew); retrying does not help.
var ErrRefused = errors.New("temco refused this agent's credential")

// Joined is the answer to a join.
type Joined struct {
	Cluster    string `json:"cluster"`
	Credential string `json:"credential"`
}

// Join exchanges a join token for the agent's credential.
func Join(ctx context.Context, base, token string, hc *http.Client) (Joined, error) {
	a := &API{Base: base, Credential: token, HTTP: hc}
	var j Joined
	return j, a.call(ctx, http.MethodPost, "/v2/agent/join", nil, &j)
}

// Work is what the api answers an agent asking for its work.
type Work struct {
	Cluster string `json:"cluster"`
	Items   []Item `json:"items"`
	Poll    int    `json:"poll"`
}

// Item is one item of work and what the agent last reported of it.
type Item struct {
	agent.Item
	Reported *Report `json:"reported,omitempty"`
}

// Report is what the agent finished of an item.
type Report struct {
	Gen     int64                   `json:"gen"`
	Result  lifecycle.ClusterResult `json:"result"`
	Applied string                  `json:"applied"`
	Error   string                  `json:"error,omitempty"`
}

// Work reads the work published to the agent's cluster.
func (a *API) Work(ctx context.Context) (Work, error) {
	var w Work
	return w, a.call(ctx, http.MethodGet, "/v2/agent/work", nil, &w)
}

// Revision reads a revision its work names, as placed on its cluster.
func (a *API) Revision(ctx context.Context, ctxID string) (*agent.Revision, error) {
	var r agent.Revision
	return &r, a.call(ctx, http.MethodGet, "/v2/agent/revisions/"+url.PathEscape(ctxID), nil, &r)
}

// SaveStatuses sends a revision's statuses on the cluster (cluster.StatusSaver): the api
// stores the statuses alone, as the attempt that published the work.
func (a *API) SaveStatuses(ctx context.Context, ctxID string, _ appctx.Attempt, cas []*appctx.ClusterApp) error {
	return a.call(ctx, http.MethodPost, "/v2/agent/revisions/"+url.PathEscape(ctxID)+"/statuses", cas, nil)
}

// SaveLive sends what the cluster shows of a revision's objects (each placement's Live).
func (a *API) SaveLive(ctx context.Context, ctxID string, cas []*appctx.ClusterApp) error {
	out := make([]LiveApp, len(cas))
	for i, ca := range cas {
		out[i] = LiveApp{App: ca.App, Objects: ca.Live}
	}
	return a.call(ctx, http.MethodPost, "/v2/agent/revisions/"+url.PathEscape(ctxID)+"/live", out, nil)
}

// LiveApp is what the cluster shows of one app's objects, index-aligned with its
// placement's resources.
type LiveApp struct {
	App     string        `json:"app"`
	Objects []appctx.Live `json:"objects"`
}

// Report sends what the agent finished of its item of instance.
func (a *API) Report(ctx context.Context, instance string, r Report) error {
	return a.call(ctx, http.MethodPost, "/v2/agent/work/"+url.PathEscape(instance)+"/report", r, nil)
}

// call sends one request; a JSON body when in is not nil, out decoded from a 2xx answer.
func (a *API) call(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimSuffix(a.Base, "/")+path, body)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+a.Credential)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Temco-Client", "temco-agent")
	hc := a.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode == http.StatusUnauthorized {
		return fmt.Errorf("%w: %s", ErrRefused, message(data))
	}
	if resp.StatusCode >= 300 {
		return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, message(data))
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(data, out)
}

// message is the api's error message in an answer's body.
func message(data []byte) string {
	var e struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(data, &e) == nil && e.Message != "" {
		return e.Message
	}
	return strings.TrimSpace(string(data[:min(len(data), 200)]))
}
