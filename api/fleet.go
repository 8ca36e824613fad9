package api

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"golang.org/x/sync/errgroup"

	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/digstate"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/model"
	"github.com/temco/temco/internal/core/store"
)

// The fleet's home (dashboard/README.md): every DIG the caller may see, each with what an
// operator asks of it first, and the fleet's totals. Its reads do not grow with the DIGs'
// clusters: one query per project for its DIGs, three for all their contexts
// (appctx.Fleet), and Temporal is asked only about the running operations of the page.

const (
	routeFleet    = "/fleet"
	fleetLimit    = 100
	fleetMaxLimit = 1000
	// fleetProgressMax bounds the running operations whose progress one answer asks
	// Temporal for (each a describe and a query to a worker).
	fleetProgressMax = 20
	// failedRecently: a failed operation counts in the summary for this long.
	failedRecently = 24 * time.Hour
)

var (
	fleetQueryParams = []string{"project", "state", "attention", "q", "sort", "offset", "limit"}
	fleetSorts       = []string{"name", "state", "updated", "attention"}
)

type fleetQuery struct {
	project, state, q, sort string
	attention               bool
	offset, limit           int
}

type fleetAnswer struct {
	Summary fleetSummary `json:"summary"`
	DIGs    []fleetDIG   `json:"digs"`
	Matched int          `json:"matched"` // after the filters
	Offset  int          `json:"offset"`
	Limit   int          `json:"limit"`
}

// fleetSummary counts the DIGs of the projects shown, whatever the other filters.
type fleetSummary struct {
	DIGs   int            `json:"digs"`
	States map[string]int `json:"states"` // DIGs by lifecycle state
	// Running counts the operations running; FailedLastDay the DIGs whose last operation
	// failed in the last 24 hours.
	Running       int `json:"running"`
	FailedLastDay int `json:"failedLastDay"`
	// ApprovalsWaiting counts the rollout stages waiting for an approval.
	ApprovalsWaiting int `json:"approvalsWaiting"`
	Drifted          int `json:"drifted"`  // DIGs whose last drift check found drift
	Retrying         int `json:"retrying"` // DIGs with a cluster retrying
	Attention        int `json:"attention"`
	// Placements counts the DIGs' placements on clusters (a cluster once per DIG) by the
	// state of the cluster's worst object there.
	Placements map[string]int `json:"placements"`
	// ReadyPlacements counts the placements of DIGs with a live read by readiness.
	ReadyPlacements map[string]int `json:"readyPlacements"`
	// Clusters counts the registered clusters probed by reachability (Reachable,
	// Unreachable, GitOps); clusters not probed yet are not counted.
	Clusters map[string]int `json:"clusters"`
}

type fleetDIG struct {
	Project             string `json:"project"`
	CompositeApp        string `json:"compositeApp"`
	CompositeAppVersion string `json:"compositeAppVersion"`
	Name                string `json:"name"`
	Owner               string `json:"owner,omitempty"` // the hub object declaring it
	State               string `json:"state"`
	Revision            int64  `json:"revision"`
	ContextStatus       string `json:"contextStatus,omitempty"`
	Error               string `json:"error,omitempty"`
	// Updated is the last change of the DIG's state or its context's status.
	Updated  *time.Time     `json:"updated,omitempty"`
	Clusters int            `json:"clusters"`
	States   map[string]int `json:"states"`  // clusters by their worst object's status
	Objects  map[string]int `json:"objects"` // objects by status
	// Operation is the running operation (null: none) and how far it is.
	Operation *fleetOperation `json:"operation"`
	Rollout   *fleetRollout   `json:"rollout,omitempty"`
	Drift     *fleetDrift     `json:"drift,omitempty"`
	// Ready is what the last live read of all its clusters found (status=ready); absent
	// until one ran on the current revision.
	Ready *appctx.Readiness `json:"ready,omitempty"`
	// Attention says why the DIG needs an operator; empty when it does not.
	Attention []string `json:"attention"`
	ctxID     string
}

