package hub

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	temco "github.com/temco/temco/client"
	v1 "github.com/temco/temco/hubapi/v1alpha1"
	"github.com/temco/temco/internal/core/lifecycle"
)

// The lifecycles' machines are temco's (lifecycle.DIGs, lifecycle.LogicalClouds): the hub
// asks them which operation may start from a state, and plans only which one brings an
// object towards the state it declares (nextDIGStep).
var (
	digs   = lifecycle.DIGs.Machine
	clouds = lifecycle.LogicalClouds.Machine
)

func (r *Reconciler) status(ctx context.Context, path string) (temco.Status, error) {
	return as(ctx, r.API).Status(ctx, path)
}

func (r *Reconciler) operate(ctx context.Context, owner, path, op string, body any) (temco.OpAccepted, error) {
	return as(ctx, r.API).OwnedBy(owner).Operate(ctx, path, op, body)
}

// snapshotOf is the id of the configuration snapshot that produced revision ("" when
// none says so: a revision from before snapshots, or the API not answering).
func (r *Reconciler) snapshotOf(ctx context.Context, path string, revision int) string {
	list, err := as(ctx, r.API).Snapshots(ctx, path, 10)
	if err != nil {
		return ""
	}
	for _, s := range list {
		for _, rv := range s.Revisions {
			if rv.Revision == int64(revision) {
				return s.ID
			}
		}
	}
	return ""
}

// digAfter drives a DIG to its desired state, one step per look: it never starts an
// operation while another runs, and an operation once started is Temporal's to finish.
func digAfter(ctx context.Context, r *Reconciler, o *v1.DeploymentIntentGroup, n *node) (time.Duration, error) {
	owner, path := ownerOf("DeploymentIntentGroup", o), n.path()
	s, err := as(ctx, r.API).DIGState(ctx, path, temco.DIGStateOptions{})
	if err != nil {
		return 0, err
	}
	r.recordState(ctx, o, path, s)
	setDegraded(o, s.Failed(), s.ContextStatus, s.Error)
	if s.Running() {
		setCondition(o, v1.Progressing, metav1.ConditionTrue, s.ContextStatus, "an operation runs: "+o.Status.WorkflowID)
		setCondition(o, v1.Ready, metav1.ConditionFalse, "Progressing", "an operation runs")
		return followRunning, nil
	}
	setCondition(o, v1.Progressing, metav1.ConditionFalse, "Idle", "")
	if err := r.recordClusterStates(ctx, &o.Status, path, s); err != nil {
		return 0, err
	}
	if err := r.settleRequested(ctx, &o.Status, path, s.ContextID); err != nil {
		return 0, err
	}
	if step := nextDIGStep(o); step.q.Op != "" {
		return r.startDIGStep(ctx, o, owner, path, step)
	}
	setDIGReady(o, s.Failed())
	return 0, nil
}

// recordState copies the DIG's state (GET DIG/state) into its status, and the snapshot
// that made its revision when the revision is another one.
func (r *Reconciler) recordState(ctx context.Context, o *v1.DeploymentIntentGroup, path string, s temco.DIGState) {
	st := &o.Status
	st.IntentCollections = intentCollections(o) // written: the apply before this succeeded
	revision := int(s.Revision)
	if revision != st.Revision || st.Snapshot == "" && revision > 0 {
		st.Snapshot = r.snapshotOf(ctx, path, revision)
	}
	st.State, st.Revision, st.ContextID = cmpOr(s.State, lifecycle.StateCreated), revision, s.ContextID
	st.RolloutStage, st.Apps = s.Rollout.Stage(), len(s.Apps)
	st.Objects = counts(s.Objects)
	st.Clusters = v1.Counts{Total: s.Clusters}
	if s.Operation != nil {
		st.WorkflowID, st.Operation = s.Operation.WorkflowID, cmpOr(s.Operation.Op, st.Operation)
	}
}

// setDegraded says whether the last operation failed: its context's status, and why.
func setDegraded(o *v1.DeploymentIntentGroup, failed bool, status, why string) {
	if failed {
		setCondition(o, v1.Degraded, metav1.ConditionTrue, status, why)
	} else {
		setCondition(o, v1.Degraded, metav1.ConditionFalse, "NoFailure", "")
	}
}

// recordClusterStates counts the DIG's clusters by state, all and by app. That reads each
// cluster's record: once per look when no operation runs, not at every follow-up of a
// running one.
func (r *Reconciler) recordClusterStates(ctx context.Context, st *v1.DeploymentIntentGroupStatus, path string, s temco.DIGState) error {
	byState, err := as(ctx, r.API).DIGState(ctx, path, temco.DIGStateOptions{Clusters: true})
	if err != nil {
		return err
	}
	st.Clusters = counts(byState.ClusterStates)
	st.Clusters.Total = s.Clusters
	st.AppClusters = appClusters(s.Apps, byState.AppClusterStates)
	return nil
}

