package api

import (
	"encoding/json"
	"maps"
	"slices"
	"time"

	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/artifact"
	"github.com/temco/temco/internal/core/lifecycle"
)

// The status answers, in the shapes of EMCO 22.06+'s orchestrator and dcm (field names,
// which fields each mode sets), plus a few fields of temco's own, marked below.

// identity names what a status answer is about: a DIG (all fields), a logical cloud, or
// a cluster's network intents (Name "provider+cluster" alone, as ncm answers).
type identity struct {
	ClusterProvider     string `json:"clusterProvider,omitempty"` // a cluster provider's CA certificate intent
	Project             string `json:"project,omitempty"`
	CompositeApp        string `json:"compositeApp,omitempty"`
	CompositeAppVersion string `json:"compositeAppVersion,omitempty"`
	CompositeProfile    string `json:"compositeProfile,omitempty"`
	Name                string `json:"name"`
}

type statusResult struct {
	identity
	States         statusStates    `json:"states"`
	Status         string          `json:"status,omitempty"`         // legacy modes: the context's status
	DeployedStatus string          `json:"deployedStatus,omitempty"` // status=deployed|ready: the same
	ReadyStatus    string          `json:"readyStatus,omitempty"`
	RsyncStatus    map[string]int  `json:"rsyncStatus,omitempty"`
	ClusterStatus  map[string]int  `json:"clusterStatus,omitempty"`
	DeployedCounts map[string]int  `json:"deployedCounts,omitempty"`
	ReadyCounts    map[string]int  `json:"readyCounts,omitempty"`
	Apps           []appStatus     `json:"apps,omitempty"`
	Clusters       []clusterStatus `json:"clusters,omitempty"` // logical clouds: their clusters
	Cluster        *clusterStatus  `json:"cluster,omitempty"`  // a cluster's network intents: it

	// temco's own: the context shown, its revision, and why its operation failed.
	Instance string `json:"instance,omitempty"`
	Revision int64  `json:"revision,omitempty"`
	Error    string `json:"error,omitempty"`
	// Hooks are the workflows the context's last operation ran for its controllers (tac's
	// hooks), once it has ended; a running operation's are in Operation.
	Hooks []lifecycle.HookRun `json:"hooks,omitempty"`
	// Artifacts are the charts that came by reference, by app: the stage each reached in
	// the revision, what it was pinned to (digest, version), and its error or retries.
	Artifacts []artifact.Status `json:"artifacts,omitempty"`
	// Images are the container images the revision pinned to digests (spec.imagePinning).
	Images []artifact.Image `json:"images,omitempty"`
	// Operation is the context's running operation: its workflow, and the controller
	// steps and retried steps it waits on.
	Operation *lifecycle.RunningOp `json:"operation,omitempty"`
	// Drift is the last drift check of the context (DIGs with spec.driftDetection): the
	// section of the Extension of features/drift (Mount.DIGStatus).
	Drift any `json:"drift,omitempty"`
	// Rollout is where the context's staged rollout stands (DIGs with a rollout strategy):
	// each stage's state, counts, timers and (up to rolloutClustersShown) clusters.
	Rollout *rolloutStatus `json:"rollout,omitempty"`
	// Autoscaler is where the autoscaler of the DIG's capacity placement stands: its
	// clusters' states, its last evaluation and its last decisions: the section of the
	// Extension of features/autoscale (Mount.DIGStatus).
	Autoscaler any `json:"autoscaler,omitempty"`
}

type statusStates struct {
	StatusCtxID string         `json:"statusctxid"`
	Actions     []statusAction `json:"actions"`
}

type statusAction struct {
	State    string    `json:"state"`
	Instance string    `json:"instance"`
	Time     time.Time `json:"time"`
	Revision int64     `json:"revision"`
}

type appStatus struct {
	Name     string          `json:"name"`
	Clusters []clusterStatus `json:"clusters"`
}

type clusterStatus struct {
	ClusterProvider string           `json:"clusterProvider"`
	Cluster         string           `json:"cluster"`
	ReadyStatus     string           `json:"readyStatus,omitempty"` // legacy modes: the connectivity
	Connectivity    string           `json:"connectivity,omitempty"`
	Resources       []resourceStatus `json:"resources"`
}

type gvk struct {
	Group   string `json:"Group"`
	Version string `json:"Version"`
	Kind    string `json:"Kind"`
}

