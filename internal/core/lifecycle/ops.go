package lifecycle

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/temco/temco/internal/core/artifact"
	"github.com/temco/temco/internal/core/rollout"
)

// TaskTimeout is the WorkflowTaskTimeout of the operation workflows and their batches
// (Temporal's default: 10 s). A workflow task that was started when its worker or the
// Temporal server died is handed out again only when it runs out (a restarted worker
// cannot give it back: it has no task token). The operation, or its batch and the batch's
// place in the operation's window, waited all of it (bench-restart, 2026-11-30: 10.00 s
// after a Temporal kill, 5.00 s for a batch after a worker kill). An operation's history is
// at most a few thousand events, replayed in tens of milliseconds, so 5 s leaves a loaded
// worker ample time.
const TaskTimeout = 5 * time.Second

// Names of workflows, queries, signals and updates (stable: they are part of recorded
// histories and of what operators type into the temporal CLI).
const (
	WorkflowDIG         = "DIGLifecycle"
	WorkflowInstantiate = "Instantiate"
	WorkflowTerminate   = "Terminate"
	WorkflowUpdate      = "Update"
	WorkflowRollback    = "Rollback"
	WorkflowPruneBatch  = "PruneBatch"
	WorkflowApplyBatch  = "ApplyBatch"
	WorkflowDeleteBatch = "DeleteBatch"
	WorkflowReadStatus  = "ReadClusterStatus"
	WorkflowReadBatch   = "ReadBatch"
	// WorkflowRelocate is the relocate feature's (features/relocate), named here as the
	// one of temco's workflows users' intents may start (workflowmgr).
	WorkflowRelocate = "Relocate"
	// RelocateParamsKey names the activityParams entry of a relocation.
	RelocateParamsKey = "relocate"

	UpdateOperate = "operate"
	SignalStop    = "stop"
	// A rollout (see RolloutCommand) takes its commands as signals of these names, for
	// `temporal workflow signal`, or as the update UpdateRollout, which the API uses: its
	// validator refuses what the rollout cannot do now.
	SignalApprove         = "approve"
	SignalPause           = "pause"
	SignalResume          = "resume"
	SignalRollback        = "rollback"
	UpdateRollout         = "rollout"
	SignalClusterRetrying = "cluster-retrying"
	QueryProgress         = "progress"
)

// The operations' workflows, which the DIG's workflow starts as children, and their
// batches', which an operation starts as children (Workflow).
var (
	ChildInstantiate = DeclareChild[OpInput, None](WorkflowInstantiate)
	ChildTerminate   = DeclareChild[OpInput, None](WorkflowTerminate)
	ChildUpdate      = DeclareChild[OpInput, None](WorkflowUpdate)
	ChildRollback    = DeclareChild[OpInput, None](WorkflowRollback)
	ChildMigrate     = DeclareChild[MigrateInput, None](WorkflowMigrate)
	ChildApplyBatch  = DeclareChild[BatchInput, BatchResult](WorkflowApplyBatch)
	ChildDeleteBatch = DeclareChild[BatchInput, BatchResult](WorkflowDeleteBatch)
	ChildPruneBatch  = DeclareChild[BatchInput, BatchResult](WorkflowPruneBatch)
	ChildReadBatch   = DeclareChild[BatchInput, BatchResult](WorkflowReadBatch)
)

// ownWorkflows are every workflow type temco's worker runs (workers.AllWorkflows): the
// core's, and those each feature's flow package declares (DeclareWorkflows). No user's
// intent may start one, but Relocate (workflowmgr).
var ownWorkflows = map[string]bool{WorkflowDIG: true, WorkflowInstantiate: true, WorkflowTerminate: true,
	WorkflowUpdate: true, WorkflowRollback: true, WorkflowMigrate: true, WorkflowPruneBatch: true,
	WorkflowApplyBatch: true, WorkflowDeleteBatch: true, WorkflowReadStatus: true, WorkflowReadBatch: true}

// DeclareWorkflows declares a feature's workflow types as temco's own.
func DeclareWorkflows(names ...string) {
	for _, n := range names {
		if ownWorkflows[n] {
			panic("workflow " + n + " is declared twice")
		}
		ownWorkflows[n] = true
	}
}

// OwnWorkflowTypes are every workflow type temco's worker runs, sorted.
func OwnWorkflowTypes() []string { return slices.Sorted(maps.Keys(ownWorkflows)) }

