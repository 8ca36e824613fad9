package api

// Agent clusters (docs/agent.md): an admin issues a cluster's join token; temco agent,
// inside the cluster, exchanges it for a credential of its own and, with it, reads the
// work published to its cluster, the revisions that work names, and writes back their
// statuses and its reports. An agent's credential reaches /v2/agent/... only, and there
// only its own cluster: the cluster comes from the credential, never from the request.

import (
	"context"
	"crypto/sha256"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/temco/temco/internal/adapters/auth"
	"github.com/temco/temco/internal/core/agent"
	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/model"
)

const (
	routeAgent      = "/agent"
	routeAgentJoin  = routeAgent + "/join"
	routeAgentToken = routeCluster + "/agent-token"
)

// ActivityCompleter completes an activity that waits for a report (the Temporal client's
// CompleteActivity).
type ActivityCompleter interface {
	CompleteActivity(ctx context.Context, taskToken []byte, result any, err error) error
}

// agentPoll is how often an agent asks for its work when the api does not hold its polls.
const agentPoll = 10 * time.Second

// agentCacheTTL is how long a checked credential is trusted without reading the store
// again. A revocation does not wait for it: every api reads it with the changes
// (agentwatch.go) and forgets the credential within seconds.
const agentCacheTTL = 5 * time.Minute

func (s *Server) agents() *agent.Store { return agent.Open(s.Store.Database()) }

func (s *Server) registerAgents(g *echo.Group) {
	s.route(g, opDoc{method: http.MethodPost, path: routeAgentToken, summary: "Issue an agent cluster's join token (shown once; voids an unused one)",
		code: http.StatusCreated, response: typeOf[joinToken](), noOwner: true}, s.issueJoinToken)
	s.route(g, opDoc{method: http.MethodDelete, path: routeAgentToken, summary: "Revoke an agent cluster's join token and credential",
		code: http.StatusNoContent, noOwner: true}, s.revokeAgent)
	s.route(g, opDoc{method: http.MethodGet, path: routeCluster + "/agent-manifest", summary: "The manifest that runs temco agent in an agent cluster (YAML; ?api, ?namespace, ?image, ?clusterRole)",
		code: http.StatusOK, query: []string{"api", "namespace", "image", "clusterRole"}}, s.agentManifest)
	s.route(g, opDoc{method: http.MethodGet, path: routeCluster + "/agent", summary: "How an agent cluster's agent stands (joined, revoked, last call)",
		code: http.StatusOK, response: typeOf[agent.Status]()}, s.agentStatus)

	s.route(g, opDoc{method: http.MethodPost, path: routeAgentJoin, summary: "Exchange a join token (the bearer token) for the agent's credential (shown once)",
		code: http.StatusOK, response: typeOf[agent.Joined](), noOwner: true}, s.join)
	s.route(g, opDoc{method: http.MethodGet, path: routeAgent + "/work", summary: "The work published to the calling agent's cluster (?known: the version held, ?wait: seconds to hold the poll while it is current; 304 when it stayed so)",
		code: http.StatusOK, response: typeOf[agent.Work](), query: []string{"known", "wait"}}, s.agentWork)
	s.route(g, opDoc{method: http.MethodGet, path: routeAgent + "/revisions/:context", summary: "A revision the calling agent's work names, as placed on its cluster",
		code: http.StatusOK, response: typeOf[agent.Revision]()}, s.agentRevision)
	s.route(g, opDoc{method: http.MethodPost, path: routeAgent + "/revisions/:context/statuses", summary: "The statuses of a revision's objects on the calling agent's cluster",
		body: typeOf[[]*appctx.ClusterApp](), code: http.StatusNoContent, noOwner: true}, s.agentStatuses)
	s.route(g, opDoc{method: http.MethodPost, path: routeAgent + "/revisions/:context/live", summary: "What the calling agent's cluster shows of a revision's objects (present, ready)",
		body: typeOf[[]agent.LiveApp](), code: http.StatusNoContent, noOwner: true}, s.agentLive)
	s.route(g, opDoc{method: http.MethodPost, path: routeAgent + "/revisions/:context/drift", summary: "What the calling agent found comparing a revision's objects on its cluster with what was applied (drift; sent when it changed)", body: typeOf[agent.Drift](), code: http.StatusNoContent, noOwner: true}, s.agentDrift)
	s.route(g, opDoc{method: http.MethodPost, path: routeAgent + "/work/:instance/report", summary: "What the calling agent finished of one item of its work",
		body: typeOf[agent.Outcome](), code: http.StatusNoContent, noOwner: true}, s.agentReport)
}