// resourceStatus carries exactly one of the four status fields, by mode.
type resourceStatus struct {
	GVK            gvk             `json:"GVK"`
	Name           string          `json:"name"`
	Detail         json.RawMessage `json:"detail,omitempty"`
	RsyncStatus    string          `json:"rsyncStatus,omitempty"`
	ClusterStatus  string          `json:"clusterStatus,omitempty"`
	DeployedStatus string          `json:"deployedStatus,omitempty"`
	ReadyStatus    string          `json:"readyStatus,omitempty"`

	// temco's own: where the object is, how often applying it was tried, the last error
	// of that (or of reading it back), what its apply left out, and (status=ready) why its
	// cluster reports it not ready.
	Namespace string `json:"namespace,omitempty"`
	Attempts  int32  `json:"attempts,omitempty"`
	Error     string `json:"error,omitempty"`
	Warning   string `json:"warning,omitempty"`
	Reason    string `json:"reason,omitempty"`
}

// The answers to the apps, clusters and resources flags.
type appsList struct {
	identity
	Apps []string `json:"apps"`
}

type clustersList struct {
	identity
	ClustersByApp []clustersOfApp `json:"clustersByApp"`
}

type clustersOfApp struct {
	App      string        `json:"app"`
	Clusters []clusterName `json:"clusters"`
}

type clusterName struct {
	ClusterProvider string `json:"clusterProvider"`
	Cluster         string `json:"cluster"`
}

type resourcesList struct {
	identity
	ResourcesByApp []resourcesOfPlacement `json:"resourcesByApp"`
}

type resourcesOfPlacement struct {
	App             string         `json:"app,omitempty"`
	ClusterProvider string         `json:"clusterProvider,omitempty"`
	Cluster         string         `json:"cluster,omitempty"`
	Resources       []resourceName `json:"resources"`
}

type resourceName struct {
	Name string `json:"name"`
	GVK  gvk    `json:"GVK"`
}

// Readiness of a resource, and of everything counted.
const (
	readyReady      = "Ready"
	readyNotReady   = "NotReady"
	readyNotPresent = "NotPresent"
	// readyOmitted: an object temco deployed nothing of, by the cluster's choice (a Secret
	// a GitOps cluster keeps out of git); the overall readiness leaves it out.
	readyOmitted = "Omitted"
)

// Cluster connectivity.
const (
	connAvailable = "Available"
	connRetrying  = "Retrying"
	connUnknown   = "Unknown"
)

// states is the history as EMCO shows it. statusctxid is the context whose status is
// shown first: the one that began the shown instance.
func states(info lifecycle.StateInfo, header *appctx.Context) statusStates {
	s := statusStates{Actions: make([]statusAction, len(info.Actions))}
	for i, a := range info.Actions {
		s.Actions[i] = statusAction{State: a.State, Instance: a.ContextID, Time: a.TimeStamp, Revision: a.Revision}
	}
	if header != nil {
		s.StatusCtxID = header.Instance
		if s.StatusCtxID == "" {
			s.StatusCtxID = header.ID
		}
	}
	return s
}

// statusBuilder counts and lists placements' resources for one query.
type statusBuilder struct {
	q        statusQuery
	status   string // the context's
	deployed map[string]int
	ready    map[string]int
	apps     []appStatus
	// byCluster counts each cluster's objects by readiness (the fleet's ready clusters).
	byCluster map[string]map[string]int
}

func newStatusBuilder(q statusQuery, status string) *statusBuilder {
	return &statusBuilder{q: q, status: status, deployed: map[string]int{}, ready: map[string]int{}, byCluster: map[string]map[string]int{}}
}

// readiness is what the fleet keeps of a read of every object: objects and clusters by
// readiness.
func (b *statusBuilder) readiness(at time.Time) appctx.Readiness {
	r := appctx.Readiness{Objects: maps.Clone(b.ready), Clusters: map[string]int{}, Read: at}
	for _, counts := range b.byCluster {
		r.Clusters[overallReadiness(counts)]++
	}
	return r
}