// IsOwnWorkflowType reports whether name is one of OwnWorkflowTypes.
func IsOwnWorkflowType(name string) bool { return ownWorkflows[name] }

// OpRequest asks the DIG lifecycle workflow to run an operation.
type OpRequest struct {
	Op        string `json:"op"`
	ContextID string `json:"contextId,omitempty"` // the new context (instantiate, update, rollback), chosen by the caller
	Revision  int64  `json:"revision,omitempty"`  // rollback: the revision to return to
	Requested string `json:"requested"`           // RFC 3339 time of the API request
}

// OpAccepted answers an accepted operation.
type OpAccepted struct {
	Op         string `json:"op"`
	ContextID  string `json:"contextId"`
	Revision   int64  `json:"revision"`
	WorkflowID string `json:"workflowId"`
}

// TargetInput starts (or continues) a target's lifecycle workflow (any kind).
type TargetInput struct {
	Target Target `json:"dig"`
}

// OpInput starts an operation workflow on one context.
type OpInput struct {
	Target    Target `json:"dig"`
	ContextID string `json:"contextId"`
	// Update and rollback: the running context the new one replaces, and (rollback) the
	// stored revision's context to copy instead of rendering anew.
	Previous string `json:"previous,omitempty"`
	Source   string `json:"source,omitempty"`
	// Terminate: earlier contexts of the instance whose objects an update did not finish
	// removing; they are deleted too.
	Leftovers []string `json:"leftovers,omitempty"`
}

// BeginInput records the start of an operation in the DIG's state history.
type BeginInput struct {
	Target    Target `json:"dig"`
	Op        string `json:"op"`
	ContextID string `json:"contextId,omitempty"`
	Revision  int64  `json:"revision,omitempty"` // rollback target
}

// BeginResult is the context the operation works on.
type BeginResult struct {
	ContextID string   `json:"contextId"`
	Revision  int64    `json:"revision"`
	Previous  string   `json:"previous,omitempty"`
	Source    string   `json:"source,omitempty"`
	Leftovers []string `json:"leftovers,omitempty"`
}

// FinishInput records how an operation ended.
type FinishInput struct {
	Target    Target `json:"dig"`
	ContextID string `json:"contextId"`
	Status    string `json:"status"` // final AppContext status
	Stopped   bool   `json:"stopped,omitempty"`
	Error     string `json:"error,omitempty"`
	// Superseded: the previous context, now fully replaced on the clusters (Updated).
	Superseded string `json:"superseded,omitempty"`
	// Hooks are the workflows the operation ran for its controllers (tac's hooks).
	Hooks []HookRun `json:"hooks,omitempty"`
	// Restored is the previous context, current again: a failed rollout returned every
	// cluster it had changed to it.
	Restored string `json:"restored,omitempty"`
	// Rollout is where the operation's rollout ended (nil without a rollout strategy).
	Rollout *RolloutStatus `json:"rollout,omitempty"`
	// Refused: the operation failed before it touched any cluster (rendering, placement,
	// a controller or a pre-hook refused it).
	Refused bool `json:"refused,omitempty"`
}

// HookRun is a workflow an operation ran for a controller (contract.Workflow: tac's
// hooks), for the status: where to find it in Temporal and how it went.
type HookRun struct {
	Name       string `json:"name"`
	Kind       string `json:"kind,omitempty"` // e.g. pre-install
	Controller string `json:"controller,omitempty"`
	Type       string `json:"type,omitempty"` // the workflow type
	WorkflowID string `json:"workflowId"`
	RunID      string `json:"runId,omitempty"`
	// State is Running, Started (not blocking: left to run on its own), Completed,
	// Failed, TimedOut or Cancelled.
	State string `json:"state"`
	Error string `json:"error,omitempty"`
}

// Plan is what rendering, placement and the action controllers produced: everything
// the fan-out needs, by reference (the manifests stay in MongoDB).
type Plan struct {
	Apps        int          `json:"apps"`
	Clusters    int          `json:"clusters"`
	Batches     int          `json:"batches"`
	Controllers []Controller `json:"controllers,omitempty"`
	// FirstBatch lists the clusters when there is a single batch, sparing a lookup.
	FirstBatch []string `json:"firstBatch,omitempty"`
	// Rollout lays the batches out in the stages of the DIG's rollout strategy (nil: the
	// DIG has none, and every batch is applied at once).
	Rollout *rollout.Plan `json:"rollout,omitempty"`
}