type fleetOperation struct {
	Op            string `json:"op"`
	WorkflowID    string `json:"workflowId,omitempty"`
	Phase         string `json:"phase,omitempty"`
	ClustersDone  int    `json:"clustersDone"`
	ClustersTotal int    `json:"clustersTotal"`
	// ProgressError says why the progress is missing (not asked on this page, or the
	// workflow did not answer).
	ProgressError string `json:"progressError,omitempty"`
}

type fleetRollout struct {
	State string `json:"state"`
	// Stage is the first stage not done, with its state; Waiting says for what it waits
	// (approval, window, decision), Until until when.
	Stage      string     `json:"stage,omitempty"`
	StageState string     `json:"stageState,omitempty"`
	Waiting    string     `json:"waiting,omitempty"`
	Until      *time.Time `json:"until,omitempty"`
	Done       int        `json:"done"` // stages done
	Stages     int        `json:"stages"`
}

// left is how many drifted objects the check left drifted (0 without a check).
func (d *fleetDrift) left() int {
	if d == nil {
		return 0
	}
	return d.Drifted - d.Corrected
}

type fleetDrift struct {
	Drifted   int       `json:"drifted"` // objects not as applied, deleted ones included
	Missing   int       `json:"missing"`
	Corrected int       `json:"corrected"` // of the drifted, applied again by the check
	Unchecked int       `json:"unchecked"` // clusters the check could not compare
	Checked   time.Time `json:"checked"`
}

func (s *Server) registerFleet(g *echo.Group) {
	s.route(g, opDoc{method: http.MethodGet, path: routeFleet, summary: "The fleet: every DIG the caller may see, with its state, counts, operation, rollout and drift",
		description: "temco's own (the dashboard's home). Filters: project, state (a DIG state), attention=true, q (substring of project/app/version/name); sort=name|state|updated|attention.",
		code:        http.StatusOK, response: typeOf[fleetAnswer](), query: fleetQueryParams}, s.fleet)
}

func parseFleetQuery(c echo.Context) (fleetQuery, error) {
	q := fleetQuery{limit: fleetLimit, sort: "name"}
	for k := range c.QueryParams() {
		if !slices.Contains(fleetQueryParams, k) {
			return q, badRequest("unknown query parameter %q: use %s", k, strings.Join(fleetQueryParams, ", "))
		}
	}
	if err := intParam(c, "offset", &q.offset, 0, 1<<30); err != nil {
		return q, err
	}
	if err := intParam(c, "limit", &q.limit, 1, fleetMaxLimit); err != nil {
		return q, err
	}
	if q.project = c.QueryParam("project"); q.project != "" {
		if err := model.ValidateName("project", q.project); err != nil {
			return q, badRequest("%v", err)
		}
	}
	states := lifecycle.DIGs.Machine.States
	if q.state = c.QueryParam("state"); q.state != "" && !slices.Contains(states, q.state) {
		return q, badRequest("state=%q is invalid: use one of %s", q.state, strings.Join(states, ", "))
	}
	switch v := c.QueryParam("attention"); v {
	case "", "false":
	case "true":
		q.attention = true
	default:
		return q, badRequest("attention=%q is invalid: use true or false", v)
	}
	if q.q = strings.ToLower(c.QueryParam("q")); len(q.q) > 4*model.MaxNameLen {
		return q, badRequest("q is longer than a DIG's names together (%d characters)", 4*model.MaxNameLen)
	}
	if v := c.QueryParam("sort"); v != "" {
		if !slices.Contains(fleetSorts, v) {
			return q, badRequest("sort=%q is invalid: use one of %s", v, strings.Join(fleetSorts, ", "))
		}
		q.sort = v
	}
	return q, nil
}

