package api

import (
	"context"
	"errors"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/model"
	"github.com/temco/temco/internal/core/store"
)

// statusQuery is a parsed status request, read as EMCO 22.06+ reads it.
type statusQuery struct {
	ready    bool   // readiness (status=ready, type=cluster) rather than deployment
	legacy   bool   // type=rsync|cluster field names (DIGs' default)
	output   string // summary | all | detail
	instance string // "" for the latest
	list     string // apps | clusters | resources: list names instead of statuses
	apps     []string
	clusters []string // provider+cluster
	names    []string // resource names
}

// statusQueryParams are the parameters a status request may carry.
var statusQueryParams = []string{"instance", "type", "status", "output", "app", "cluster", "resource", "apps", "clusters", "resources"}

// parseStatusQuery validates in EMCO's order: instance, type, status, output, then the
// filters. Logical clouds have no type parameter, no app filter and no apps flag, and
// default to status=ready, as dcm's status does.
func parseStatusQuery(c echo.Context, cloud bool) (statusQuery, error) {
	params := c.QueryParams()
	first := func(k string) (string, bool) {
		v, ok := params[k]
		if !ok || len(v) == 0 {
			return "", ok
		}
		return v[0], true
	}
	q := statusQuery{output: "all", legacy: !cloud, ready: cloud}
	if v, ok := first("instance"); ok {
		if v == "" {
			return q, badRequest("instance is empty: name a context of the status history, or leave it out for the latest")
		}
		q.instance = v
	}
	if t, ok := first("type"); ok && !cloud {
		switch t {
		case "rsync":
		case "cluster":
			q.ready = true
		default:
			return q, badRequest("type=%q is invalid: use rsync or cluster (or status=deployed|ready)", t)
		}
	}
	if st, ok := first("status"); ok {
		switch st {
		case "deployed", "ready":
			q.legacy, q.ready = false, st == "ready"
		default:
			return q, badRequest("status=%q is invalid: use deployed or ready", st)
		}
	}
	if o, ok := first("output"); ok {
		switch o {
		case "summary", "all", "detail":
			q.output = o
		default:
			return q, badRequest("output=%q is invalid: use summary, all or detail", o)
		}
	}
	if !cloud {
		for _, a := range params["app"] {
			if err := model.ValidateName("app filter", a); err != nil {
				return q, badRequest("%v", err)
			}
			q.apps = append(q.apps, a)
		}
	}
	for _, cl := range params["cluster"] {
		cl = strings.ReplaceAll(cl, " ", "+") // a '+' left unescaped in a query arrives as a space
		p, name, ok := strings.Cut(cl, "+")
		if !ok || model.ValidateName("provider", p) != nil || model.ValidateName("cluster", name) != nil {
			return q, badRequest("cluster=%q is invalid: use provider+cluster (send + as %%2B)", cl)
		}
		q.clusters = append(q.clusters, cl)
	}
	for _, r := range params["resource"] {
		if err := model.ValidateName("resource filter", r); err != nil {
			return q, badRequest("%v", err)
		}
		q.names = append(q.names, r)
	}
	// Flags count by presence, whatever their value, as in EMCO.
	for _, flag := range []string{"apps", "clusters", "resources"} {
		if _, ok := params[flag]; ok && !(cloud && flag == "apps") {
			q.list = flag
			break
		}
	}
	return q, nil
}

func (s *Server) status(target targetFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		var q statusQuery
		t, d, info, err := s.loadTarget(c, target, func(t lifecycle.Target) (err error) {
			q, err = parseStatusQuery(c, t.Kind().Status == lifecycle.ByCluster)
			return err
		})
		if err != nil {
			return err
		}
		return s.writeStatus(c, t, d, info, q)
	}
}

