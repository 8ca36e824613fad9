package lifecycle

import (
	"github.com/temco/temco/contract"
	"github.com/temco/temco/internal/core/rollout"
)

// The core's activities the workflows call, each declared once with what it takes and
// returns (each feature declares its own in its flow package, features/<name>/flow). From
// a call, lifecycle.RenderApps.Execute(ctx, in), to its code in one step: the
// declaration's Implementer names the package and the struct (activities/render,
// Activities), and the method has the activity's name (render.(*Activities).RenderApps).
// That package's register.go (ncm's and ca-certs': workers/controllers.go) registers the
// method (Register), so the compiler holds it to the declared types, and the workers'
// tests hold every activity declared to be registered, by that method. A name, which
// histories record, may never change.

// activities/operation (operation.Activities): an operation's record and its context's
// header, a rollback's copy of a revision, a rollout's record and windows (rollout.go), a
// migrate's record, on the origin (its hold) and on the target (migrate.go).
var byOperation = Implementer{"activities/operation", "Activities"}

var (
	BeginOperation  = Declare[BeginInput, BeginResult](byOperation, "BeginOperation")
	FinishOperation = Declare[FinishInput, None](byOperation, "FinishOperation")
	CopyContext     = Declare[CopyInput, Plan](byOperation, "CopyContext")
	RecordRollout   = Declare[RolloutRecord, None](byOperation, "RecordRollout")
	RolloutWindow   = Declare[WindowInput, rollout.Opening](byOperation, "RolloutWindow")
	BeginHold       = Declare[BeginInput, BeginResult](byOperation, "BeginHold")
	BeginMigrate    = Declare[MigrateBegin, BeginResult](byOperation, "BeginMigrate")
	FinishMigrate   = Declare[MigrateFinish, None](byOperation, "FinishMigrate")
)

// activities/operation (operation.Holds, hold.go): the hold of a migrate's origin DIG.
var byHolds = Implementer{"activities/operation", "Holds"}

var (
	HoldDIG     = Declare[HoldInput, OpAccepted](byHolds, "HoldDIG")
	AwaitHolder = Declare[string, None](byHolds, "AwaitHolder") // the holder's workflow id
)

// activities/operation (operation.Updates, update.go): a DIG's update, run by the
// workflows that change a DIG (relocate, the autoscaler, the cluster inventories).
var byUpdates = Implementer{"activities/operation", "Updates"}

var UpdateDIG = Declare[UpdateDIGInput, None](byUpdates, "UpdateDIG")

// activities/artifact (artifact.Activities): the pipeline of charts that come by
// reference: each pinned to a digest, then fetched, verified and stored; and the images of
// a context's objects pinned to their digests (pin.go).
var byArtifact = Implementer{"activities/artifact", "Activities"}

var (
	ResolveArtifacts = Declare[ContextRef, ArtifactPlan](byArtifact, "ResolveArtifacts")
	FetchArtifact    = Declare[FetchInput, None](byArtifact, "FetchArtifact")
	PinImages        = Declare[ContextRef, None](byArtifact, "PinImages")
)

// activities/render (render.Activities): the rendering of a context's charts (the number
// of apps whose charts read the clusters' capabilities), and again per set of cluster
// capabilities (variants.go).
var byRender = Implementer{"activities/render", "Activities"}

var (
	RenderApps     = Declare[ContextRef, int](byRender, "RenderApps")
	RenderVariants = Declare[ContextRef, None](byRender, "RenderVariants")
)

// activities/placement (placement.Activities): placement, and the commit of the
// controllers' edits; the autoscaler's view of its DIG and capacity placement, and the
// record of its state there (capacity.go).
var byPlacement = Implementer{"activities/placement", "Activities"}

var (
	PlaceApps         = Declare[ContextRef, Plan](byPlacement, "PlaceApps")
	CommitControllers = Declare[ContextRef, Plan](byPlacement, "CommitControllers")
	ObserveCapacity   = Declare[CapacityObserveInput, CapacityView](byPlacement, "ObserveCapacity")
	RecordCapacity    = Declare[CapacityRecord, None](byPlacement, "RecordCapacity")
)

