package drift

import (
	"cmp"
	"context"
	"net/http"
	"reflect"
	"slices"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/temco/temco/api"
	"github.com/temco/temco/internal/core/drift"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/model"
	"github.com/temco/temco/internal/core/store"
)

// Drift detection's part of the api: a DIG whose spec has driftDetection gets a Temporal
// Schedule of drift checks, kept in step with the stored DIG on every create, replace and
// delete; POST DIG/drift-check starts one now; the DIG's status shows the last check of
// the context it shows.

// Scheduler keeps DIGs' drift-check schedules: the Starter, or a test's.
type Scheduler interface {
	// SyncDrift makes dig's schedule run every interval (0: removes it).
	SyncDrift(ctx context.Context, dig lifecycle.Target, interval time.Duration) error
	// CheckDrift starts a check of dig now (correcting what it finds when correct) and
	// returns its workflow id.
	CheckDrift(ctx context.Context, dig lifecycle.Target, correct bool) (string, error)
}

// Extension is drift detection's part of the api over sch; sch nil: the feature is
// switched off, no schedule is kept and a check asked for answers 503 (spec.driftDetection
// is still checked, and the status still shows the checks recorded).
func Extension(sch Scheduler) api.Extension {
	return api.Extension{Name: "drift", Mount: func(m *api.Mount) {
		r := routes{m: m, sch: sch}
		m.Route(api.Doc{Method: http.MethodPost, Path: lifecycle.RouteDIG + "/drift-check",
			Summary:     "Check an instantiated DIG's clusters for drift now, and correct it if asked",
			Description: "temco's own. Runs beside the DIG's drift schedule, whether its spec has driftDetection or not; the result is the status's drift section.",
			Code:        http.StatusAccepted, Body: reflect.TypeFor[checkBody](), Response: reflect.TypeFor[checked](), NoOwner: true}, r.check)
		m.CheckDIG(func(sp *model.DIGSpec) error { return checkDetection(sp.DriftDetection) })
		m.DIGChanged(r.sync)
		m.DIGDeleted(r.remove)
		m.DIGStatus("drift", reflect.TypeFor[status](), r.status)
	}}
}

type routes struct {
	m   *api.Mount
	sch Scheduler
}

// checkBody is the optional body of POST DIG/drift-check.
type checkBody struct {
	// Correct applies again what the check finds drifted, whatever the DIG's correctDrift.
	Correct bool `json:"correct"`
}

// checked answers POST DIG/drift-check: the check's workflow (its outcome is the drift
// section of the DIG's status once it ends).
type checked struct {
	WorkflowID string `json:"workflowId"`
	Correct    bool   `json:"correct"`
}

func (r routes) check(c echo.Context) error {
	var body checkBody
	dig, info, err := r.m.LoadDIG(c, func(lifecycle.Target) error {
		if c.Request().ContentLength == 0 {
			return nil
		}
		return api.ReadJSON(c, &body)
	})
	if err != nil {
		return err
	}
	if st := info.Current(); st != lifecycle.StateInstantiated {
		return api.Conflict("%s is %s: a drift check needs it %s", dig, cmp.Or(st, lifecycle.StateCreated), lifecycle.StateInstantiated)
	}
	if r.sch == nil {
		return api.Unavailable("this temco runs no drift checks: feature drift is switched off (--disable-features)")
	}
	id, err := r.sch.CheckDrift(c.Request().Context(), dig, body.Correct)
	if err != nil {
		return api.OperationErr(err)
	}
	return c.JSON(http.StatusAccepted, checked{WorkflowID: id, Correct: body.Correct})
}

// minInterval is the shortest interval between drift checks: each costs requests on
// every cluster of the DIG.
const minInterval = time.Minute

// checkDetection validates spec.driftDetection (absent: no drift detection).
func checkDetection(dd *model.DriftDetection) error {
	if dd == nil {
		return nil
	}
	if dd.Interval == "" {
		return api.BadRequest(`spec.driftDetection.interval is required: a duration of at least %s, e.g. "10m"`, minInterval)
	}
	d, err := time.ParseDuration(dd.Interval)
	if err != nil || d < minInterval {
		return api.BadRequest(`spec.driftDetection.interval %q is invalid: give a duration of at least %s, e.g. "10m"`, dd.Interval, minInterval)
	}
	return nil
}