// appClusters are each app's clusters by state, in the order of the apps' names; an app
// placed nowhere has none.
func appClusters(placed []string, byApp map[string]map[string]int) []v1.AppCounts {
	apps := slices.AppendSeq(slices.Clone(placed), maps.Keys(byApp))
	slices.Sort(apps)
	var out []v1.AppCounts
	for _, app := range slices.Compact(apps) {
		out = append(out, v1.AppCounts{App: app, Clusters: counts(byApp[app])})
	}
	return out
}

// settleRequested settles an update or rollback asked for by a hub that did not record
// the answer (killed after the 202): temco took it if the deployment (its context,
// current) is another one now, made by it.
func (r *Reconciler) settleRequested(ctx context.Context, st *v1.DeploymentIntentGroupStatus, path, current string) error {
	q := st.Requested
	if q == nil {
		return nil
	}
	took, err := r.madeBy(ctx, path, q, current)
	if err != nil {
		return err
	}
	st.Requested = nil
	if took {
		carried(st, *q)
	}
	return nil
}

// digStep is the operation a look at a DIG starts (none when q.Op is ""), with its body;
// approveFirst: the DIG is approved before.
type digStep struct {
	q            v1.RequestedOperation
	body         any
	approveFirst bool
}

// nextDIGStep plans the operation that brings the DIG towards its desired state, from
// the status the look recorded. The DIG's machine says what may start from its state;
// the plan picks what leads to the state wanted. It approves only a DIG never approved or
// terminated, though the machine approves a migrated one too: a migrated DIG's deployment
// lives on in its migrate's target, and the hub must not deploy it a second time.
func nextDIGStep(o *v1.DeploymentIntentGroup) digStep {
	op := func(name string) digStep {
		return digStep{q: v1.RequestedOperation{Op: name, Hash: o.Status.AppliedHash}}
	}
	want, state := o.Spec.State, o.Status.State
	switch {
	case want == v1.StateCreated:
	case want == v1.StateApproved && (state == lifecycle.StateCreated || state == lifecycle.StateTerminated):
		return op(temco.OpApprove)
	case (want == v1.StateApproved || want == v1.StateTerminated) && digs.Allows(lifecycle.OpTerminate, state):
		return op(temco.OpTerminate)
	case want == v1.StateInstantiated && state == lifecycle.StateCreated:
		step := op(temco.OpInstantiate)
		step.approveFirst = true
		return step
	case want == v1.StateInstantiated && digs.Allows(lifecycle.OpInstantiate, state):
		return op(temco.OpInstantiate)
	case want == v1.StateInstantiated && state == lifecycle.StateInstantiated:
		return changeStep(o, op)
	}
	return digStep{}
}

// changeStep plans the change of an instantiated DIG: a rollback its annotation asks for,
// else an update its spec or annotation asks for.
func changeStep(o *v1.DeploymentIntentGroup, op func(string) digStep) digStep {
	st := &o.Status
	if rb := o.Annotations[v1.AnnotationRollback]; rb != "" && rb != st.RollbackRequest {
		to := temco.RollbackSpec{Revision: rb}
		if _, err := strconv.Atoi(rb); err != nil {
			to = temco.RollbackSpec{Snapshot: rb}
		}
		step := op(temco.OpRollback)
		step.q.Request, step.body = rb, temco.RollbackRequest{Spec: to}
		return step
	}
	up := o.Annotations[v1.AnnotationUpdate]
	if st.DeployedHash != st.AppliedHash || up != "" && up != st.UpdateRequest {
		step := op(temco.OpUpdate)
		step.q.Request = up
		return step
	}
	return digStep{}
}

// startDIGStep asks for step's operation and records what it carries out, once the API
// took it (a request that failed is asked again at the next look).
func (r *Reconciler) startDIGStep(ctx context.Context, o *v1.DeploymentIntentGroup, owner, path string, step digStep) (time.Duration, error) {
	st := &o.Status
	if step.approveFirst {
		if _, err := r.operate(ctx, owner, path, temco.OpApprove, nil); err != nil {
			return 0, err
		}
	}
	q := step.q
	if q.Op == temco.OpUpdate || q.Op == temco.OpRollback {
		// These leave the state as it was, so the request is written down first.
		q.Revision, q.Context = st.Revision, st.ContextID
		st.Requested = &q
		if err := r.writeStatus(ctx, o); err != nil {
			return 0, err
		}
	}
	a, err := r.operate(ctx, owner, path, q.Op, step.body)
	if err != nil {
		return 0, err
	}
	st.Requested = nil
	carried(st, q)
	st.WorkflowID = a.WorkflowID
	setCondition(o, v1.Progressing, metav1.ConditionTrue, "Started", q.Op+" started: "+a.WorkflowID)
	setCondition(o, v1.Ready, metav1.ConditionFalse, "Progressing", q.Op+" started")
	return followRunning, nil
}

