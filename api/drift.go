package api

import (
	"cmp"
	"context"
	"net/http"
	"slices"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/temco/temco/internal/core/drift"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/model"
	"github.com/temco/temco/internal/core/store"
)

// Drift detection (temco's own; EMCO has none): a DIG whose spec has driftDetection gets
// a Temporal Schedule of drift checks, kept in step with the stored DIG on every create,
// replace and delete; the DIG's status shows the last check of the context it shows.

// DriftScheduler keeps DIGs' drift-check schedules (the drift feature's Starter, features/drift).
type DriftScheduler interface {
	// SyncDrift makes dig's schedule run every interval (0: removes it).
	SyncDrift(ctx context.Context, dig lifecycle.Target, interval time.Duration) error
	// CheckDrift starts a check of dig now (correcting what it finds when correct) and
	// returns its workflow id.
	CheckDrift(ctx context.Context, dig lifecycle.Target, correct bool) (string, error)
}

// driftCheckBody is the optional body of POST DIG/drift-check.
type driftCheckBody struct {
	// Correct applies again what the check finds drifted, whatever the DIG's correctDrift.
	Correct bool `json:"correct"`
}

// driftChecked answers POST DIG/drift-check: the check's workflow (its outcome is the
// drift section of the DIG's status once it ends).
type driftChecked struct {
	WorkflowID string `json:"workflowId"`
	Correct    bool   `json:"correct"`
}

func (s *Server) registerDriftCheck(g *echo.Group) {
	s.route(g, opDoc{method: http.MethodPost, path: routeDIG + "/drift-check", summary: "Check an instantiated DIG's clusters for drift now, and correct it if asked",
		description: "temco's own. Runs beside the DIG's drift schedule, whether its spec has driftDetection or not; the result is the status's drift section.",
		code:        http.StatusAccepted, body: typeOf[driftCheckBody](), response: typeOf[driftChecked](), noOwner: true}, s.driftCheck)
}

func (s *Server) driftCheck(c echo.Context) error {
	var body driftCheckBody
	dig, _, info, err := s.loadTarget(c, digRef, func(lifecycle.Target) error {
		if c.Request().ContentLength == 0 {
			return nil
		}
		return readJSON(c, &body)
	})
	if err != nil {
		return err
	}
	if st := info.Current(); st != lifecycle.StateInstantiated {
		return conflict("%s is %s: a drift check needs it %s", dig, cmp.Or(st, lifecycle.StateCreated), lifecycle.StateInstantiated)
	}
	if s.Drift == nil {
		return httpErr(http.StatusServiceUnavailable, "this temco runs no drift checks: feature drift is switched off (--disable-features)")
	}
	id, err := s.Drift.CheckDrift(c.Request().Context(), dig, body.Correct)
	if err != nil {
		return operationErr(err)
	}
	return c.JSON(http.StatusAccepted, driftChecked{WorkflowID: id, Correct: body.Correct})
}

// minDriftInterval is the shortest interval between drift checks: each costs requests on
// every cluster of the DIG.
const minDriftInterval = time.Minute

// checkDriftDetection validates spec.driftDetection (absent: no drift detection).
func checkDriftDetection(dd *model.DriftDetection) error {
	if dd == nil {
		return nil
	}
	if dd.Interval == "" {
		return badRequest(`spec.driftDetection.interval is required: a duration of at least %s, e.g. "10m"`, minDriftInterval)
	}
	d, err := time.ParseDuration(dd.Interval)
	if err != nil || d < minDriftInterval {
		return badRequest(`spec.driftDetection.interval %q is invalid: give a duration of at least %s, e.g. "10m"`, dd.Interval, minDriftInterval)
	}
	return nil
}

// driftInterval is how often the stored DIG asks to be checked (0: never).
func driftInterval(d *store.Doc) time.Duration {
	if d == nil {
		return 0
	}
	r, err := model.Decode[model.DIGSpec](d.Body)
	if err != nil || r.Spec.DriftDetection == nil {
		return 0
	}
	iv, _ := time.ParseDuration(r.Spec.DriftDetection.Interval)
	return iv
}

// withDriftSchedule runs a DIG's change hook, then brings its drift schedule in line
// with what is stored now (a DIG gone or without driftDetection has none).
func withDriftSchedule(changed func(context.Context, *Server, string) error) func(context.Context, *Server, string) error {
	return func(ctx context.Context, s *Server, id string) error {
		if err := changed(ctx, s, id); err != nil {
			return err
		}
		return s.syncDrift(ctx, id)
	}
}