// Controller is an action controller invocation, in priority order.
type Controller struct {
	Name      string `json:"name"`
	Intent    string `json:"intent"`
	Type      string `json:"type,omitempty"` // placement or action
	Priority  int    `json:"priority"`
	TaskQueue string `json:"taskQueue,omitempty"` // external controllers run on their own queue
	Parent    string `json:"parent,omitempty"`    // contract.Input.Parent
}

// RegistrationID is the store id of a controller's registration: /controllers/<name>, or
// for a sub-controller of the built-in fan-out controller parent, the parent's own
// registry (/dtc-controllers/<name>).
func RegistrationID(name, parent string) string {
	if parent == "" {
		return "/controllers/" + name
	}
	return "/" + parent + "-controllers/" + name
}

// SubcontrollerKind is the stored kind of the registrations in a fan-out controller's
// registry ("dtcController", as temco stored /v2/dtc-controllers before dtc was built).
func SubcontrollerKind(parent string) string { return parent + "Controller" }

// ContextRef names a context for activities that work on all of it.
type ContextRef struct {
	Target    Target `json:"dig"`
	ContextID string `json:"contextId"`
}

// BatchInput names one batch of clusters of a context.
type BatchInput struct {
	ContextID string `json:"contextId"`
	Batch     int    `json:"batch"`
	Detail    bool   `json:"detail,omitempty"`   // reads: keep each object's metadata, spec and status
	Previous  string `json:"previous,omitempty"` // apply: the running context to diff against
	Next      string `json:"next,omitempty"`     // prune: the context that replaces this one
	// Activity replaces the batch kind's usual per-cluster activity (logical clouds').
	Activity string `json:"activity,omitempty"`
	// ClustersOf is the context whose batch Batch lists the clusters ("": ContextID's): a
	// rollout prunes the previous revision, or returns to it, on the clusters of a stage of
	// the new one.
	ClustersOf string `json:"clustersOf,omitempty"`
	// Tolerant batches count a cluster whose activity failed instead of failing: a rollout
	// weighs failures against its stage's budget.
	Tolerant bool `json:"tolerant,omitempty"`
	// Gate: a rollout gate's read (ClusterInput.Gate).
	Gate bool `json:"gate,omitempty"`
	// Drift: a drift check's batch (DriftBatch).
	Drift *DriftCheck `json:"drift,omitempty"`
	// GroupSize: clusters per group activity, as the fan-out recorded it (0: the batch
	// records it itself, or, in a run from before groups, has none).
	GroupSize int `json:"groupSize,omitempty"`
	// Offline is a rollout's policy for agent clusters whose agent stopped calling (nil:
	// wait).
	Offline *rollout.Offline `json:"offline,omitempty"`
}

// ClusterInput names one cluster of a context.
type ClusterInput struct {
	ContextID string      `json:"contextId"`
	Cluster   string      `json:"cluster"` // ClusterKey
	Detail    bool        `json:"detail,omitempty"`
	Previous  string      `json:"previous,omitempty"`
	Next      string      `json:"next,omitempty"`
	Drift     *DriftCheck `json:"drift,omitempty"`
	// Gate: a rollout gate's read. An object this context applied whose readiness is its
	// existence (readiness.ByExistence) is taken as Present and Ready, not read again:
	// the gate reads only what a controller can still make unready.
	Gate bool `json:"gate,omitempty"`
	// After: the cluster left a group (GroupResult.Left) and its own activity continues
	// the group's attempts.
	After *Prior `json:"after,omitempty"`
}

// GroupInput names the clusters one group activity works on together: each as its
// ClusterInput (Cluster unset here) would on its own.
type GroupInput struct {
	ClusterInput
	Clusters []string `json:"clusters"`
	// Batch, when set, is the batch the group lists itself (Clusters unset) instead of a
	// ListBatch activity before it, and counts at its end instead of a CountBatch after it.
	Batch *GroupBatch `json:"batch,omitempty"`
}

// GroupBatch is the batch a group lists itself, as ListBatch would (dropping its counts).
// A batch of more than Size clusters is not worked on but handed back whole
// (GroupResult.Handed), for the batch workflow to split into groups of Size.
type GroupBatch struct {
	Index      int    `json:"index"`
	ClustersOf string `json:"clustersOf,omitempty"` // BatchInput.ClustersOf
	Size       int    `json:"size"`
	// Count: store the batch's counts at the end (as CountBatch) if the group finished
	// every cluster, none left to its own activity or to its agent.
	Count bool `json:"count,omitempty"`
}