// setDIGReady says whether the DIG is in the state wanted, without a failure.
func setDIGReady(o *v1.DeploymentIntentGroup, failed bool) {
	want, state := o.Spec.State, o.Status.State
	if (want == "" || want == state) && !failed {
		setCondition(o, v1.Ready, metav1.ConditionTrue, state, "the DIG is "+state)
	} else {
		setCondition(o, v1.Ready, metav1.ConditionFalse, state, "the DIG is "+state+", wanted "+want)
	}
}

// carried records an operation temco took.
func carried(st *v1.DeploymentIntentGroupStatus, q v1.RequestedOperation) {
	st.Operation = q.Op
	switch q.Op {
	case temco.OpInstantiate:
		st.DeployedHash = q.Hash
	case temco.OpUpdate:
		st.DeployedHash, st.UpdateRequest = q.Hash, q.Request
	case temco.OpRollback:
		st.RollbackRequest = q.Request
	}
}

// madeBy reports whether the DIG's deployment (its context, current) replaced the one q
// was asked on, and was made by q's operation: the DIG's snapshots list each revision's
// context with the operation that made it. (Revision numbers start again after a
// terminate, so a context, not a number, names the deployment.)
func (r *Reconciler) madeBy(ctx context.Context, path string, q *v1.RequestedOperation, current string) (bool, error) {
	if current == q.Context {
		return false, nil
	}
	list, err := as(ctx, r.API).Snapshots(ctx, path, 10)
	if err != nil {
		return false, err
	}
	for _, s := range list {
		for _, rv := range s.Revisions {
			if rv.ContextID == current {
				return rv.Operation == q.Op, nil
			}
		}
	}
	return false, nil
}

// digFinalize terminates a deployed DIG, waits for it, then deletes the DIG's resources.
func digFinalize(ctx context.Context, r *Reconciler, o *v1.DeploymentIntentGroup, n *node) (bool, error) {
	owner, path := ownerOf("DeploymentIntentGroup", o), n.path()
	s, err := r.status(ctx, path)
	if err != nil {
		return false, err
	}
	if s.Running() {
		return false, nil
	}
	if digs.Allows(lifecycle.OpTerminate, s.State()) {
		a, err := r.operate(ctx, owner, path, temco.OpTerminate, nil)
		if err != nil {
			return false, err
		}
		o.Status.Operation, o.Status.WorkflowID = temco.OpTerminate, a.WorkflowID
		setCondition(o, v1.Progressing, metav1.ConditionTrue, "Terminating", "deleted: terminate started: "+a.WorkflowID)
		return false, nil
	}
	return true, r.tree(owner).remove(ctx, path, n.children)
}

// cloudAfter instantiates a logical cloud once its references are written.
func cloudAfter(ctx context.Context, r *Reconciler, o *v1.LogicalCloud, n *node) (time.Duration, error) {
	s, err := r.status(ctx, n.path())
	if err != nil {
		return 0, err
	}
	switch {
	case s.Running():
		setCondition(o, v1.Ready, metav1.ConditionFalse, "Progressing", "an operation runs")
		return followRunning, nil
	case clouds.Allows(lifecycle.OpInstantiate, s.State()):
		if _, err := r.operate(ctx, ownerOf("LogicalCloud", o), n.path(), temco.OpInstantiate, nil); err != nil {
			return 0, err
		}
		setCondition(o, v1.Ready, metav1.ConditionFalse, "Instantiating", "instantiate started")
		return followRunning, nil
	case s.Failed():
		setCondition(o, v1.Ready, metav1.ConditionFalse, s.DeployedStatus, s.Error)
	default:
		setCondition(o, v1.Ready, metav1.ConditionTrue, s.State(), "the logical cloud is "+s.State())
	}
	return 0, nil
}

// cloudFinalize terminates an instantiated logical cloud, then deletes it.
func cloudFinalize(ctx context.Context, r *Reconciler, o *v1.LogicalCloud, n *node) (bool, error) {
	s, err := r.status(ctx, n.path())
	if err != nil || s.Running() {
		return false, err
	}
	if clouds.Allows(lifecycle.OpTerminate, s.State()) {
		_, err := r.operate(ctx, ownerOf("LogicalCloud", o), n.path(), temco.OpTerminate, nil)
		return false, err
	}
	return true, r.tree(ownerOf("LogicalCloud", o)).remove(ctx, n.path(), n.children)
}

// counts reads counts by state, of clusters or of objects (GET DIG/state's), into the
// status's; Ready and NotReady are a live read's Applied.
func counts(m map[string]int) v1.Counts {
	var c v1.Counts
	for k, v := range m {
		c.Total += v
		switch k {
		case lifecycle.ResApplied, "Ready", "NotReady":
			c.Deployed += v
		case lifecycle.ResPending:
			c.Pending += v
		case lifecycle.ResFailed:
			c.Failed += v
		case lifecycle.ResRetrying:
			c.Retrying += v
		}
	}
	return c
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
