package lifecycle

import (
	"time"

	"github.com/temco/temco/contract"
	"github.com/temco/temco/internal/core/capacity"
	"github.com/temco/temco/internal/core/rollout"
)

// The activities the workflows call, each declared once with what it takes and returns.
// From a call, lifecycle.PlanDriftCheck.Execute(ctx, in), to its code in one step: the
// declaration's Implementer names the package and the struct (activities/drift,
// Activities), and the method has the activity's name (drift.(*Activities).PlanDriftCheck).
// That package's register.go (ncm's and ca-certs': workers/controllers.go) registers the
// method (Register), so the compiler holds it to the declared types, and the workers' tests
// hold every activity declared here to be registered, by that method. A name, which histories record, may never change.

// activities/operation (operation.Activities): an operation's record and its context's
// header, a rollback's copy of a revision, a rollout's record and windows (rollout.go), a
// migrate's record, on the origin (its hold) and on the target (migrate.go).
var byOperation = Implementer{"activities/operation", "Activities"}

var (
	BeginOperation  = declare[BeginInput, BeginResult](byOperation, "BeginOperation")
	FinishOperation = declare[FinishInput, None](byOperation, "FinishOperation")
	CopyContext     = declare[CopyInput, Plan](byOperation, "CopyContext")
	RecordRollout   = declare[RolloutRecord, None](byOperation, "RecordRollout")
	RolloutWindow   = declare[WindowInput, rollout.Opening](byOperation, "RolloutWindow")
	BeginHold       = declare[BeginInput, BeginResult](byOperation, "BeginHold")
	BeginMigrate    = declare[MigrateBegin, BeginResult](byOperation, "BeginMigrate")
	FinishMigrate   = declare[MigrateFinish, None](byOperation, "FinishMigrate")
)

// activities/operation (operation.Holds, hold.go): the hold of a migrate's origin DIG.
var byHolds = Implementer{"activities/operation", "Holds"}

var (
	HoldDIG     = declare[HoldInput, OpAccepted](byHolds, "HoldDIG")
	AwaitHolder = declare[string, None](byHolds, "AwaitHolder") // the holder's workflow id
)

// activities/artifact (artifact.Activities): the pipeline of charts that come by
// reference: each pinned to a digest, then fetched, verified and stored; and the images of
// a context's objects pinned to their digests (pin.go).
var byArtifact = Implementer{"activities/artifact", "Activities"}

var (
	ResolveArtifacts = declare[ContextRef, ArtifactPlan](byArtifact, "ResolveArtifacts")
	FetchArtifact    = declare[FetchInput, None](byArtifact, "FetchArtifact")
	PinImages        = declare[ContextRef, None](byArtifact, "PinImages")
)

// activities/render (render.Activities): the rendering of a context's charts (the number
// of apps), and again per set of cluster capabilities (variants.go).
var byRender = Implementer{"activities/render", "Activities"}

var (
	RenderApps     = declare[ContextRef, int](byRender, "RenderApps")
	RenderVariants = declare[ContextRef, None](byRender, "RenderVariants")
)

// activities/placement (placement.Activities): placement, and the commit of the
// controllers' edits; the autoscaler's view of its DIG and capacity placement, and the
// record of its state there (capacity.go).
var byPlacement = Implementer{"activities/placement", "Activities"}

var (
	PlaceApps         = declare[ContextRef, Plan](byPlacement, "PlaceApps")
	CommitControllers = declare[ContextRef, Plan](byPlacement, "CommitControllers")
	ObserveCapacity   = declare[CapacityObserveInput, CapacityView](byPlacement, "ObserveCapacity")
	RecordCapacity    = declare[CapacityRecord, None](byPlacement, "RecordCapacity")
)

// activities/actions (actions.Activities): a built-in intent controller's step (an
// external controller's worker registers its own, on its task queue), and the controllers
// of a context (by its id).
var byActions = Implementer{"activities/actions", "Activities"}

var (
	RunController      = declare[contract.Input, contract.Result](byActions, contract.ActivityName)
	ContextControllers = declare[string, Hooked](byActions, "ContextControllers")
)

// activities/cluster (cluster.Activities): the number of a context's batches (by its id)
// and a batch's clusters, and per cluster the apply, delete, read and prune; and the same
// per group of clusters (one activity works on a batch's clusters together: group.go).
var byCluster = Implementer{"activities/cluster", "Activities"}

var (
	ContextBatches = declare[string, int](byCluster, "ContextBatches")
	ListBatch      = declare[BatchInput, []string](byCluster, "ListBatch")
	CountBatch     = declare[BatchInput, None](byCluster, "CountBatch")
	ApplyCluster   = declare[ClusterInput, ClusterResult](byCluster, "ApplyCluster")
	DeleteCluster  = declare[ClusterInput, ClusterResult](byCluster, "DeleteCluster")
	ReadCluster    = declare[ClusterInput, ClusterResult](byCluster, "ReadCluster")
	PruneCluster   = declare[ClusterInput, ClusterResult](byCluster, "PruneCluster")
	ApplyGroup     = declare[GroupInput, GroupResult](byCluster, "ApplyGroup")
	DeleteGroup    = declare[GroupInput, GroupResult](byCluster, "DeleteGroup")
	ReadGroup      = declare[GroupInput, GroupResult](byCluster, "ReadGroup")
	PruneGroup     = declare[GroupInput, GroupResult](byCluster, "PruneGroup")
)

// activities/logicalcloud (logicalcloud.Activities): a logical cloud's preparation, and
// its objects' set-up, tear-down and prune on each cluster (kind_logicalcloud.go).
var byLogicalCloud = Implementer{"activities/logicalcloud", "Activities"}