// GroupResult is what a group activity did: the clusters it finished, and those that
// failed and left the group to be retried each by its own activity, after Prior.
type GroupResult struct {
	Done  []GroupDone `json:"done,omitempty"`
	Left  []GroupLeft `json:"left,omitempty"`
	Prior Prior       `json:"prior"`
	// Of a group that listed its batch (GroupInput.Batch): how many clusters the batch
	// has, those handed back unworked when they were too many for one group, and whether
	// the batch's counts were stored.
	Listed  int      `json:"listed,omitempty"`
	Handed  []string `json:"handed,omitempty"`
	Counted bool     `json:"counted,omitempty"`
}

// GroupDone is one cluster a group finished.
type GroupDone struct {
	Cluster string        `json:"cluster"`
	Result  ClusterResult `json:"result"`
}

// GroupLeft is one cluster that failed in a group, and why.
type GroupLeft struct {
	Cluster string `json:"cluster"`
	Error   string `json:"error"`
}

// Prior is the group attempt a left cluster's own activity continues: its statuses are
// saved as Activity's with attempt numbers counted on from Attempts, and its patience
// with a new CRD runs from Scheduled.
type Prior struct {
	Activity  string    `json:"activity"`
	Attempts  int32     `json:"attempts"`
	Scheduled time.Time `json:"scheduled"`
}

// ReadInput asks for the live state of a context's objects on its clusters.
type ReadInput struct {
	ContextID string `json:"contextId"`
	Detail    bool   `json:"detail,omitempty"`
	// Clusters limits the read to these clusters (the dashboard's page of them), read
	// directly rather than batch by batch; empty reads them all.
	Clusters []string `json:"clusters,omitempty"`
}

// ClusterResult counts one cluster's resources by outcome.
type ClusterResult struct {
	Done int `json:"done"`
	// Failed counts the objects that failed; for reads, those the context has not
	// applied (failed, retrying or not reached yet).
	Failed int `json:"failed"`
	// NotReady (reads) counts the objects missing, not Ready or unreadable.
	NotReady int `json:"notReady,omitempty"`
	// Awaiting: the cluster is reached by its agent (docs/agent.md), which was given the
	// work; the counts come with its report, which AwaitAgent waits for.
	Awaiting *AgentWait `json:"awaiting,omitempty"`
	// Offline: the cluster's agent has not called since then, and the offline policy let
	// the operation go on without it (skip: nothing counted; fail: its objects Failed).
	// A read of such a skipped cluster says it too, and counts nothing.
	Offline *time.Time `json:"offline,omitempty"`
}

// AgentWait is what AwaitAgent waits for: the report of generation Gen of an agent
// cluster's item (agent.ItemID), the work its activity gave for Context.
type AgentWait struct {
	Cluster string `json:"cluster"`
	Item    string `json:"item"`
	Gen     int64  `json:"gen"`
	Context string `json:"context,omitempty"`
	// Offline is the policy for an agent that stops calling (zero: wait, and call it
	// offline after rollout.DefaultOfflineAfter).
	Offline rollout.Offline `json:"offline,omitzero"`
}

// BatchResult aggregates a batch.
type BatchResult struct {
	Clusters int `json:"clusters"`
	Done     int `json:"done"`
	Failed   int `json:"failed"`
	NotReady int `json:"notReady,omitempty"` // reads: see ClusterResult
	// Clusters with a failed resource or a failed activity, and (reads) clusters with an
	// object not Ready: what a rollout's gates count.
	ClustersFailed   int `json:"clustersFailed,omitempty"`
	ClustersNotReady int `json:"clustersNotReady,omitempty"`
}

// ClusterRetry reports a cluster Temporal keeps retrying (unreachable or overloaded).
type ClusterRetry struct {
	Cluster string `json:"cluster"`
	Attempt int32  `json:"attempt"`
	Error   string `json:"error"`
}