type joinToken struct {
	Cluster string    `json:"cluster"`
	Token   string    `json:"token"`
	Expires time.Time `json:"expires"`
}

// agentClusterOf reads the registration of the route's cluster: its key and incarnation
// when it is reached by an agent, 409 otherwise.
func (s *Server) agentClusterOf(c echo.Context) (key, incarnation string, err error) {
	id, err := fill(c, routeCluster)
	if err != nil {
		return "", "", err
	}
	d, err := s.Store.Get(c.Request().Context(), id)
	if err != nil {
		return "", "", fromStore(err)
	}
	key = lifecycle.ClusterKey(c.Param("clusterProvider"), c.Param("cluster"))
	if d.Fields[fieldAccess] != model.AccessAgent {
		return "", "", conflict("cluster %q is not reached by an agent: register it with spec.access %q to give it one", key, model.AccessAgent)
	}
	return key, incarnationOf(d.Created), nil
}

func incarnationOf(created time.Time) string { return created.UTC().Format(time.RFC3339Nano) }

func (s *Server) issueJoinToken(c echo.Context) error {
	key, inc, err := s.agentClusterOf(c)
	if err != nil {
		return err
	}
	token, err := s.agents().IssueJoin(c.Request().Context(), key, inc)
	if err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderCacheControl, "no-store")
	return c.JSON(http.StatusCreated, joinToken{Cluster: key, Token: token, Expires: time.Now().UTC().Add(agent.JoinTTL)})
}

func (s *Server) revokeAgent(c echo.Context) error {
	key, _, err := s.agentClusterOf(c)
	if err != nil {
		return err
	}
	if err := s.agents().Revoke(c.Request().Context(), key); err != nil {
		return err
	}
	s.agentCache.forget(key)
	return c.NoContent(http.StatusNoContent)
}

func (s *Server) agentStatus(c echo.Context) error {
	key, inc, err := s.agentClusterOf(c)
	if err != nil {
		return err
	}
	st, err := s.agents().StatusOf(c.Request().Context(), key, inc)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, st)
}

// incarnation answers the registration of agent cluster key ("" when it is not one).
func (s *Server) incarnation(ctx context.Context) func(string) (string, error) {
	return func(key string) (string, error) {
		d, err := s.Store.Get(ctx, lifecycle.ClusterID(key))
		if err != nil || d.Fields[fieldAccess] != model.AccessAgent {
			return "", nil
		}
		return incarnationOf(d.Created), nil
	}
}

func (s *Server) join(c echo.Context) error {
	token, _ := bearer(c)
	key, credential, err := s.agents().Join(c.Request().Context(), token, s.incarnation(c.Request().Context()))
	if errors.Is(err, agent.ErrInvalid) {
		return httpErr(http.StatusUnauthorized, "%v", err)
	}
	if err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderCacheControl, "no-store")
	return c.JSON(http.StatusOK, agent.Joined{Cluster: key, Credential: credential})
}

// callingAgent is the cluster of the agent that sent the request (403 for anyone else),
// whose call it notes (agentwatch.go).
func (s *Server) callingAgent(c echo.Context) (string, error) {
	p := principal(c)
	if p == nil || p.Agent == "" {
		return "", httpErr(http.StatusForbidden, "%s %s requires an agent's credential", c.Request().Method, c.Path())
	}
	if s.agentWatch.called(p.Agent, time.Now()) {
		go s.watchAgents()
	}
	return p.Agent, nil
}

