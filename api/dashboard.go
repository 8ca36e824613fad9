package api

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"golang.org/x/sync/errgroup"

	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/artifact"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/model"
	"github.com/temco/temco/internal/core/store"
)

// The dashboard's view of a DIG (dashboard/README.md): one answer per screen, whatever the
// number of clusters — counts come from the per-batch summaries and only one page of
// cluster documents is read, unless a state filter has to look at every cluster.

const (
	dashboardLimit    = 50
	dashboardMaxLimit = 500
	// liveReadWait bounds the live read of a page: an unreachable cluster must not hold
	// the screen; what the read learns later shows on the next poll.
	liveReadWait = 5 * time.Second
	// progressWait bounds the progress query, which needs a worker to answer.
	progressWait = 2 * time.Second
)

// Cluster and cell states, worst first: a cluster shows the worst of its apps.
var cellStates = []string{lifecycle.ResFailed, lifecycle.ResRetrying, lifecycle.ResPending, readyNotReady,
	lifecycle.ResApplied, readyReady, lifecycle.ResDeleted}

var dashboardQueryParams = []string{"offset", "limit", "cluster", "label", "state", "live"}

type dashboardQuery struct {
	offset, limit  int
	cluster, label string
	state          string
	live           bool
}

type dashboardView struct {
	Project             string         `json:"project"`
	CompositeApp        string         `json:"compositeApp"`
	CompositeAppVersion string         `json:"compositeAppVersion"`
	Name                string         `json:"name"`
	State               string         `json:"state"`
	Instance            string         `json:"instance,omitempty"`
	Revision            int64          `json:"revision,omitempty"`
	ContextStatus       string         `json:"contextStatus,omitempty"`
	Error               string         `json:"error,omitempty"`
	History             []statusAction `json:"history"`
	Revisions           []revisionView `json:"revisions"`
	Operation           *operationView `json:"operation"`
	Rollout             *rolloutStatus `json:"rollout"`
	Autoscaler          any            `json:"autoscaler"` // features/autoscale's section (Mount.DIGStatus)
	Apps                []string       `json:"apps"`
	Objects             map[string]int `json:"objects"`
	Total               int            `json:"total"`
	Matched             int            `json:"matched"`
	Offset              int            `json:"offset"`
	Limit               int            `json:"limit"`
	States              map[string]int `json:"states,omitempty"`
	// AppStates counts, per app, the clusters it is placed on by its cell's state: only
	// with a state filter, which reads every cluster's documents anyway.
	AppStates map[string]map[string]int `json:"appStates,omitempty"`
	Clusters  []dashboardClusterRow     `json:"clusters"`
	// LiveError says why the live read asked for did not finish (the stored state is shown).
	LiveError string `json:"liveError,omitempty"`
	// Artifacts are the charts the context's apps name by reference (an OCI registry, a
	// Helm repository, a URL), by app: how far each one's pipeline got. Absent when every
	// chart was uploaded.
	Artifacts []artifact.Status `json:"artifacts,omitempty"`
}

type revisionView struct {
	Revision int64     `json:"revision"`
	Instance string    `json:"instance"`
	State    string    `json:"state"`
	Time     time.Time `json:"time"`
}

type operationView struct {
	lifecycle.RunningOp
	Op            string `json:"op,omitempty"`
	Phase         string `json:"phase,omitempty"`
	ClustersDone  int    `json:"clustersDone"`
	ClustersTotal int    `json:"clustersTotal"`
	BatchesDone   int    `json:"batchesDone"`
	BatchesTotal  int    `json:"batchesTotal"`
	Stopped       bool   `json:"stopped"`
	// ProgressError says why the progress is missing (the worker did not answer).
	ProgressError string `json:"progressError,omitempty"`
}

type dashboardClusterRow struct {
	ClusterProvider string                   `json:"clusterProvider"`
	Cluster         string                   `json:"cluster"`
	Labels          []string                 `json:"labels"`
	State           string                   `json:"state"`
	ReadAt          *time.Time               `json:"readAt,omitempty"`
	Apps            map[string]dashboardCell `json:"apps"`
	Retry           *dashboardRetry          `json:"retry,omitempty"`
}

