// The stored documents of an AppContext: header, rendered apps, placements and statuses, batches.

package appctx

import (
	"time"

	"github.com/temco/temco/internal/core/artifact"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/model"
)

// Context is the header of one AppContext.
type Context struct {
	ID        string `bson:"_id"`
	DIG       string `bson:"dig"`      // the DIG's store _id
	Instance  string `bson:"instance"` // the context that began this instance (its instantiate)
	Revision  int64  `bson:"revision"`
	Op        string `bson:"op,omitempty"` // the operation that made a later revision (update, rollback)
	Status    string `bson:"status"`
	Error     string `bson:"error,omitempty"`
	Namespace string `bson:"namespace"`
	// Credentials names the logical cloud whose issued credentials the apply uses ("" for
	// the clusters' registered ones: admin clouds, and logical clouds' own set-up).
	Credentials string `bson:"credentials,omitempty"`
	// Apps is written by rendering alone. A MongoDB-wire server may apply two concurrent
	// updates of one document as read-modify-write (FerretDB does), so placement, which
	// runs beside it, keeps its results out of the header: see Store.Batches.
	Apps []string `bson:"apps"` // in dependency order
	// Hooks are the workflows the context's operation ran for its controllers (tac's hooks).
	Hooks []lifecycle.HookRun `bson:"hooks,omitempty"`
	// Artifacts are the charts that came by reference, by app: what each was pinned to
	// (the revision deploys exactly those bits) and how far its pipeline got.
	Artifacts map[string]artifact.Status `bson:"artifacts,omitempty"`
	// Blobs are the stored artifacts (by digest) the context keeps from garbage collection.
	Blobs []string `bson:"blobs,omitempty"`
	// Images are the container images the revision pinned to digests (spec.imagePinning).
	Images []artifact.Image `bson:"images,omitempty"`
	// Rollout is where the operation's staged rollout stands, as it last recorded it.
	Rollout *lifecycle.RolloutStatus `bson:"rollout,omitempty"`
	Created time.Time                `bson:"created"`
	Updated time.Time                `bson:"updated"`
}

// Ref identifies a Kubernetes object.
type Ref struct {
	Group     string `bson:"group" json:"Group"`
	Version   string `bson:"version" json:"Version"`
	Kind      string `bson:"kind" json:"Kind"`
	Namespace string `bson:"namespace,omitempty" json:"Namespace,omitempty"`
	Name      string `bson:"name" json:"Name"`
}

func (r Ref) String() string {
	s := r.Kind + "/" + r.Name
	if r.Namespace != "" {
		s = r.Namespace + "/" + s
	}
	return s
}

// Object is one rendered manifest of an app.
type Object struct {
	Ref      `bson:",inline"`
	Manifest string `bson:"manifest"` // JSON
	Hash     string `bson:"hash"`     // sha256 of Manifest
	// Sealed is a Secret's Manifest as stored, sealed (then Manifest and Hash are empty).
	// The Store opens it as it reads: no caller sees it set.
	Sealed []byte `bson:"sealed,omitempty" json:"-"`
}

// App is the rendered content of one app in a context.
type App struct {
	ID      string                    `bson:"_id"` // <ctx>/<app>
	Context string                    `bson:"ctx"`
	Name    string                    `bson:"app"`
	Deps    []model.AppDependencySpec `bson:"deps,omitempty"`
	Objects []Object                  `bson:"objects"` // in apply order
	// Base is what rendering produced, kept once controllers' edits replaced Objects: a
	// retried commit starts from it again.
	Base []Object `bson:"base,omitempty"`
	// Added: a controller added the app (nothing rendered it).
	Added bool `bson:"added,omitempty"`
	// Capabilities: the app's chart reads .Capabilities, so clusters of other
	// capabilities may need other objects (Variants).
	Capabilities bool `bson:"capabilities,omitempty"`
	// Variants are the app's objects as rendered for clusters whose capabilities (their
	// Kubernetes version and APIs) make them differ from Objects, by the capabilities' key
	// (see ClusterApp.Variant): stored once for every such cluster.
	Variants map[string][]Object `bson:"variants,omitempty"`
}

// ObjectsFor returns the app's objects on the cluster of placement p: its own (controllers'
// cluster-specific edits), else its capabilities' variant, else the app's.
func (a *App) ObjectsFor(p *ClusterApp) []Object {
	if p.Objects != nil {
		return p.Objects
	}
	if objs, ok := a.Variants[p.Variant]; ok && p.Variant != "" {
		return objs
	}
	return a.Objects
}

// ResourceStatus is the status of one object of an app on one cluster.
type ResourceStatus struct {
	Ref      `bson:",inline"`
	Status   string `bson:"status"`
	Attempts int32  `bson:"attempts,omitempty"`
	Error    string `bson:"error,omitempty"`
	// Warning is what an applied object's apply left out (fields the cluster's schema
	// does not declare), or what its deletion has long been waiting for (finalizers).
	Warning string    `bson:"warning,omitempty"`
	Updated time.Time `bson:"updated,omitempty"`
}