// writeStatus answers a status request: the target's identity and history, then the
// context asked for with its running operation, and its statuses as q asks for them
// (read from the clusters first for status=ready).
func (s *Server) writeStatus(c echo.Context, target lifecycle.Target, d *store.Doc, info lifecycle.StateInfo, q statusQuery) error {
	ctx := c.Request().Context()
	id, err := statusIdentity(target, d)
	if err != nil {
		return err
	}
	ctxID, header, err := s.statusContext(ctx, target, info, q.instance)
	if err != nil {
		return err
	}
	if q.list != "" {
		return s.writeList(c, id, header, q)
	}
	out := &statusResult{identity: id, States: states(info, header)}
	if header == nil { // never instantiated: the identity and history only
		return c.JSON(http.StatusOK, out)
	}
	for _, a := range q.apps {
		if !slices.Contains(header.Apps, a) {
			return badRequest("app filter %q: %s has no app %q in context %s", a, target, a, ctxID)
		}
	}
	describeContext(out, ctxID, header)
	if err := s.addRunning(ctx, out, target, ctxID, header, q); err != nil {
		return err
	}
	if q.ready {
		if err := s.allowLiveRead(c); err != nil {
			return err
		}
		if err := s.Ops.ReadClusters(ctx, target, lifecycle.ReadInput{ContextID: ctxID, Detail: q.output == "detail"}); err != nil {
			return operationErr(err)
		}
	}
	b, err := s.statusesOf(ctx, ctxID, header, q)
	if err != nil {
		return err
	}
	b.finish(out)
	if target.Kind().Apps && q.ready && q.unfiltered() {
		// A read of every object: the fleet's home shows its counts until the next one.
		if err := s.Contexts.SaveReadiness(ctx, ctxID, b.readiness(time.Now().UTC())); err != nil {
			return err
		}
	}
	shapeStatus(out, target.Kind().Status)
	return c.JSON(http.StatusOK, out)
}

// statusIdentity names the target in its status answer; a DIG with its composite app and
// profile.
func statusIdentity(target lifecycle.Target, d *store.Doc) (identity, error) {
	id := identity{Project: target.Project, Name: target.Name(), ClusterProvider: target.ClusterProvider}
	if target.Kind().Status == lifecycle.ByApp { // a DIG's: its composite app's
		spec, err := model.Decode[model.DIGSpec](d.Body)
		if err != nil {
			return id, err
		}
		id.CompositeApp, id.CompositeAppVersion, id.CompositeProfile = target.CompositeApp, target.Version, spec.Spec.CompositeProfile
	}
	return id, nil
}

// statusContext is the context a status answer shows, and its header: instance, which
// must be in the target's status history, else the latest ("" and nil: none yet).
func (s *Server) statusContext(ctx context.Context, target lifecycle.Target, info lifecycle.StateInfo, instance string) (string, *appctx.Context, error) {
	ctxID := instance
	if ctxID == "" {
		ctxID = info.ContextID()
	} else if !slices.ContainsFunc(info.Actions, func(a lifecycle.Action) bool { return a.ContextID == ctxID }) {
		return "", nil, badRequest("instance %q is not a context in the status history of %s", ctxID, target)
	}
	if ctxID == "" {
		return "", nil, nil
	}
	header, err := s.Contexts.Get(ctx, ctxID)
	if errors.Is(err, appctx.ErrNotFound) {
		return "", nil, httpErr(http.StatusNotFound, "the context %q of %s no longer exists", ctxID, target)
	}
	if err != nil {
		return "", nil, err
	}
	return ctxID, header, nil
}

// describeContext copies what the context's header says of its revision into out.
func describeContext(out *statusResult, ctxID string, header *appctx.Context) {
	out.Instance, out.Revision, out.Error, out.Hooks, out.Images = ctxID, header.Revision, header.Error, header.Hooks, header.Images
	for _, app := range slices.Sorted(maps.Keys(header.Artifacts)) {
		out.Artifacts = append(out.Artifacts, header.Artifacts[app])
	}
}

// addRunning adds the running operation of context ctxID and, for a DIG, its rollout and
// the Extensions' sections (its last drift check, its autoscaler).
func (s *Server) addRunning(ctx context.Context, out *statusResult, target lifecycle.Target, ctxID string, header *appctx.Context, q statusQuery) error {
	var err error
	if out.Operation, err = s.Ops.Running(ctx, target, header.Status, ctxID); err != nil {
		return operationErr(err)
	}
	if !target.Kind().Apps {
		return nil
	}
	if out.Rollout, err = s.rolloutOf(ctx, header); err != nil {
		return err
	}
	return s.statusSections(ctx, out, target.ID(), ctxID, q)
}