// agentWork answers the calling agent's work. With ?known (the version it holds, from its
// last answer) and ?wait, a poll whose work is still that version is held until it
// changes or the wait ends: 304 then.
func (s *Server) agentWork(c echo.Context) error {
	key, err := s.callingAgent(c)
	if err != nil {
		return err
	}
	known := c.QueryParam("known")
	wait := time.Duration(0)
	if q := c.QueryParam("wait"); q != "" {
		n, err := strconv.Atoi(q)
		if err != nil || n < 0 {
			return badRequest("wait %q: not a number of seconds", q)
		}
		wait = min(time.Duration(n)*time.Second, agentHold)
	}
	ctx := c.Request().Context()
	if known != "" && wait > 0 {
		if ch := s.agentWatch.subscribe(key, known, time.Now()); ch != nil {
			t := time.NewTimer(wait)
			select {
			case <-ch:
			case <-t.C:
			case <-ctx.Done():
			}
			t.Stop()
			s.agentWatch.unsubscribe(key, ch)
			if ctx.Err() != nil {
				return nil
			}
			switch current, dropped := s.agentWatch.current(key, known); {
			case dropped: // its credential may have been voided while the poll was held
				token, _ := bearer(c)
				if _, err := s.agentPrincipal(ctx, token); err != nil {
					return err
				}
			case current:
				return c.NoContent(http.StatusNotModified)
			}
		}
	}
	items, reports, err := s.agents().Work(ctx, key)
	if err != nil {
		return err
	}
	s.completeMissed(ctx, items, reports)
	v := s.agentWatch.record(key, items, reports, time.Now())
	if v == known && wait > 0 {
		return c.NoContent(http.StatusNotModified) // read afresh, unchanged: the next poll is held
	}
	out := agent.Work{Cluster: key, Items: make([]agent.WorkItem, 0, len(items)), Poll: int(agentPoll / time.Second),
		Version: v, Hold: int(agentHold / time.Second)}
	for _, it := range items {
		ai := agent.WorkItem{Item: it}
		if i := slices.IndexFunc(reports, func(r agent.Report) bool { return r.ID == it.ID }); i >= 0 {
			r := reports[i]
			ai.Reported = &agent.Outcome{Gen: r.Gen, Result: r.Result, Applied: r.Applied, Error: r.Error}
		}
		out.Items = append(out.Items, ai)
	}
	return c.JSON(http.StatusOK, out)
}

// namedRevision checks that revision ctxID is one the calling agent's work names (the
// revision an item wants, removes or follows, or the one the cluster holds), and returns
// the item that names it.
func (s *Server) namedRevision(c echo.Context) (key string, it *agent.Item, err error) {
	if key, err = s.callingAgent(c); err != nil {
		return "", nil, err
	}
	ctx, ctxID := c.Request().Context(), c.Param("context")
	if it, ok := s.agentWatch.named(key, ctxID, time.Now()); ok {
		return key, it, nil
	}
	items, reports, err := s.agents().Work(ctx, key)
	if err != nil {
		return "", nil, err
	}
	for i := range items {
		if x := &items[i]; x.Context == ctxID || x.Remove == ctxID || x.Previous == ctxID {
			return key, x, nil
		}
	}
	for _, r := range reports {
		if r.Applied == ctxID {
			return key, &agent.Item{}, nil
		}
	}
	return "", nil, httpErr(http.StatusNotFound, "revision %q is not in the work of cluster %q", ctxID, key)
}

func (s *Server) agentRevision(c echo.Context) error {
	key, _, err := s.namedRevision(c)
	if err != nil {
		return err
	}
	ctx, ctxID := c.Request().Context(), c.Param("context")
	header, apps, err := s.revision(ctx, ctxID)
	if err != nil {
		return err
	}
	placements, err := s.Contexts.PlacedApps(ctx, ctxID, key)
	if err != nil {
		return err
	}
	apps = appctx.ForCluster(apps, placements)
	appctx.List(placements, apps)
	placed := map[string]*appctx.App{}
	for _, p := range placements {
		if a := apps[p.App]; a != nil {
			placed[p.App] = &appctx.App{Name: a.Name, Deps: a.Deps, Objects: a.ObjectsFor(p)}
		}
	}
	// What the apply needs of the header, nothing of the DIG or its project beyond it.
	needed := &appctx.Context{ID: header.ID, Instance: header.Instance, Namespace: header.Namespace, Apps: header.Apps}
	c.Response().Header().Set(echo.HeaderCacheControl, "no-store") // Secrets, opened
	return c.JSON(http.StatusOK, agent.Revision{Header: needed, Apps: placed, Placements: placements})
}