// ClusterApp is one app placed on one cluster, with its resources' statuses.
type ClusterApp struct {
	App       string           `bson:"app"`
	Cluster   string           `bson:"-"` // provider+cluster, from the enclosing document
	Resources []ResourceStatus `bson:"resources"`
	// Unlisted: no status was recorded yet, every object of the app is Pending and only
	// the rendered app lists them (placement runs beside rendering). See List.
	Unlisted bool `bson:"unlisted,omitempty"`
	// Objects replaces the app's objects on this cluster alone (controllers' cluster-
	// specific edits); index-aligned with Resources.
	Objects []Object `bson:"objects,omitempty"`
	// Variant names the app's objects rendered for this cluster's capabilities (a key of
	// App.Variants; "" for the app's own).
	Variant string `bson:"variant,omitempty"`
	// Live is what the cluster showed at LiveAt, index-aligned with Resources. Stored
	// apart (clusterDoc.Live): an apply saving its statuses (SaveStatuses) would otherwise
	// write back the live state it read before, undoing a live read made meanwhile.
	Live   []Live    `bson:"-"`
	LiveAt time.Time `bson:"-"`
}

// clusterDoc holds every app of a context placed on one cluster: the unit a cluster
// activity reads and writes. Stored in its batch's groupDoc, or, in contexts placed
// before groups, as a document of its own found by _id.
type clusterDoc struct {
	ID      string        `bson:"_id,omitempty"` // <ctx>/<provider+cluster>; none in a group
	Context string        `bson:"ctx,omitempty"` // none in a group`
	Cluster string        `bson:"cluster"`
	Batch   int           `bson:"batch"`
	Apps    []*ClusterApp `bson:"apps"`           // written by placement and the cluster activities
	Live    []appLive     `bson:"live,omitempty"` // written by live reads, never by an apply
	// Writer is the cluster activity attempt that last saved the statuses (SaveStatuses).
	Writer *Attempt `bson:"writer,omitempty"`
}

// appLive is the last live read of one app on a cluster (ClusterApp.Live and LiveAt).
type appLive struct {
	App     string    `bson:"app"`
	Objects []Live    `bson:"objects"`
	At      time.Time `bson:"at"`
}

// attach gives the apps of d what they take from their document: its cluster and their
// last live read.
func (d *clusterDoc) attach() {
	for _, a := range d.Apps {
		a.Cluster = d.Cluster
		for _, l := range d.Live {
			if l.App == a.App {
				a.Live, a.LiveAt = l.Objects, l.At
			}
		}
	}
}

// batchDoc lists the clusters of one batch.
type batchDoc struct {
	ID       string   `bson:"_id"` // <ctx>/batch/<n>
	Context  string   `bson:"ctx"`
	Batch    int      `bson:"batch"`
	Clusters []string `bson:"clusters"`
	// Counts (app -> resource status -> objects) is the batch's status as counted when
	// its batch workflow ended; absent while one runs. See CountBatch.
	Counts map[string]map[string]int `bson:"counts,omitempty"`
	// States counts the batch's clusters by their worst object's status, counted with
	// Counts (absent in batches counted before it was: those are counted from their
	// clusters' documents).
	States map[string]int `bson:"states,omitempty"`
	// Others names the clusters of every state but the batch's most common one, by state,
	// counted with States (empty when all share one; absent in batches counted before it
	// was): with States it gives each cluster's state without its document (see Grid).
	Others map[string][]string `bson:"others,omitempty"`
	// Grouped: the context keeps its clusters' documents per batch (groupDoc), not one
	// per cluster (placed since issue 66; see groups.go).
	Grouped bool `bson:"grouped,omitempty"`
}

// Live is an object as last read from its cluster.
type Live struct {
	State  string `bson:"state"`            // Present, NotPresent or Unknown (cluster unreachable)
	Ready  bool   `bson:"ready"`            // see readiness.Ready
	Error  string `bson:"error,omitempty"`  // why the state is Unknown
	Reason string `bson:"reason,omitempty"` // why a present object is not ready, as its cluster says (readiness.Judge)
	Detail string `bson:"detail,omitempty"` // JSON, see DetailOf; when asked for
	// Applied: not read but taken from the context's apply, by a rollout gate, for a kind
	// Ready once it exists (lifecycle.ClusterInput.Gate).
	Applied bool `bson:"applied,omitempty"`
}

// Live states.
const (
	LivePresent    = "Present"
	LiveNotPresent = "NotPresent"
	LiveUnknown    = "Unknown"
	// LiveOmitted: temco deployed nothing of the object, by the cluster's choice (a Secret
	// a GitOps cluster keeps out of git), and cannot see it; readiness does not count it.
	LiveOmitted = "Omitted"
)
