package api

import (
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

func (s *Server) writeStatus(c echo.Context, target lifecycle.Target, d *store.Doc, info lifecycle.StateInfo, q statusQuery) error {
	ctx := c.Request().Context()
	var err error
	layout := target.Kind().Status
	id := identity{Project: target.Project, Name: target.Name(), ClusterProvider: target.ClusterProvider}
	if layout == lifecycle.ByApp { // a DIG's: its composite app's
		spec, err := model.Decode[model.DIGSpec](d.Body)
		if err != nil {
			return err
		}
		id.CompositeApp, id.CompositeAppVersion, id.CompositeProfile = target.CompositeApp, target.Version, spec.Spec.CompositeProfile
	}
	ctxID := q.instance
	if ctxID == "" {
		ctxID = info.ContextID()
	} else if !slices.ContainsFunc(info.Actions, func(a lifecycle.Action) bool { return a.ContextID == ctxID }) {
		return badRequest("instance %q is not a context in the status history of %s", ctxID, target)
	}
	var header *appctx.Context
	if ctxID != "" {
		header, err = s.Contexts.Get(ctx, ctxID)
		if errors.Is(err, appctx.ErrNotFound) {
			return httpErr(http.StatusNotFound, "the context %q of %s no longer exists", ctxID, target)
		}
		if err != nil {
			return err
		}
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
	out.Instance, out.Revision, out.Error, out.Hooks, out.Images = ctxID, header.Revision, header.Error, header.Hooks, header.Images
	for _, app := range slices.Sorted(maps.Keys(header.Artifacts)) {
		out.Artifacts = append(out.Artifacts, header.Artifacts[app])
	}
	if out.Operation, err = s.Ops.Running(ctx, target, header.Status, ctxID); err != nil {
		return operationErr(err)
	}
	if target.DIG != "" {
		if out.Drift, err = s.driftOf(ctx, ctxID, q); err != nil {
			return err
		}
		if out.Rollout, err = s.rolloutOf(ctx, header); err != nil {
			return err
		}
		if out.Autoscaler, err = s.autoscalerOfDIG(ctx, target.ID()); err != nil {
			return err
		}
	}
	if q.ready {
		if err := s.allowLiveRead(c); err != nil {
			return err
		}
		if err := s.Ops.ReadClusters(ctx, target, lifecycle.ReadInput{ContextID: ctxID, Detail: q.output == "detail"}); err != nil {
			return operationErr(err)
		}
	}
	b := newStatusBuilder(q, header.Status)
	if q.output == "summary" && !q.ready && len(q.clusters) == 0 && len(q.names) == 0 {
		// The dashboard query, at any scale: per-batch counts, not every cluster's document.
		if b.deployed, err = s.Contexts.SummaryOf(ctx, header, q.apps); err != nil {
			return err
		}
	} else {
		placements, err := s.Contexts.Placements(ctx, ctxID, appctx.Filter{Apps: q.apps, Clusters: q.clusters})
		if err != nil {
			return err
		}
		var apps map[string]*appctx.App
		if q.output == "detail" && !q.ready {
			if apps, err = s.Contexts.Apps(ctx, header); err != nil {
				return err
			}
		}
		for _, p := range placements {
			b.add(p, apps)
		}
	}
	b.finish(out)
	if target.DIG != "" && q.ready && len(q.apps) == 0 && len(q.clusters) == 0 && len(q.names) == 0 {
		// A read of every object: the fleet's home shows its counts until the next one.
		if err := s.Contexts.SaveReadiness(ctx, ctxID, b.readiness(time.Now().UTC())); err != nil {
			return err
		}
	}
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
	return c.JSON(http.StatusOK, out)
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