// activities/actions (actions.Activities): a built-in intent controller's step (an
// external controller's worker registers its own, on its task queue), and the controllers
// of a context (by its id).
var byActions = Implementer{"activities/actions", "Activities"}

var (
	RunController      = Declare[contract.Input, contract.Result](byActions, contract.ActivityName)
	ContextControllers = Declare[string, Hooked](byActions, "ContextControllers")
)

// activities/cluster (cluster.Activities): the number of a context's batches (by its id)
// and a batch's clusters, and per cluster the apply, delete, read and prune; and the same
// per group of clusters (one activity works on a batch's clusters together: group.go).
var byCluster = Implementer{"activities/cluster", "Activities"}

var (
	ContextBatches = Declare[string, int](byCluster, "ContextBatches")
	ListBatch      = Declare[BatchInput, []string](byCluster, "ListBatch")
	CountBatch     = Declare[BatchInput, None](byCluster, "CountBatch")
	ApplyCluster   = Declare[ClusterInput, ClusterResult](byCluster, "ApplyCluster")
	DeleteCluster  = Declare[ClusterInput, ClusterResult](byCluster, "DeleteCluster")
	ReadCluster    = Declare[ClusterInput, ClusterResult](byCluster, "ReadCluster")
	PruneCluster   = Declare[ClusterInput, ClusterResult](byCluster, "PruneCluster")
	ApplyGroup     = Declare[GroupInput, GroupResult](byCluster, "ApplyGroup")
	DeleteGroup    = Declare[GroupInput, GroupResult](byCluster, "DeleteGroup")
	ReadGroup      = Declare[GroupInput, GroupResult](byCluster, "ReadGroup")
	PruneGroup     = Declare[GroupInput, GroupResult](byCluster, "PruneGroup")
	// AwaitAgent ends when an agent cluster's agent reports the work an apply or delete
	// gave it (completed asynchronously by the api: docs/agent.md).
	AwaitAgent = Declare[AgentWait, ClusterResult](byCluster, "AwaitAgent")
)

// activities/logicalcloud (logicalcloud.Activities): a logical cloud's preparation, and
// its objects' set-up, tear-down and prune on each cluster (kind_logicalcloud.go).
var byLogicalCloud = Implementer{"activities/logicalcloud", "Activities"}

var (
	PrepareLogicalCloud  = Declare[ContextRef, Plan](byLogicalCloud, "PrepareLogicalCloud")
	SetUpLogicalCloud    = Declare[ClusterInput, ClusterResult](byLogicalCloud, "SetUpLogicalCloud")
	TearDownLogicalCloud = Declare[ClusterInput, ClusterResult](byLogicalCloud, "TearDownLogicalCloud")
	PruneLogicalCloud    = Declare[ClusterInput, ClusterResult](byLogicalCloud, "PruneLogicalCloud")
)

// controllers/ncm (ncm.Activities): a cluster network's preparation (kind_clusternetwork.go).
var byNCM = Implementer{"controllers/ncm", "Activities"}

var PrepareClusterNetwork = Declare[ContextRef, Plan](byNCM, "PrepareClusterNetwork")

// controllers/cacerts (cacerts.Activities): enrolment signs a key per member cluster on the
// issuing cluster (enroll.go); distribution puts the issued certificates and their keys on
// the member clusters (distribute.go); kind_cacert.go says which runs when.
var byCACerts = Implementer{"controllers/cacerts", "Activities"}

var (
	PrepareCertEnrollment   = Declare[ContextRef, Plan](byCACerts, "PrepareCertEnrollment")
	EnrollCertificates      = Declare[ClusterInput, ClusterResult](byCACerts, "EnrollCertificates")
	WithdrawCertificates    = Declare[ClusterInput, ClusterResult](byCACerts, "WithdrawCertificates")
	PruneCertificates       = Declare[ClusterInput, ClusterResult](byCACerts, "PruneCertificates")
	PrepareCertDistribution = Declare[ContextRef, Plan](byCACerts, "PrepareCertDistribution")
	DistributeCertificates  = Declare[ClusterInput, ClusterResult](byCACerts, "DistributeCertificates")
)