func (s *Server) fleet(c echo.Context) error {
	q, err := parseFleetQuery(c)
	if err != nil {
		return err
	}
	projects := callerProjects(c)
	if q.project != "" {
		if p := principal(c); p != nil && !p.CanAccessProject(q.project) {
			return httpErr(http.StatusForbidden, "project %q is not granted to %q", q.project, p.Subject)
		}
		projects = []string{q.project}
	}
	ctx := c.Request().Context()
	var reach map[string]int // read beside the DIGs
	probes, pctx := errgroup.WithContext(ctx)
	probes.Go(func() (err error) { reach, err = s.reachabilityCounts(pctx); return err })
	docs, err := s.projectDIGs(ctx, projects)
	if err != nil {
		return err
	}
	all, err := s.fleetDIGs(ctx, docs)
	if err != nil {
		return err
	}
	out := fleetAnswer{Summary: summarizeFleet(all, time.Now()), DIGs: []fleetDIG{}, Offset: q.offset, Limit: q.limit}
	if err := probes.Wait(); err != nil {
		return err
	}
	out.Summary.Clusters = reach
	kept := slices.DeleteFunc(all, func(d fleetDIG) bool { return !q.keeps(d) })
	sortFleet(kept, q.sort)
	out.Matched = len(kept)
	out.DIGs = append(out.DIGs, kept[min(q.offset, len(kept)):min(q.offset+q.limit, len(kept))]...)
	s.fleetProgress(ctx, out.DIGs)
	return c.JSON(http.StatusOK, out)
}

// callerProjects are the projects the caller may see: nil (every one) for an admin or
// without authentication, else the tenant's.
func callerProjects(c echo.Context) []string {
	if p := principal(c); p != nil && !p.Admin {
		return append([]string{}, p.Projects()...)
	}
	return nil
}

// projectDIGs lists the DIGs of projects (nil: every project), a query per project.
func (s *Server) projectDIGs(ctx context.Context, projects []string) ([]*store.Doc, error) {
	_, digs, err := s.inProjects(ctx, projects, model.KindDIG)
	return digs, err
}