// add counts (and, unless output=summary, lists) one placement's resources.
func (b *statusBuilder) add(p *appctx.ClusterApp, apps map[string]*appctx.App) {
	provider, cluster := lifecycle.SplitClusterKey(p.Cluster)
	cs := clusterStatus{ClusterProvider: provider, Cluster: cluster, Resources: []resourceStatus{}}
	for i, r := range p.Resources {
		if len(b.q.names) > 0 && !slices.Contains(b.q.names, r.Name) {
			continue
		}
		rs := resourceStatus{GVK: gvk{r.Group, r.Version, r.Kind}, Name: r.Name, Namespace: r.Namespace,
			Attempts: r.Attempts, Error: r.Error, Warning: r.Warning}
		if b.q.ready {
			live := appctx.Live{State: appctx.LiveUnknown}
			if i < len(p.Live) {
				live = p.Live[i]
			}
			st := readiness(live)
			b.ready[st]++
			if b.byCluster[p.Cluster] == nil {
				b.byCluster[p.Cluster] = map[string]int{}
			}
			b.byCluster[p.Cluster][st]++
			rs.setStatus(b.q, st)
			if live.Error != "" && rs.Error == "" {
				rs.Error = live.Error
			}
			if st == readyNotReady {
				rs.Reason = live.Reason
			}
			if b.q.output == "detail" && live.Detail != "" {
				rs.Detail = json.RawMessage(live.Detail)
			}
		} else {
			b.deployed[r.Status]++
			rs.setStatus(b.q, r.Status)
			objs := p.Objects // a cluster's own objects, if it has any (controllers' edits, ca-certs)
			if a := apps[p.App]; a != nil {
				objs = a.ObjectsFor(p)
			}
			if i < len(objs) {
				rs.Detail = appctx.Detail(objs[i].Manifest)
			}
		}
		cs.Resources = append(cs.Resources, rs)
	}
	if b.q.output == "summary" || len(cs.Resources) == 0 {
		return
	}
	if conn := connectivity(p, b.q.ready); b.q.legacy {
		cs.ReadyStatus = conn
	} else {
		cs.Connectivity = conn
	}
	if n := len(b.apps); n == 0 || b.apps[n-1].Name != p.App {
		b.apps = append(b.apps, appStatus{Name: p.App})
	}
	last := &b.apps[len(b.apps)-1]
	last.Clusters = append(last.Clusters, cs)
}

func (r *resourceStatus) setStatus(q statusQuery, st string) {
	switch {
	case q.legacy && q.ready:
		r.ClusterStatus = st
	case q.legacy:
		r.RsyncStatus = st
	case q.ready:
		r.ReadyStatus = st
	default:
		r.DeployedStatus = st
	}
}

// finish sets the counts and overall statuses in the fields of the query's mode.
func (b *statusBuilder) finish(out *statusResult) {
	out.Apps = b.apps
	var overall string
	if b.q.ready {
		overall = overallReadiness(b.ready)
	}
	switch {
	case b.q.legacy && b.q.ready:
		out.Status, out.ReadyStatus, out.ClusterStatus = b.status, overall, b.ready
	case b.q.legacy:
		out.Status, out.RsyncStatus = b.status, b.deployed
	case b.q.ready:
		out.DeployedStatus, out.ReadyStatus, out.ReadyCounts = b.status, overall, b.ready
	default:
		out.DeployedStatus, out.DeployedCounts = b.status, b.deployed
	}
}

// readiness maps what a cluster showed of an object to EMCO's ready values: an object
// that could not be read (its cluster unreachable) is not known to be present.
func readiness(l appctx.Live) string {
	switch {
	case l.State == appctx.LiveOmitted:
		return readyOmitted
	case l.State != appctx.LivePresent:
		return readyNotPresent
	case l.Ready:
		return readyReady
	}
	return readyNotReady
}

// overallReadiness is EMCO's: Ready when nothing is NotReady or NotPresent (so also when
// nothing is counted), NotPresent when nothing is there at all, else NotReady.
func overallReadiness(counts map[string]int) string {
	switch {
	case counts[readyNotReady] == 0 && counts[readyNotPresent] == 0:
		return readyReady
	case counts[readyReady] == 0 && counts[readyNotReady] == 0:
		return readyNotPresent
	}
	return readyNotReady
}

// connectivity is what the placement shows of its cluster: Retrying while an apply is
// retrying to reach it; Unknown when a read could not reach it, or nothing has tried to;
// else Available.
func connectivity(p *appctx.ClusterApp, live bool) string {
	tried := false
	for _, r := range p.Resources {
		if r.Status == lifecycle.ResRetrying {
			return connRetrying
		}
		tried = tried || r.Status != lifecycle.ResPending
	}
	if live {
		for _, l := range p.Live {
			if l.State == appctx.LiveUnknown {
				return connUnknown
			}
		}
		return connAvailable
	}
	if tried {
		return connAvailable
	}
	return connUnknown
}