type dashboardCell struct {
	State    string `json:"state"`
	Deployed string `json:"deployed"`
	Ready    string `json:"ready,omitempty"` // "" until its live state was read
	Objects  int    `json:"objects"`
}

type dashboardRetry struct {
	Attempts int32     `json:"attempts"`
	Error    string    `json:"error"`
	NextTry  time.Time `json:"nextTry"`
}

type dashboardObjects struct {
	Cluster string            `json:"cluster"`
	App     string            `json:"app"`
	ReadAt  *time.Time        `json:"readAt,omitempty"`
	Objects []dashboardObject `json:"objects"`
	// LiveError says why the live read did not finish (the last read state is shown).
	LiveError string `json:"liveError,omitempty"`
}

type dashboardObject struct {
	Kind      string `json:"kind"`
	Group     string `json:"group"`
	Version   string `json:"version"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	Deployed  string `json:"deployed"`
	Attempts  int32  `json:"attempts,omitempty"`
	Error     string `json:"error,omitempty"`
	Warning   string `json:"warning,omitempty"` // what the apply left out
	State     string `json:"state"`             // Present, NotPresent, Unknown, Omitted; "" not read
	Ready     bool   `json:"ready"`
	// AsApplied: a rollout gate took the object as its apply left it, not reading it (a
	// kind Ready once it exists); a live read reads it.
	AsApplied bool            `json:"asApplied,omitempty"`
	LiveError string          `json:"liveError,omitempty"`
	Detail    json.RawMessage `json:"detail,omitempty"`
}

func (s *Server) registerDashboard(g *echo.Group) {
	s.route(g, opDoc{method: http.MethodGet, path: routeDIG + "/dashboard", summary: "A DIG's dashboard screen: state, operation, one page of its clusters",
		description: "temco's own. Filters: cluster (substring of provider+cluster), label, state; live=true reads the page's clusters first.",
		code:        http.StatusOK, response: typeOf[dashboardView](), query: dashboardQueryParams, liveReads: true}, s.dashboard)
	s.route(g, opDoc{method: http.MethodGet, path: routeDIG + "/dashboard/clusters/:clusterProvider/:cluster/apps/:app",
		summary: "The objects of one app on one cluster, read live", code: http.StatusOK, response: typeOf[dashboardObjects](), liveReads: true}, s.dashboardObjects)
}

func parseDashboardQuery(c echo.Context) (dashboardQuery, error) {
	q := dashboardQuery{limit: dashboardLimit}
	for k := range c.QueryParams() {
		if !slices.Contains(dashboardQueryParams, k) {
			return q, badRequest("unknown query parameter %q: use %s", k, strings.Join(dashboardQueryParams, ", "))
		}
	}
	if err := intParam(c, "offset", &q.offset, 0, 1<<30); err != nil {
		return q, err
	}
	if err := intParam(c, "limit", &q.limit, 1, dashboardMaxLimit); err != nil {
		return q, err
	}
	q.cluster = strings.ToLower(c.QueryParam("cluster"))
	if len(q.cluster) > 2*model.MaxNameLen+1 {
		return q, badRequest("cluster filter is longer than a cluster key (%d characters)", 2*model.MaxNameLen+1)
	}
	if q.label = c.QueryParam("label"); q.label != "" {
		if err := model.ValidateName("label filter", q.label); err != nil {
			return q, badRequest("%v", err)
		}
	}
	if q.state = c.QueryParam("state"); q.state != "" && !slices.Contains(cellStates, q.state) {
		return q, badRequest("state=%q is invalid: use one of %s", q.state, strings.Join(cellStates, ", "))
	}
	switch v := c.QueryParam("live"); v {
	case "", "false":
	case "true":
		q.live = true
	default:
		return q, badRequest("live=%q is invalid: use true or false", v)
	}
	return q, nil
}

// intParam reads query parameter name, a whole number from lo to hi, into dst (left as it
// is when the parameter is absent).
func intParam(c echo.Context, name string, dst *int, lo, hi int) error {
	v := c.QueryParam(name)
	if v == "" {
		return nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return badRequest("%s=%q is invalid: use a whole number from %d to %d", name, v, lo, hi)
	}
	*dst = n
	return nil
}

// dashboard answers a DIG's screen: its state and history, then its context's operation,
// counts and one page of its clusters (filtered, read live first when asked).
func (s *Server) dashboard(c echo.Context) error {
	var q dashboardQuery
	dig, _, info, err := s.loadTarget(c, digRef, func(lifecycle.Target) (err error) {
		q, err = parseDashboardQuery(c)
		return err
	})
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	out, keys, err := s.overview(ctx, dig, info)
	if err != nil {
		return err
	}
	out.Offset, out.Limit = q.offset, q.limit
	ctxID := out.Instance
	if ctxID == "" { // never instantiated, or its context is gone
		return c.JSON(http.StatusOK, out)
	}
	if keys, err = s.filterClusters(ctx, keys, q); err != nil {
		return err
	}
	// A state filter needs every remaining cluster's state: it reads their documents.
	var all map[string][]*appctx.ClusterApp
	if q.state != "" {
		if all, err = s.placementsByCluster(ctx, ctxID, keys); err != nil {
			return err
		}
		keys = countStates(out, keys, all, q.state)
	}
	out.Matched = len(keys)
	page := keys[min(q.offset, len(keys)):min(q.offset+q.limit, len(keys))]
	if len(page) == 0 {
		return c.JSON(http.StatusOK, out)
	}
	if q.live {
		if err := s.allowLiveRead(c); err != nil {
			return err
		}
		out.LiveError = s.readLive(ctx, dig, lifecycle.ReadInput{ContextID: ctxID, Clusters: page}, liveReadWait)
	}
	if err := s.addRows(ctx, out, ctxID, page, all, q.live); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}

// overview is what the dashboard and a DIG's state (state.go) show of the DIG whatever
// the page: its state and history and, once it has a context (out.Instance), that
// revision, its operation, rollout, autoscaler and counts, and its clusters (keys).
func (s *Server) overview(ctx context.Context, dig lifecycle.Target, info lifecycle.StateInfo) (*dashboardView, []string, error) {
	out := &dashboardView{Project: dig.Project, CompositeApp: dig.CompositeApp, CompositeAppVersion: dig.Version, Name: dig.DIG,
		State: info.Current(), Revisions: revisionsOf(info), Apps: []string{}, Objects: map[string]int{}, Clusters: []dashboardClusterRow{}}
	ctxID := info.ContextID()
	var header *appctx.Context
	if ctxID != "" {
		var err error
		if header, err = s.Contexts.Get(ctx, ctxID); err != nil && !errors.Is(err, appctx.ErrNotFound) {
			return nil, nil, err
		}
	}
	out.History = states(info, header).Actions
	if header == nil { // never instantiated, or its context is gone
		return out, nil, nil
	}
	describeRevision(out, ctxID, header)
	keys, err := s.readOverview(ctx, out, dig, ctxID, header)
	return out, keys, err
}

// describeRevision copies what the context's header says of its revision into out.
func describeRevision(out *dashboardView, ctxID string, header *appctx.Context) {
	out.Instance, out.Revision, out.ContextStatus, out.Error = ctxID, header.Revision, header.Status, header.Error
	out.Apps = append(out.Apps, header.Apps...)
	slices.Sort(out.Apps)
	for _, app := range slices.Sorted(maps.Keys(header.Artifacts)) {
		out.Artifacts = append(out.Artifacts, header.Artifacts[app])
	}
}

// readOverview adds the context's operation, rollout, autoscaler and counts of objects to
// out, and returns its clusters. Temporal's record of the operation, the rollout and the
// batches are independent reads: they go at once.
func (s *Server) readOverview(ctx context.Context, out *dashboardView, dig lifecycle.Target, ctxID string, header *appctx.Context) ([]string, error) {
	var keys []string
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) { out.Operation, err = s.operationOf(gctx, dig, header); return err })
	g.Go(func() (err error) { out.Rollout, err = s.rolloutOf(gctx, header); return err })
	s.dashboardSections(gctx, g, out, dig.ID(), ctxID)
	g.Go(func() (err error) { out.Objects, keys, err = s.Contexts.Overview(gctx, ctxID); return err })
	if err := g.Wait(); err != nil {
		return nil, err
	}
	if out.Objects == nil {
		out.Objects = map[string]int{}
	}
	out.Total = len(keys)
	return keys, nil
}

// countStates counts the clusters keys by state, and each app's cells by state, into out
// (all holds their placements), and keeps the clusters in state.
func countStates(out *dashboardView, keys []string, all map[string][]*appctx.ClusterApp, state string) []string {
	out.States, out.AppStates = map[string]int{}, map[string]map[string]int{}
	return slices.DeleteFunc(keys, func(k string) bool {
		row := rowOf(k, all[k], nil)
		out.States[row.State]++
		for app, cell := range row.Apps {
			if out.AppStates[app] == nil {
				out.AppStates[app] = map[string]int{}
			}
			out.AppStates[app][cell.State]++
		}
		return row.State != state
	})
}

// addRows adds the page's rows to out, reading their labels and, unless all has them
// from before a live read, their placements.
func (s *Server) addRows(ctx context.Context, out *dashboardView, ctxID string, page []string, all map[string][]*appctx.ClusterApp, live bool) error {
	var labels map[string][]string
	g, gctx := errgroup.WithContext(ctx)
	if all == nil || live {
		g.Go(func() (err error) { all, err = s.placementsByCluster(gctx, ctxID, page); return err })
	}
	g.Go(func() (err error) { labels, err = s.clusterLabels(gctx, page); return err })
	if err := g.Wait(); err != nil {
		return err
	}
	for _, k := range page {
		out.Clusters = append(out.Clusters, rowOf(k, all[k], labels[k]))
	}
	return nil
}

// readLive reads clusters live for at most wait; a read that takes longer goes on in its
// workflow, and the answer says so instead of waiting.
func (s *Server) readLive(ctx context.Context, dig lifecycle.Target, in lifecycle.ReadInput, wait time.Duration) string {
	rctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	if err := s.Ops.ReadClusters(rctx, dig, in); err != nil {
		if rctx.Err() != nil && ctx.Err() == nil {
			return "the live read did not finish within " + wait.String() + ": showing the last state read"
		}
		return "the live read failed: " + err.Error()
	}
	return ""
}

// operationOf describes the context's running operation and how far it is.
func (s *Server) operationOf(ctx context.Context, dig lifecycle.Target, header *appctx.Context) (*operationView, error) {
	run, err := s.Ops.Running(ctx, dig, header.Status, header.ID)
	if err != nil {
		return nil, operationErr(err)
	}
	if run == nil {
		return nil, nil
	}
	out := &operationView{RunningOp: *run}
	pctx, cancel := context.WithTimeout(ctx, progressWait)
	defer cancel()
	p, err := s.Ops.Progress(pctx, run)
	if err != nil {
		out.ProgressError = "the operation's workflow did not answer (is a worker running?): " + err.Error()
		return out, nil
	}
	out.Op, out.Phase, out.Stopped = p.Op, p.Phase, p.Stopped
	out.ClustersDone, out.ClustersTotal, out.BatchesDone, out.BatchesTotal = p.ClustersDone, p.ClustersTotal, p.BatchesDone, p.BatchesTotal
	return out, nil
}

// filterClusters keeps the clusters matching the name and label filters.
func (s *Server) filterClusters(ctx context.Context, keys []string, q dashboardQuery) ([]string, error) {
	if q.cluster != "" {
		keys = slices.DeleteFunc(slices.Clone(keys), func(k string) bool { return !strings.Contains(strings.ToLower(k), q.cluster) })
	}
	if q.label == "" {
		return keys, nil
	}
	labelled := map[string]bool{}
	for _, p := range providersOf(keys) {
		docs, err := s.Store.List(ctx, store.Query{Scope: "/cluster-providers/" + p, Kind: model.KindClusterLabel, Name: q.label})
		if err != nil {
			return nil, err
		}
		for _, d := range docs {
			labelled[lifecycle.ClusterKey(p, d.Parent[strings.LastIndex(d.Parent, "/")+1:])] = true
		}
	}
	return slices.DeleteFunc(slices.Clone(keys), func(k string) bool { return !labelled[k] }), nil
}

// clusterLabels reads the labels of a page of clusters, a few clusters at a time.
func (s *Server) clusterLabels(ctx context.Context, keys []string) (map[string][]string, error) {
	out := make([][]string, len(keys))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for i, k := range keys {
		g.Go(func() error {
			p, c := lifecycle.SplitClusterKey(k)
			docs, err := s.Store.List(gctx, store.Query{Parent: "/cluster-providers/" + p + "/clusters/" + c, Kind: model.KindClusterLabel})
			out[i] = []string{}
			for _, d := range docs {
				out[i] = append(out[i], d.Name)
			}
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	m := make(map[string][]string, len(keys))
	for i, k := range keys {
		m[k] = out[i]
	}
	return m, nil
}

func providersOf(keys []string) []string {
	var ps []string
	for _, k := range keys {
		p, _ := lifecycle.SplitClusterKey(k)
		ps = append(ps, p)
	}
	slices.Sort(ps)
	return slices.Compact(ps)
}

// placementsByCluster reads the placements of clusters (all of the context's when there
// are many: one scan beats thousands of lookups) and groups them by cluster.
func (s *Server) placementsByCluster(ctx context.Context, ctxID string, keys []string) (map[string][]*appctx.ClusterApp, error) {
	f := appctx.Filter{Clusters: keys}
	if len(keys) > dashboardMaxLimit {
		f.Clusters = nil
	}
	ps, err := s.Contexts.Placements(ctx, ctxID, f)
	if err != nil {
		return nil, err
	}
	out := map[string][]*appctx.ClusterApp{}
	for _, p := range ps {
		out[p.Cluster] = append(out[p.Cluster], p)
	}
	return out, nil
}

// rowOf is one cluster's row: a cell per app, the worst cell's state, and its retry.
func rowOf(key string, placed []*appctx.ClusterApp, labels []string) dashboardClusterRow {
	provider, cluster := lifecycle.SplitClusterKey(key)
	row := dashboardClusterRow{ClusterProvider: provider, Cluster: cluster, Labels: labels, Apps: map[string]dashboardCell{},
		State: lifecycle.ResPending}
	if row.Labels == nil {
		row.Labels = []string{}
	}
	worst := len(cellStates)
	for _, p := range placed {
		cell := cellOf(p)
		row.Apps[p.App] = cell
		if i := slices.Index(cellStates, cell.State); i < worst {
			worst, row.State = i, cell.State
		}
		if !p.LiveAt.IsZero() && (row.ReadAt == nil || p.LiveAt.Before(*row.ReadAt)) {
			at := p.LiveAt
			row.ReadAt = &at
		}
		for _, r := range p.Resources {
			if r.Status == lifecycle.ResRetrying && (row.Retry == nil || r.Attempts > row.Retry.Attempts) {
				row.Retry = &dashboardRetry{Attempts: r.Attempts, Error: r.Error, NextTry: lifecycle.NextAttempt(r.Updated, r.Attempts)}
			}
		}
	}
	return row
}

// cellOf sums up one app on one cluster: its worst deployment status and, once read,
// whether every object is there and Ready.
func cellOf(p *appctx.ClusterApp) dashboardCell {
	cell := dashboardCell{Deployed: lifecycle.ResApplied, Objects: len(p.Resources)}
	rank := func(st string) int { return cmp.Or(slices.Index(cellStates, st)+1, len(cellStates)+1) }
	for _, r := range p.Resources {
		if rank(r.Status) < rank(cell.Deployed) {
			cell.Deployed = r.Status
		}
	}
	if len(p.Resources) > 0 && !p.LiveAt.IsZero() {
		cell.Ready = readyReady
		for i := range p.Resources {
			switch {
			case i < len(p.Live) && p.Live[i].State == appctx.LiveOmitted: // not temco's to judge
			case i >= len(p.Live) || p.Live[i].State != appctx.LivePresent || !p.Live[i].Ready:
				cell.Ready = readyNotReady
			}
		}
	}
	cell.State = cell.Deployed
	if cell.Deployed == lifecycle.ResApplied && cell.Ready != "" {
		cell.State = cell.Ready
	}
	return cell
}

// revisionsOf lists the revisions of a DIG, newest first, each with its latest state.
func revisionsOf(info lifecycle.StateInfo) []revisionView {
	out := []revisionView{}
	for _, a := range info.Actions {
		if a.ContextID == "" || a.Revision == 0 {
			continue
		}
		i := slices.IndexFunc(out, func(r revisionView) bool { return r.Instance == a.ContextID })
		if i < 0 {
			out = append(out, revisionView{Revision: a.Revision, Instance: a.ContextID})
			i = len(out) - 1
		}
		out[i].State, out[i].Time = a.State, a.TimeStamp
	}
	slices.Reverse(out)
	return out
}

func (s *Server) dashboardObjects(c echo.Context) error {
	dig, _, info, err := s.loadTarget(c, digRef, func(lifecycle.Target) error {
		for _, p := range []string{"clusterProvider", "cluster", "app"} {
			if err := model.ValidateName(p+" in the path", c.Param(p)); err != nil {
				return badRequest("%v", err)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	key, app := lifecycle.ClusterKey(c.Param("clusterProvider"), c.Param("cluster")), c.Param("app")
	ctxID := info.ContextID()
	f := appctx.Filter{Apps: []string{app}, Clusters: []string{key}}
	var placed []*appctx.ClusterApp
	if ctxID != "" {
		if placed, err = s.Contexts.Placements(ctx, ctxID, f); err != nil {
			return err
		}
	}
	if len(placed) == 0 {
		return httpErr(http.StatusNotFound, "%s has no app %q on cluster %q in its current context", dig, app, key)
	}
	if err := s.allowLiveRead(c); err != nil {
		return err
	}
	out := dashboardObjects{Cluster: key, App: app, Objects: []dashboardObject{}}
	out.LiveError = s.readLive(ctx, dig, lifecycle.ReadInput{ContextID: ctxID, Detail: true, Clusters: []string{key}}, 2*liveReadWait)
	if placed, err = s.Contexts.Placements(ctx, ctxID, f); err != nil {
		return err
	}
	if len(placed) == 0 { // its operation replaced the context meanwhile
		return httpErr(http.StatusNotFound, "%s no longer has app %q on cluster %q", dig, app, key)
	}
	p := placed[0]
	if !p.LiveAt.IsZero() {
		out.ReadAt = &p.LiveAt
	}
	for i, r := range p.Resources {
		o := dashboardObject{Kind: r.Kind, Group: r.Group, Version: r.Version, Namespace: r.Namespace, Name: r.Name,
			Deployed: r.Status, Attempts: r.Attempts, Error: r.Error, Warning: r.Warning}
		if i < len(p.Live) && !p.LiveAt.IsZero() {
			l := p.Live[i]
			o.State, o.Ready, o.AsApplied, o.LiveError = l.State, l.Ready, l.Applied, l.Error
			if l.Detail != "" {
				o.Detail = json.RawMessage(l.Detail)
			}
		}
		out.Objects = append(out.Objects, o)
	}
	return c.JSON(http.StatusOK, out)
}