// syncDrift sets DIG id's drift schedule from its stored spec.
func (s *Server) syncDrift(ctx context.Context, id string) error {
	if s.Drift == nil {
		return nil
	}
	d, err := s.Store.Get(ctx, id)
	if err != nil && store.CodeOf(err) != store.ErrNotFound {
		return err
	}
	if err != nil {
		d = nil
	}
	interval := driftInterval(d)
	if err := s.Drift.SyncDrift(ctx, lifecycle.DIGOfID(id), interval); err != nil {
		s.Log.Warn("drift schedule", "dig", id, "error", err)
		if interval == 0 {
			// A DIG without drift detection (every EMCO file) is never refused for it: a
			// schedule left behind finds nothing to check and says so.
			return nil
		}
		return httpErr(http.StatusServiceUnavailable, "%s is stored, but its drift-detection schedule could not be set (%v): send the request again", describe(id), err)
	}
	return nil
}

// deleteDIG is the DIG's delete, then the removal of its drift schedule.
func (s *Server) deleteDIG(del echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if err := del(c); err != nil || c.Response().Status != http.StatusNoContent {
			return err
		}
		id, err := fill(c, routeDIG)
		if err != nil {
			return nil
		}
		if s.Drift != nil {
			if err := s.Drift.SyncDrift(context.WithoutCancel(c.Request().Context()), lifecycle.DIGOfID(id), 0); err != nil {
				s.Log.Warn("remove drift schedule", "dig", id, "error", err)
			}
		}
		return nil
	}
}

// driftStatus is the last drift check of the context a DIG's status shows (temco's own).
type driftStatus struct {
	Check           string    `json:"check"` // the Drift workflow's id
	Started         time.Time `json:"started"`
	Finished        time.Time `json:"finished"`
	CorrectDrift    bool      `json:"correctDrift"`
	ClustersChecked int       `json:"clustersChecked"`
	InSync          int       `json:"inSync"`    // objects as applied
	Drifted         int       `json:"drifted"`   // objects not as applied, deleted ones included
	Missing         int       `json:"missing"`   // deleted from their cluster
	Corrected       int       `json:"corrected"` // applied again
	APIRequests     int       `json:"apiRequests"`
	Error           string    `json:"error,omitempty"`
	// Objects are the drifted objects (those the status's app and cluster filters select).
	Objects []driftedObject `json:"objects,omitempty"`
	// Unchecked are the clusters not compared, and why (a GitOps cluster, unreachable).
	Unchecked []uncheckedCluster `json:"unchecked,omitempty"`
}

type driftedObject struct {
	ClusterProvider string `json:"clusterProvider"`
	Cluster         string `json:"cluster"`
	App             string `json:"app"`
	GVK             gvk    `json:"GVK"`
	Namespace       string `json:"namespace,omitempty"`
	Name            string `json:"name"`
	Missing         bool   `json:"missing,omitempty"`
	// Fields are the fields temco's manifest sets that differ: path, live and desired
	// values as JSON (a Secret's values redacted).
	Fields    []drift.Field `json:"fields,omitempty"`
	Corrected bool          `json:"corrected"`
	Error     string        `json:"error,omitempty"`
}

type uncheckedCluster struct {
	ClusterProvider string    `json:"clusterProvider"`
	Cluster         string    `json:"cluster"`
	Checked         time.Time `json:"checked"`
	Reason          string    `json:"reason"`
}

// driftOf reads the last drift check of context ctxID (nil when none was recorded).
func (s *Server) driftOf(ctx context.Context, ctxID string, q statusQuery) (*driftStatus, error) {
	sum, recs, err := s.Contexts.Drift(ctx, ctxID)
	if sum == nil || err != nil {
		return nil, err
	}
	out := &driftStatus{Check: sum.Check, Started: sum.Started, Finished: sum.Finished, CorrectDrift: sum.Correct,
		ClustersChecked: sum.Clusters, InSync: sum.InSync, Drifted: sum.Drifted, Missing: sum.Missing, Corrected: sum.Corrected,
		APIRequests: sum.Requests, Error: sum.Error}
	for _, r := range recs {
		if len(q.clusters) > 0 && !slices.Contains(q.clusters, r.Cluster) {
			continue
		}
		provider, cluster := lifecycle.SplitClusterKey(r.Cluster)
		if reason := cmp.Or(r.Skipped, r.Error); reason != "" {
			out.Unchecked = append(out.Unchecked, uncheckedCluster{ClusterProvider: provider, Cluster: cluster, Checked: r.Checked, Reason: reason})
		}
		for _, o := range r.Objects {
			if len(q.apps) > 0 && !slices.Contains(q.apps, o.App) {
				continue
			}
			out.Objects = append(out.Objects, driftedObject{ClusterProvider: provider, Cluster: cluster, App: o.App,
				GVK: gvk{o.Group, o.Version, o.Kind}, Namespace: o.Namespace, Name: o.Name, Missing: o.Missing, Fields: o.Fields,
				Corrected: o.Corrected, Error: o.Error})
		}
	}
	return out, nil
}