// inProjects lists the projects named (nil: every project) and, of each, its resources of
// kinds: a query per project and kind, four projects at a time.
func (s *Server) inProjects(ctx context.Context, projects []string, kinds ...string) (ps, inside []*store.Doc, err error) {
	pq := store.Query{Kind: model.KindProject}
	if projects != nil {
		pq.IDs = []string{}
		for _, p := range projects {
			pq.IDs = append(pq.IDs, "/projects/"+p)
		}
	}
	if ps, err = s.Store.List(ctx, pq); err != nil {
		return nil, nil, err
	}
	each := make([][]*store.Doc, len(ps))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(4)
	for i, p := range ps {
		g.Go(func() error {
			for _, k := range kinds {
				ds, err := s.Store.List(gctx, store.Query{Scope: p.ID, Kind: k})
				if err != nil {
					return err
				}
				each[i] = append(each[i], ds...)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, nil, err
	}
	return ps, slices.Concat(each...), nil
}

// fleetDIGs describes each DIG from its state and its current context.
func (s *Server) fleetDIGs(ctx context.Context, docs []*store.Doc) ([]fleetDIG, error) {
	out := make([]fleetDIG, 0, len(docs))
	contextOf := make([]string, 0, len(docs))
	var ids []string
	for _, d := range docs {
		t := lifecycle.DIGOfID(d.ID)
		f := fleetDIG{Project: t.Project, CompositeApp: t.CompositeApp, CompositeAppVersion: t.Version, Name: t.DIG, Owner: d.Owner,
			States: map[string]int{}, Objects: map[string]int{}, Attention: []string{}}
		info, err := digstate.Parse(d)
		if err != nil {
			f.Attention = append(f.Attention, err.Error())
		}
		f.State = cmp.Or(info.Current(), lifecycle.StateCreated)
		if n := len(info.Actions); n > 0 && !info.Actions[n-1].TimeStamp.IsZero() {
			at := info.Actions[n-1].TimeStamp
			f.Updated = &at
		}
		id := info.ContextID()
		if id != "" {
			ids = append(ids, id)
		}
		out, contextOf = append(out, f), append(contextOf, id)
	}
	ctxs, err := s.Contexts.Fleet(ctx, ids)
	if err != nil {
		return nil, err
	}
	for i := range out {
		if h := ctxs[contextOf[i]]; h != nil {
			out[i].describe(contextOf[i], h)
		}
		out[i].Attention = append(out[i].Attention, attentionOf(&out[i])...)
	}
	return out, nil
}

// describe fills f from its current context h (id).
func (f *fleetDIG) describe(id string, h *appctx.FleetContext) {
	f.Revision, f.ContextStatus, f.Error, f.Ready = h.Revision, h.Status, h.Error, h.Ready
	f.Clusters, f.States, f.Objects = h.Clusters, h.States, h.Objects
	if !h.Updated.IsZero() && (f.Updated == nil || h.Updated.After(*f.Updated)) {
		at := h.Updated
		f.Updated = &at
	}
	f.ctxID = id
	if op, ok := map[string]string{lifecycle.StatusInstantiating: lifecycle.OpInstantiate, lifecycle.StatusTerminating: lifecycle.OpTerminate,
		lifecycle.StatusUpdating: cmp.Or(h.Op, lifecycle.OpUpdate)}[h.Status]; ok {
		f.Operation = &fleetOperation{Op: op, ProgressError: fmt.Sprintf("not asked: an answer asks about its page's first %d operations", fleetProgressMax)}
	}
	if r := h.Rollout; r != nil {
		fr := &fleetRollout{State: r.State, Stages: len(r.Stages)}
		for _, st := range r.Stages {
			switch st.State {
			case lifecycle.StageSucceeded, lifecycle.StageSkipped:
				fr.Done++
				continue
			}
			if fr.Stage == "" {
				fr.Stage, fr.StageState, fr.Until = st.Name, st.State, st.Until
				switch st.State {
				case lifecycle.StageWaitingForApproval:
					fr.Waiting = "approval"
				case lifecycle.StageWaitingForWindow:
					fr.Waiting = "window"
				}
			}
		}
		if r.State == lifecycle.RolloutAwaitingDecision {
			fr.Waiting = "decision"
		}
		f.Rollout = fr
	}
	if d := h.Drift; d != nil {
		f.Drift = &fleetDrift{Drifted: d.Drifted, Missing: d.Missing, Corrected: d.Corrected, Unchecked: len(d.UncheckedClusters), Checked: d.Finished}
	}
}

// attentionOf says why f needs an operator.
func attentionOf(f *fleetDIG) []string {
	var out []string
	if strings.HasSuffix(f.ContextStatus, "Failed") {
		out = append(out, strings.TrimSuffix(f.ContextStatus+": "+f.Error, ": "))
	}
	if strings.HasSuffix(f.State, "Stopped") {
		out = append(out, "stopped: "+f.State)
	}
	if n := f.States[lifecycle.ResFailed]; n > 0 {
		out = append(out, plural(n, "cluster")+" failed")
	}
	if n := f.States[lifecycle.ResRetrying]; n > 0 {
		out = append(out, plural(n, "cluster")+" retrying")
	}
	if r := f.Rollout; r != nil {
		switch {
		case r.Waiting == "approval":
			out = append(out, "stage "+r.Stage+" waits for an approval")
		case r.Waiting == "decision":
			out = append(out, "the rollout awaits a decision")
		case r.State == lifecycle.RolloutPaused:
			out = append(out, "the rollout is paused")
		case r.State == lifecycle.RolloutFailed || r.State == lifecycle.RolloutRolledBack:
			out = append(out, "the rollout "+strings.ToLower(r.State))
		}
	}
	if f.Drift.left() > 0 {
		out = append(out, plural(f.Drift.left(), "object")+" drifted")
	}
	if f.Ready != nil && f.Operation == nil { // while one runs, not ready yet is its progress
		if n := f.Ready.Clusters[readyNotReady] + f.Ready.Clusters[readyNotPresent]; n > 0 {
			out = append(out, plural(n, "cluster")+" not ready at the last read")
		}
	}
	return out
}

// plural is "1 cluster", "2 clusters".
func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func summarizeFleet(digs []fleetDIG, now time.Time) fleetSummary {
	s := fleetSummary{DIGs: len(digs), States: map[string]int{}, Placements: map[string]int{}, ReadyPlacements: map[string]int{}}
	for _, d := range digs {
		s.States[d.State]++
		for st, n := range d.States {
			s.Placements[st] += n
		}
		if d.Ready != nil {
			for st, n := range d.Ready.Clusters {
				s.ReadyPlacements[st] += n
			}
		}
		if d.Operation != nil {
			s.Running++
		}
		if strings.HasSuffix(d.ContextStatus, "Failed") && d.Updated != nil && now.Sub(*d.Updated) < failedRecently {
			s.FailedLastDay++
		}
		if d.Rollout != nil && d.Rollout.Waiting == "approval" {
			s.ApprovalsWaiting++
		}
		if d.Drift.left() > 0 {
			s.Drifted++
		}
		if d.States[lifecycle.ResRetrying] > 0 {
			s.Retrying++
		}
		if len(d.Attention) > 0 {
			s.Attention++
		}
	}
	return s
}

func (q fleetQuery) keeps(d fleetDIG) bool {
	switch {
	case q.state != "" && d.State != q.state:
		return false
	case q.attention && len(d.Attention) == 0:
		return false
	case q.q != "":
		return strings.Contains(strings.ToLower(d.Project+"/"+d.CompositeApp+"/"+d.CompositeAppVersion+"/"+d.Name), q.q)
	}
	return true
}

func sortFleet(digs []fleetDIG, by string) {
	name := func(a, b fleetDIG) int {
		return cmp.Or(cmp.Compare(a.Project, b.Project), cmp.Compare(a.CompositeApp, b.CompositeApp),
			cmp.Compare(a.CompositeAppVersion, b.CompositeAppVersion), cmp.Compare(a.Name, b.Name))
	}
	slices.SortStableFunc(digs, func(a, b fleetDIG) int {
		switch by {
		case "state":
			return cmp.Or(cmp.Compare(a.State, b.State), name(a, b))
		case "updated": // newest first, never updated last
			var x, y time.Time
			if a.Updated != nil {
				x = *a.Updated
			}
			if b.Updated != nil {
				y = *b.Updated
			}
			return cmp.Or(y.Compare(x), name(a, b))
		case "attention": // most reasons first
			return cmp.Or(cmp.Compare(len(b.Attention), len(a.Attention)), name(a, b))
		}
		return name(a, b)
	})
}

// fleetProgress asks Temporal how far the page's first running operations are, each
// within progressWait; the others say they were not asked.
func (s *Server) fleetProgress(ctx context.Context, digs []fleetDIG) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	asked := 0
	for i := range digs {
		f := &digs[i]
		if f.Operation == nil || asked == fleetProgressMax {
			continue
		}
		asked++
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			t := lifecycle.Target{Project: f.Project, CompositeApp: f.CompositeApp, Version: f.CompositeAppVersion, DIG: f.Name}
			op, err := s.operationOf(ctx, t, &appctx.Context{ID: f.ctxID, Status: f.ContextStatus})
			o := f.Operation
			switch {
			case err != nil:
				o.ProgressError = "Temporal did not answer: " + err.Error()
			case op == nil:
				o.ProgressError = "the operation has just ended"
			default:
				o.WorkflowID, o.Phase, o.ClustersDone, o.ClustersTotal = op.WorkflowID, op.Phase, op.ClustersDone, op.ClustersTotal
				o.Op, o.ProgressError = cmp.Or(op.Op, o.Op), op.ProgressError
			}
		})
	}
	wg.Wait()
}