var (
	PrepareLogicalCloud  = declare[ContextRef, Plan](byLogicalCloud, "PrepareLogicalCloud")
	SetUpLogicalCloud    = declare[ClusterInput, ClusterResult](byLogicalCloud, "SetUpLogicalCloud")
	TearDownLogicalCloud = declare[ClusterInput, ClusterResult](byLogicalCloud, "TearDownLogicalCloud")
	PruneLogicalCloud    = declare[ClusterInput, ClusterResult](byLogicalCloud, "PruneLogicalCloud")
)

// activities/drift (drift.Activities): a drift check's plan and record, and per batch its
// clusters and per cluster (and group) the drift detection (detect.go).
var byDrift = Implementer{"activities/drift", "Activities"}

var (
	PlanDriftCheck     = declare[DriftInput, DriftPlan](byDrift, "PlanDriftCheck")
	RecordDriftCheck   = declare[DriftRecordInput, None](byDrift, "RecordDriftCheck")
	DriftBatchClusters = declare[BatchInput, []string](byDrift, "DriftBatchClusters")
	DetectDrift        = declare[ClusterInput, ClusterResult](byDrift, "DetectDrift")
	DetectDriftGroup   = declare[GroupInput, GroupResult](byDrift, "DetectDriftGroup")
)

// activities/preview (preview.Activities): a rollout preview's steps (see preview.go);
// DeletePreview takes the scratch context's id.
var byPreview = Implementer{"activities/preview", "Activities"}

var (
	BeginPreview       = declare[PreviewInput, PreviewStart](byPreview, "BeginPreview")
	PreviewControllers = declare[[]Controller, PreviewChoice](byPreview, "PreviewControllers")
	DiffPreview        = declare[PreviewDiffInput, RolloutPreview](byPreview, "DiffPreview")
	DeletePreview      = declare[string, None](byPreview, "DeletePreview")
)

// activities/relocate (relocate.Activities): the Relocate workflow's steps (see
// relocate.go); the autoscaler and the inventory change a DIG with UpdateDIG too.
var byRelocate = Implementer{"activities/relocate", "Activities"}

var (
	PlanRelocation = declare[RelocateRequest, RelocationPlan](byRelocate, "PlanRelocation")
	PlaceApp       = declare[PlaceAppInput, None](byRelocate, "PlaceApp")
	UpdateDIG      = declare[UpdateDIGInput, None](byRelocate, "UpdateDIG")
	AwaitAppReady  = declare[AwaitAppReadyInput, None](byRelocate, "AwaitAppReady")
)

// activities/autoscale (autoscale.Activities): a cluster's signals, and the drain of its
// HPAs.
var byAutoscale = Implementer{"activities/autoscale", "Activities"}

var (
	CapacitySignals = declare[CapacitySignalsInput, capacity.Signals](byAutoscale, "CapacitySignals")
	DrainCapacity   = declare[CapacityDrainInput, None](byAutoscale, "DrainCapacity")
)

// activities/inventory (inventory.Activities): one sync of a cluster inventory.
var byInventory = Implementer{"activities/inventory", "Activities"}

var SyncInventory = declare[InventoryInput, InventorySynced](byInventory, "SyncInventory")

// activities/health (health.Activities): a page of clusters probed, and the end of a round
// of probes recorded (when it started).
var byHealth = Implementer{"activities/health", "Activities"}

var (
	ProbeClusters    = declare[ProbePage, ProbedPage](byHealth, "ProbeClusters")
	RecordProbeRound = declare[time.Time, None](byHealth, "RecordProbeRound")
)

// activities/policy (policy.Activities): an agent's event stream, a policy intent's
// evaluation, the workflow a decision starts, and the decision's record.
var byPolicy = Implementer{"activities/policy", "Activities"}

var (
	ListenPolicyAgent = declare[PolicyAgentInput, PolicyListened](byPolicy, "ListenPolicyAgent")
	EvaluatePolicy    = declare[PolicyEvaluateInput, PolicyVerdict](byPolicy, "EvaluatePolicy")
	PolicyAction      = declare[PolicyActionInput, contract.Workflow](byPolicy, "PolicyAction")
	RecordPolicy      = declare[PolicyRecord, None](byPolicy, "RecordPolicy")
)

// controllers/ncm (ncm.Activities): a cluster network's preparation (kind_clusternetwork.go).
var byNCM = Implementer{"controllers/ncm", "Activities"}

var PrepareClusterNetwork = declare[ContextRef, Plan](byNCM, "PrepareClusterNetwork")

// controllers/cacerts (cacerts.Activities): enrolment signs a key per member cluster on the
// issuing cluster (enroll.go); distribution puts the issued certificates and their keys on
// the member clusters (distribute.go); kind_cacert.go says which runs when.
var byCACerts = Implementer{"controllers/cacerts", "Activities"}

var (
	PrepareCertEnrollment   = declare[ContextRef, Plan](byCACerts, "PrepareCertEnrollment")
	EnrollCertificates      = declare[ClusterInput, ClusterResult](byCACerts, "EnrollCertificates")
	WithdrawCertificates    = declare[ClusterInput, ClusterResult](byCACerts, "WithdrawCertificates")
	PruneCertificates       = declare[ClusterInput, ClusterResult](byCACerts, "PruneCertificates")
	PrepareCertDistribution = declare[ContextRef, Plan](byCACerts, "PrepareCertDistribution")
	DistributeCertificates  = declare[ClusterInput, ClusterResult](byCACerts, "DistributeCertificates")
)