// statusesOf reads the statuses of context ctxID as q asks for them: for the dashboard's
// summary, at any scale, the per-batch counts rather than every cluster's document.
func (s *Server) statusesOf(ctx context.Context, ctxID string, header *appctx.Context, q statusQuery) (*statusBuilder, error) {
	b := newStatusBuilder(q, header.Status)
	if q.output == "summary" && !q.ready && len(q.clusters) == 0 && len(q.names) == 0 {
		var err error
		if b.deployed, err = s.Contexts.SummaryOf(ctx, header, q.apps); err != nil {
			return nil, err
		}
		return b, nil
	}
	placements, err := s.Contexts.Placements(ctx, ctxID, appctx.Filter{Apps: q.apps, Clusters: q.clusters})
	if err != nil {
		return nil, err
	}
	var apps map[string]*appctx.App
	if q.output == "detail" && !q.ready {
		if apps, err = s.Contexts.Apps(ctx, header); err != nil {
			return nil, err
		}
	}
	for _, p := range placements {
		b.add(p, apps)
	}
	return b, nil
}

// unfiltered tells whether q asks for every object of the context.
func (q statusQuery) unfiltered() bool {
	return len(q.apps) == 0 && len(q.clusters) == 0 && len(q.names) == 0
}

// shapeStatus lays out out's statuses as the target's kind answers them: by app (DIGs),
// as a list of clusters (logical clouds) or as its one cluster (a cluster's network
// intents).
func shapeStatus(out *statusResult, layout lifecycle.Layout) {
	switch layout {
	case lifecycle.ByCluster:
		for _, a := range out.Apps {
			out.Clusters = append(out.Clusters, a.Clusters...)
		}
		out.Apps = nil
	case lifecycle.OneCluster:
		if len(out.Apps) > 0 && len(out.Apps[0].Clusters) > 0 {
			out.Cluster = &out.Apps[0].Clusters[0]
		}
		out.Apps = nil
	}
}

// writeList answers the apps, clusters and resources flags: names, no statuses.
func (s *Server) writeList(c echo.Context, id identity, header *appctx.Context, q statusQuery) error {
	ctx := c.Request().Context()
	if q.list == "apps" {
		out := appsList{identity: id, Apps: []string{}}
		if header != nil {
			out.Apps = append(out.Apps, header.Apps...)
			slices.Sort(out.Apps)
		}
		return c.JSON(http.StatusOK, out)
	}
	var placements []*appctx.ClusterApp
	if header != nil {
		f := appctx.Filter{Apps: q.apps}
		if q.list == "resources" {
			f.Clusters = q.clusters
		}
		var err error
		if placements, err = s.Contexts.Placements(ctx, header.ID, f); err != nil {
			return err
		}
	}
	if q.list == "clusters" {
		out := clustersList{identity: id, ClustersByApp: []clustersOfApp{}}
		for _, p := range placements {
			if n := len(out.ClustersByApp); n == 0 || out.ClustersByApp[n-1].App != p.App {
				out.ClustersByApp = append(out.ClustersByApp, clustersOfApp{App: p.App})
			}
			provider, cluster := lifecycle.SplitClusterKey(p.Cluster)
			last := &out.ClustersByApp[len(out.ClustersByApp)-1]
			last.Clusters = append(last.Clusters, clusterName{provider, cluster})
		}
		return c.JSON(http.StatusOK, out)
	}
	out := resourcesList{identity: id, ResourcesByApp: []resourcesOfPlacement{}}
	for _, p := range placements {
		provider, cluster := lifecycle.SplitClusterKey(p.Cluster)
		e := resourcesOfPlacement{App: p.App, ClusterProvider: provider, Cluster: cluster, Resources: []resourceName{}}
		for _, r := range p.Resources {
			e.Resources = append(e.Resources, resourceName{Name: r.Name, GVK: gvk{r.Group, r.Version, r.Kind}})
		}
		out.ResourcesByApp = append(out.ResourcesByApp, e)
	}
	return c.JSON(http.StatusOK, out)
}