// agentStatuses records the statuses an agent sends for a revision's objects on its
// cluster: only the statuses, index by index of what is stored, of the objects the
// revision placed there; nothing else of what it sends is kept.
func (s *Server) agentStatuses(c echo.Context) error {
	key, it, err := s.namedRevision(c)
	if err != nil {
		return err
	}
	var sent []*appctx.ClusterApp
	if err := readJSON(c, &sent); err != nil {
		return err
	}
	ctx, ctxID := c.Request().Context(), c.Param("context")
	stored, err := s.Contexts.PlacedApps(ctx, ctxID, key)
	if err != nil {
		return err
	}
	_, apps, err := s.revision(ctx, ctxID)
	if err != nil {
		return err
	}
	appctx.List(stored, appctx.ForCluster(apps, stored))
	for _, p := range stored {
		p.Cluster = key
		i := slices.IndexFunc(sent, func(q *appctx.ClusterApp) bool { return q != nil && q.App == p.App })
		if i < 0 {
			continue
		}
		q := sent[i]
		for j := range p.Resources {
			if j >= len(q.Resources) || q.Resources[j].Ref.Kind != p.Resources[j].Kind || q.Resources[j].Name != p.Resources[j].Name {
				continue
			}
			r, sr := &p.Resources[j], q.Resources[j]
			if !lifecycle.IsResourceStatus(sr.Status) {
				return badRequest("apps[%d].resources[%d].status %q is no object status", i, j, sr.Status)
			}
			r.Namespace, r.Status, r.Attempts, r.Error, r.Warning, r.Updated = sr.Namespace, sr.Status, sr.Attempts, clip(sr.Error), clip(sr.Warning), sr.Updated
		}
	}
	var by appctx.Attempt
	if it.Context == ctxID || it.Remove == ctxID {
		by = it.Writer
	}
	if err := s.Contexts.SaveStatuses(ctx, ctxID, by, stored); err != nil && !errors.Is(err, appctx.ErrSuperseded) {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// agentLive records what an agent's cluster shows of a revision's objects, as a live read
// of the push path would: the state, readiness and reasons of each object the revision
// placed there, for the status, the dashboard and a rollout's gates.
func (s *Server) agentLive(c echo.Context) error {
	key, _, err := s.namedRevision(c)
	if err != nil {
		return err
	}
	var sent []agent.LiveApp
	if err := readJSON(c, &sent); err != nil {
		return err
	}
	ctx, ctxID := c.Request().Context(), c.Param("context")
	stored, err := s.Contexts.ClusterApps(ctx, ctxID, key)
	if err != nil {
		return err
	}
	now := time.Now().UTC()
	for i, l := range sent {
		j := slices.IndexFunc(stored, func(p *appctx.ClusterApp) bool { return p.App == l.App })
		if j < 0 {
			return badRequest("[%d].app %q is not placed on cluster %q by this revision", i, l.App, key)
		}
		p := stored[j]
		if len(l.Objects) != len(p.Resources) {
			return badRequest("[%d].objects: %d, for the %d objects of app %q", i, len(l.Objects), len(p.Resources), l.App)
		}
		live := make([]appctx.Live, len(l.Objects))
		for k, o := range l.Objects {
			switch o.State {
			case appctx.LivePresent, appctx.LiveNotPresent, appctx.LiveUnknown:
			default:
				return badRequest("[%d].objects[%d].state %q is none of %s, %s and %s", i, k, o.State, appctx.LivePresent, appctx.LiveNotPresent, appctx.LiveUnknown)
			}
			live[k] = appctx.Live{State: o.State, Ready: o.Ready && o.State == appctx.LivePresent, Error: clip(o.Error), Reason: clip(o.Reason)}
		}
		p.Live, p.LiveAt = live, now
	}
	if err := s.Contexts.SaveLive(ctx, ctxID, key, stored); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// clip bounds a message an agent sends.
func clip(s string) string {
	if len(s) > 4096 {
		return s[:4096]
	}
	return s
}

func (s *Server) agentReport(c echo.Context) error {
	key, err := s.callingAgent(c)
	if err != nil {
		return err
	}
	var r agent.Outcome
	if err := readJSON(c, &r); err != nil {
		return err
	}
	ctx, id := c.Request().Context(), agent.ItemID(key, c.Param("instance"))
	// Checked against the item as this api holds it, and when that does not pass (it may
	// not know a publication of the last seconds yet), as the store has it.
	it := s.agentWatch.item(key, id, time.Now())
	if it == nil || r.Gen > it.Gen || r.Applied != "" && r.Applied != it.Context && r.Applied != it.Previous {
		if it, err = s.agents().Item(ctx, id); err != nil {
			return err
		}
	}
	switch {
	case it == nil:
		return httpErr(http.StatusNotFound, "cluster %q has no work of instance %q", key, c.Param("instance"))
	case r.Gen > it.Gen:
		return badRequest("gen %d was never published to cluster %q (its item is at %d)", r.Gen, key, it.Gen)
	case r.Applied != "" && r.Applied != it.Context && r.Applied != it.Previous:
		return badRequest("applied %q is not a revision of this item", r.Applied)
	}
	// Counts alone: what the workflow makes of a result (an agent to await, a cluster to
	// skip) is temco's to say, not an agent's.
	res := lifecycle.ClusterResult{Done: max(r.Result.Done, 0), Failed: max(r.Result.Failed, 0), NotReady: max(r.Result.NotReady, 0)}
	r.Error = clip(r.Error)
	if it, err = s.agents().SaveReport(ctx, id, agent.Report{Cluster: key, Gen: r.Gen, Result: res, Applied: r.Applied, Error: r.Error}); err != nil {
		return err
	}
	s.agentWatch.reported(key, id, r.Applied)
	if it != nil && it.Token != nil && it.TokenGen <= r.Gen && s.Activities != nil && s.agentWatch.toComplete(id, it.TokenGen) {
		s.complete(ctx, id, it.Token, res)
	}
	return c.NoContent(http.StatusNoContent)
}

// missedFor bounds the reports completeMissed looks at: a wait left pending longer has
// had its attempt end (after its offline policy's after) and read the report itself.
const missedFor = time.Hour

// completeMissed completes the waits whose reports are stored but may never have been
// passed on: an api that stored a report and stopped before completing the wait leaves it
// pending until its attempt ends. Each api passes each on once; Temporal refuses a
// completion of a wait that ended.
func (s *Server) completeMissed(ctx context.Context, items []agent.Item, reports []agent.Report) {
	if s.Activities == nil {
		return
	}
	for _, it := range items {
		i := slices.IndexFunc(reports, func(r agent.Report) bool { return r.ID == it.ID })
		if it.Token == nil || i < 0 || reports[i].Gen < it.TokenGen || time.Since(reports[i].Reported) > missedFor ||
			!s.agentWatch.toComplete(it.ID, it.TokenGen) {
			continue
		}
		s.complete(ctx, it.ID, it.Token, reports[i].Result)
	}
}

// complete completes the AwaitAgent activity whose sealed token is stored with item id. A
// token of an attempt that has ended since is refused by Temporal: the next attempt reads
// the report itself.
func (s *Server) complete(ctx context.Context, id string, sealed []byte, result lifecycle.ClusterResult) {
	token, err := s.Keys.Open(sealed, []byte(id))
	if err != nil {
		s.Log.Warn("open an agent wait's task token", "item", id, "error", err)
		return
	}
	if err := s.Activities.CompleteActivity(ctx, token, result, nil); err != nil {
		s.Log.Info("complete an agent wait", "item", id, "error", err)
	}
}

// agentCache remembers checked agent credentials for agentCacheTTL.
type agentCache struct {
	mu      sync.Mutex
	checked map[[32]byte]agentEntry
}

type agentEntry struct {
	key     string
	checked time.Time
}

// maxAgentCache bounds the entries: past it, the cache starts afresh.
const maxAgentCache = 100_000

func (a *agentCache) lookup(sum [32]byte, now time.Time) (string, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	e, ok := a.checked[sum]
	if !ok || now.Sub(e.checked) > agentCacheTTL {
		return "", false
	}
	return e.key, true
}

func (a *agentCache) store(sum [32]byte, key string, now time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.checked == nil || len(a.checked) > maxAgentCache {
		a.checked = map[[32]byte]agentEntry{}
	}
	a.checked[sum] = agentEntry{key: key, checked: now}
}

func (a *agentCache) forget(key string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for sum, e := range a.checked {
		if e.key == key {
			delete(a.checked, sum)
		}
	}
}

func (a *agentCache) clear() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.checked = nil
}

// agentPrincipal checks an agent's credential: the principal of its cluster, which
// authorize confines to /v2/agent/....
func (s *Server) agentPrincipal(ctx context.Context, credential string) (*auth.Principal, error) {
	now := time.Now()
	sum := sha256.Sum256([]byte(credential))
	key, ok := s.agentCache.lookup(sum, now)
	if !ok {
		var err error
		if key, err = s.agents().Authenticate(ctx, credential, s.incarnation(ctx)); err != nil {
			if errors.Is(err, agent.ErrInvalid) {
				return nil, httpErr(http.StatusUnauthorized, "%v", err)
			}
			return nil, err
		}
		s.agentCache.store(sum, key, now)
	}
	return auth.AgentOf(key), nil
}