// Progress answers the progress query of an operation workflow.
type Progress struct {
	Op              string `json:"op"`
	ContextID       string `json:"contextId"`
	Phase           string `json:"phase"`
	ClustersTotal   int    `json:"clustersTotal"`
	BatchesTotal    int    `json:"batchesTotal"`
	BatchesDone     int    `json:"batchesDone"`
	ClustersDone    int    `json:"clustersDone"`
	ResourcesFailed int    `json:"resourcesFailed"`
	Stopped         bool   `json:"stopped"`
	// Retrying lists the clusters being retried, with their last error.
	Retrying []ClusterRetry `json:"retrying,omitempty"`
	// Hooks are the workflows run for controllers so far.
	Hooks []HookRun `json:"hooks,omitempty"`
	// Rollout is where a staged rollout stands (nil without a rollout strategy).
	Rollout *RolloutStatus `json:"rollout,omitempty"`
}

// Hooked is what the hooks of a context's controllers need: the controllers that ran on
// it, in order, and how many steps it had (a hook sees every step's edits).
type Hooked struct {
	Controllers []Controller `json:"controllers,omitempty"`
	Steps       int          `json:"steps"`
}

// ControllerActivityID is the activity id of a controller step of an operation.
func ControllerActivityID(step int, controller string) string {
	return fmt.Sprintf("controller/%d/%s", step, controller)
}

// HookActivityID is the activity id of a controller's hook call.
func HookActivityID(hook, controller string) string {
	return "controller/" + hook + "/" + controller
}

// ControllerOfActivity is the controller a controller step's or hook's activity id names
// ("" for other activities).
func ControllerOfActivity(id string) string {
	rest, ok := strings.CutPrefix(id, "controller/")
	if !ok {
		return ""
	}
	_, name, _ := strings.Cut(rest, "/")
	return name
}

// RunningOp is what Temporal says of a target's running operation: its workflow, and the
// steps it waits on or retries that the per-cluster statuses do not show.
type RunningOp struct {
	WorkflowID string        `json:"workflowId"`
	RunID      string        `json:"runId"`
	Waiting    []WaitingStep `json:"waiting,omitempty"`
	// Hooks are the workflows it runs for its controllers now (tac's hooks).
	Hooks []HookRun `json:"hooks,omitempty"`
}

// WaitingStep is a pending activity of an operation: a controller step (scheduled on a
// queue no worker polls, running, or between attempts) or another step being retried.
type WaitingStep struct {
	Activity   string `json:"activity"`
	Controller string `json:"controller,omitempty"`
	// State is Scheduled (no worker has taken it yet: for an external controller, its
	// process is down), Started, or CancelRequested.
	State     string     `json:"state"`
	Attempt   int32      `json:"attempt"`
	LastError string     `json:"lastError,omitempty"`
	Scheduled *time.Time `json:"scheduled,omitempty"` // when the current attempt was (or will be) scheduled
	Worker    string     `json:"lastWorker,omitempty"`
}

// ArtifactPlan is what ResolveArtifacts found: the artifacts to fetch, and whether the
// DIG pins its images once its objects are final (activities/artifact).
type ArtifactPlan struct {
	Fetch     []artifact.Resolved `json:"fetch,omitempty"`
	PinImages bool                `json:"pinImages,omitempty"`
}

// FetchInput fetches one artifact a context's app needs (activities/artifact).
type FetchInput struct {
	ContextRef
	Artifact artifact.Resolved `json:"artifact"`
}

// CopyInput copies a stored revision into a new context (rollback).
type CopyInput struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// A cluster's apply is retried with capped exponential backoff (the deploy workflows'
// policy), so when its next attempt comes can be told from its last.
const (
	RetryInitialInterval = time.Second
	RetryMaximumInterval = 30 * time.Second
	RetryBackoff         = 2
)

// NextAttempt is when attempt number attempt+1 starts, attempt having failed at failed.
func NextAttempt(failed time.Time, attempt int32) time.Time {
	wait := RetryInitialInterval
	for i := int32(1); i < attempt && wait < RetryMaximumInterval; i++ {
		wait *= RetryBackoff
	}
	return failed.Add(min(wait, RetryMaximumInterval))
}

// DriftCheck is one check of one context, as its batches and clusters see it: the drift
// feature's (features/drift), in the core as the batches' and clusters' inputs carry it.
type DriftCheck struct {
	ID      string    `json:"id"` // the Drift workflow's run id: records of this check carry it
	Started time.Time `json:"started"`
	Correct bool      `json:"correct,omitempty"`
}

// UpdateDIGInput runs an update of DIG to the new context ContextID and waits for it.
type UpdateDIGInput struct {
	DIG       Target `json:"dig"`
	ContextID string `json:"contextId"`
}