// intervalOf is how often the stored DIG asks to be checked (0: never).
func intervalOf(d *store.Doc) time.Duration {
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

// sync sets DIG id's drift schedule from its stored spec (a DIG gone or without
// driftDetection has none).
func (r routes) sync(ctx context.Context, id string) error {
	if r.sch == nil {
		return nil
	}
	d, err := r.m.Store().Get(ctx, id)
	if err != nil && store.CodeOf(err) != store.ErrNotFound {
		return err
	}
	if err != nil {
		d = nil
	}
	interval := intervalOf(d)
	if err := r.sch.SyncDrift(ctx, lifecycle.DIGOfID(id), interval); err != nil {
		r.m.Log().Warn("drift schedule", "dig", id, "error", err)
		if interval == 0 {
			// A DIG without drift detection (every EMCO file) is never refused for it: a
			// schedule left behind finds nothing to check and says so.
			return nil
		}
		return api.Unavailable("%s is stored, but its drift-detection schedule could not be set (%v): send the request again", api.Describe(id), err)
	}
	return nil
}

// remove removes a deleted DIG's drift schedule.
func (r routes) remove(ctx context.Context, id string) {
	if r.sch == nil {
		return
	}
	if err := r.sch.SyncDrift(ctx, lifecycle.DIGOfID(id), 0); err != nil {
		r.m.Log().Warn("remove drift schedule", "dig", id, "error", err)
	}
}

// status is the last drift check of the context a DIG's status shows (temco's own).
type status struct {
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
	// Unchecked are the clusters not compared, and why (a GitOps cluster, unreachable, an
	// agent cluster whose agent has not reported or no longer calls).
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
	// Reported is, on an agent cluster, when its agent reported the object so: temco does
	// not read that cluster, its agent compares and reports what changed.
	Reported *time.Time `json:"reported,omitempty"`
}

// gvk is an object's kind as the status's resources name it.
type gvk struct {
	Group   string `json:"Group"`
	Version string `json:"Version"`
	Kind    string `json:"Kind"`
}

type uncheckedCluster struct {
	ClusterProvider string    `json:"clusterProvider"`
	Cluster         string    `json:"cluster"`
	Checked         time.Time `json:"checked"`
	Reason          string    `json:"reason"`
}

// status reads the last drift check of context ctxID (nil when none was recorded).
func (r routes) status(ctx context.Context, ctxID string, q api.StatusQuery) (any, error) {
	sum, recs, err := r.m.Contexts().Drift(ctx, ctxID)
	if sum == nil || err != nil {
		return nil, err
	}
	out := &status{Check: sum.Check, Started: sum.Started, Finished: sum.Finished, CorrectDrift: sum.Correct,
		ClustersChecked: sum.Clusters, InSync: sum.InSync, Drifted: sum.Drifted, Missing: sum.Missing, Corrected: sum.Corrected,
		APIRequests: sum.Requests, Error: sum.Error}
	for _, rec := range recs {
		if len(q.Clusters) > 0 && !slices.Contains(q.Clusters, rec.Cluster) {
			continue
		}
		provider, cluster := lifecycle.SplitClusterKey(rec.Cluster)
		if reason := cmp.Or(rec.Skipped, rec.Error); reason != "" {
			out.Unchecked = append(out.Unchecked, uncheckedCluster{ClusterProvider: provider, Cluster: cluster, Checked: rec.Checked, Reason: reason})
		}
		for _, o := range rec.Objects {
			if len(q.Apps) > 0 && !slices.Contains(q.Apps, o.App) {
				continue
			}
			out.Objects = append(out.Objects, driftedObject{ClusterProvider: provider, Cluster: cluster, App: o.App,
				GVK: gvk{o.Group, o.Version, o.Kind}, Namespace: o.Namespace, Name: o.Name, Missing: o.Missing, Fields: o.Fields,
				Corrected: o.Corrected, Error: o.Error, Reported: rec.Reported})
		}
	}
	return out, nil
}
