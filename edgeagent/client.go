// Package edgeagent is temco agent (docs/agent.md): it runs inside an edge cluster with
// that cluster's own credentials, calls temco's api (outbound only) with a credential that
// speaks for that one cluster, and applies the work published to it with the push path's
// own run (activities/cluster.Local), reporting statuses and outcomes back.
package edgeagent

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	temco "github.com/temco/temco/client"
	"github.com/temco/temco/internal/core/agent"
	"github.com/temco/temco/internal/core/appctx"
)

// API is temco's api as an agent calls it, through temco's REST client.
type API struct {
	Base       string // e.g. https://temco.example.com (without /v2)
	Credential string
	HTTP       *http.Client
}

// ErrRefused: the api refused the agent's credential (revoked, rotated, or its cluster
// registered anew); retrying does not help.
var ErrRefused = errors.New("temco refused this agent's credential")

// Join exchanges a join token for the agent's credential.
func Join(ctx context.Context, base, token string, hc *http.Client) (agent.Joined, error) {
	var j agent.Joined
	return j, (&API{Base: base, Credential: token, HTTP: hc}).call(ctx, http.MethodPost, "/agent/join", nil, &j)
}

// Work reads the work published to the agent's cluster. With known (the Version of the
// work it holds) and wait, the api holds the poll up to wait while that is current:
// changed is false when it stayed so.
func (a *API) Work(ctx context.Context, known string, wait time.Duration) (w agent.Work, changed bool, err error) {
	path := "/agent/work"
	if known != "" && wait > 0 {
		path += "?known=" + url.QueryEscape(known) + "&wait=" + strconv.Itoa(int(wait/time.Second))
	}
	err = a.call(ctx, http.MethodGet, path, nil, &w)
	var e *temco.Error
	if errors.As(err, &e) && e.Code == http.StatusNotModified {
		return w, false, nil
	}
	return w, err == nil, err
}

// Revision reads a revision its work names, as placed on its cluster.
func (a *API) Revision(ctx context.Context, ctxID string) (*agent.Revision, error) {
	var r agent.Revision
	return &r, a.call(ctx, http.MethodGet, "/agent/revisions/"+url.PathEscape(ctxID), nil, &r)
}

// SaveStatuses sends a revision's statuses on the cluster (cluster.StatusSaver): the api
// stores the statuses alone, as the attempt that published the work.
func (a *API) SaveStatuses(ctx context.Context, ctxID string, _ appctx.Attempt, cas []*appctx.ClusterApp) error {
	return a.call(ctx, http.MethodPost, "/agent/revisions/"+url.PathEscape(ctxID)+"/statuses", cas, nil)
}

// SaveLive sends what the cluster shows of a revision's objects (each placement's Live).
func (a *API) SaveLive(ctx context.Context, ctxID string, cas []*appctx.ClusterApp) error {
	out := make([]agent.LiveApp, len(cas))
	for i, ca := range cas {
		out[i] = agent.LiveApp{App: ca.App, Objects: ca.Live}
	}
	return a.call(ctx, http.MethodPost, "/agent/revisions/"+url.PathEscape(ctxID)+"/live", out, nil)
}

// Report sends what the agent finished of its item of instance.
func (a *API) Report(ctx context.Context, instance string, o agent.Outcome) error {
	return a.call(ctx, http.MethodPost, "/agent/work/"+url.PathEscape(instance)+"/report", o, nil)
}

// call sends one request (in as JSON when not nil) and decodes a 2xx answer into out; a
// 401 is ErrRefused.
func (a *API) call(ctx context.Context, method, path string, in, out any) error {
	c := &temco.Client{Base: a.Base, Token: a.Credential, Name: "temco-agent", HTTP: a.HTTP}
	err := c.Do(ctx, temco.Request{Method: method, Path: path, Body: in}, out)
	var e *temco.Error
	if errors.As(err, &e) && e.Code == http.StatusUnauthorized {
		return fmt.Errorf("%w: %s", ErrRefused, e.Message)
	}
	return err
}

// SaveDrift sends what the agent found comparing a revision's objects on its cluster with
// what the revision applied.
func (a *API) SaveDrift(ctx context.Context, ctxID string, d agent.Drift) error {
	return a.call(ctx, http.MethodPost, "/agent/revisions/"+url.PathEscape(ctxID)+"/drift", d, nil)
}
