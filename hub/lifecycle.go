package hub

import (
	"context"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/temco/temco/hubapi/v1alpha1"
)

// opStatus is the part of a lifecycle target's status answer (GET …/status) the hub reads.
type opStatus struct {
	States struct {
		Actions []struct {
			State string `json:"state"`
		} `json:"actions"`
	} `json:"states"`
	DeployedStatus string     `json:"deployedStatus"`
	Error          string     `json:"error"`
	Operation      *runningOp `json:"operation"`
}

// runningOp is an operation under way, as status and dashboard answers show it.
type runningOp struct {
	WorkflowID string `json:"workflowId"`
	Op         string `json:"op"`
}

// state is the target's lifecycle state (its last action's), "Created" when none.
func (s opStatus) state() string {
	if n := len(s.States.Actions); n > 0 {
		return s.States.Actions[n-1].State
	}
	return "Created"
}

// running reports whether an operation of the target is under way.
func (s opStatus) running() bool {
	return s.Operation != nil || strings.HasSuffix(s.DeployedStatus, "ing")
}

// failed reports whether the last operation failed.
func (s opStatus) failed() bool { return strings.HasSuffix(s.DeployedStatus, "Failed") }

func (r *Reconciler) status(ctx context.Context, path string) (opStatus, error) {
	var s opStatus
	_, err := r.REST.do(ctx, request{method: http.MethodGet, path: path + "/status?status=deployed&output=summary"}, &s)
	return s, err
}

// opAnswer is an operation's 202.
type opAnswer struct {
	WorkflowID string `json:"workflowId"`
	ContextID  string `json:"contextId"`
}

func (r *Reconciler) operate(ctx context.Context, owner, path, op string, body any) (opAnswer, error) {
	var a opAnswer
	_, err := r.REST.do(ctx, request{method: http.MethodPost, path: path + "/" + op, owner: owner, body: body}, &a)
	return a, err
}

// digView is the part of a DIG's dashboard answer (GET …/dashboard) the hub reads: its
// counts are whole whatever the page size.
type digView struct {
	State         string     `json:"state"`
	Revision      int        `json:"revision"`
	Instance      string     `json:"instance"`
	ContextStatus string     `json:"contextStatus"`
	Error         string     `json:"error"`
	Operation     *runningOp `json:"operation"`
	Rollout       *struct {
		State  string `json:"state"`
		Stages []struct {
			Name  string `json:"name"`
			State string `json:"state"`
		} `json:"stages"`
	} `json:"rollout"`
	Apps    []string       `json:"apps"`
	Objects map[string]int `json:"objects"`
	Total   int            `json:"total"`  // clusters
	States  map[string]int `json:"states"` // clusters by state: only with a state filter
	// AppStates are each app's clusters by state: only with a state filter.
	AppStates map[string]map[string]int `json:"appStates"`
}

// snapshotOf is the id of the configuration snapshot that produced revision ("" when
// none says so: a revision from before snapshots, or the API not answering).
func (r *Reconciler) snapshotOf(ctx context.Context, path string, revision int) string {
	var list []struct {
		ID        string `json:"id"`
		Revisions []struct {
			Revision int `json:"revision"`
		} `json:"revisions"`
	}
	if _, err := r.REST.do(ctx, request{method: http.MethodGet, path: path + "/snapshots?limit=10"}, &list); err != nil {
		return ""
	}
	for _, s := range list {
		for _, rv := range s.Revisions {
			if rv.Revision == revision {
				return s.ID
			}
		}
	}
	return ""
}

// stage is where a rollout is: its first stage not done, else its end.
func (v digView) stage() string {
	if v.Rollout == nil {
		return ""
	}
	for _, st := range v.Rollout.Stages {
		switch st.State {
		case "Succeeded", "Skipped", "Pending":
		default:
			return st.Name + ": " + st.State
		}
	}
	return v.Rollout.State
}

// digAfter drives a DIG to its desired state, one step per look: it never starts an
// operation while another runs, and an operation once started is Temporal's to finish.
func digAfter(ctx context.Context, r *Reconciler, o *v1.DeploymentIntentGroup, n *node) (time.Duration, error) {
	owner, path := ownerOf("DeploymentIntentGroup", o), n.path()
	var v digView
	if _, err := r.REST.do(ctx, request{method: http.MethodGet, path: path + "/dashboard?limit=1"}, &v); err != nil {
		return 0, err
	}
	r.recordView(ctx, o, path, v)
	s := opStatus{DeployedStatus: v.ContextStatus, Error: v.Error, Operation: v.Operation}
	setDegraded(o, s)
	if s.running() {
		setCondition(o, v1.Progressing, metav1.ConditionTrue, s.DeployedStatus, "an operation runs: "+o.Status.WorkflowID)
		setCondition(o, v1.Ready, metav1.ConditionFalse, "Progressing", "an operation runs")
		return followRunning, nil
	}
	setCondition(o, v1.Progressing, metav1.ConditionFalse, "Idle", "")
	if err := r.recordClusterStates(ctx, &o.Status, path, v); err != nil {
		return 0, err
	}
	if err := r.settleRequested(ctx, &o.Status, path, v.Instance); err != nil {
		return 0, err
	}
	if step := nextDIGStep(o); step.q.Op != "" {
		return r.startDIGStep(ctx, o, owner, path, step)
	}
	setDIGReady(o, s)
	return 0, nil
}

// recordView copies the dashboard's answer into the DIG's status, and the snapshot that
// made its revision when the revision is another one.
func (r *Reconciler) recordView(ctx context.Context, o *v1.DeploymentIntentGroup, path string, v digView) {
	st := &o.Status
	st.IntentCollections = intentCollections(o) // written: the apply before this succeeded
	if v.Revision != st.Revision || st.Snapshot == "" && v.Revision > 0 {
		st.Snapshot = r.snapshotOf(ctx, path, v.Revision)
	}
	st.State, st.Revision, st.ContextID = cmpOr(v.State, "Created"), v.Revision, v.Instance
	st.RolloutStage, st.Apps = v.stage(), len(v.Apps)
	st.Objects = counts(v.Objects)
	st.Clusters = v1.Counts{Total: v.Total}
	if v.Operation != nil {
		st.WorkflowID, st.Operation = v.Operation.WorkflowID, cmpOr(v.Operation.Op, st.Operation)
	}
}

// setDegraded says whether the last operation failed.
func setDegraded(o *v1.DeploymentIntentGroup, s opStatus) {
	if s.failed() {
		setCondition(o, v1.Degraded, metav1.ConditionTrue, s.DeployedStatus, s.Error)
	} else {
		setCondition(o, v1.Degraded, metav1.ConditionFalse, "NoFailure", "")
	}
}

// recordClusterStates counts the DIG's clusters by state, all and by app. That needs each
// cluster's documents read (a state filter): once per look when no operation runs, not at
// every follow-up of a running one.
func (r *Reconciler) recordClusterStates(ctx context.Context, st *v1.DeploymentIntentGroupStatus, path string, v digView) error {
	var byState digView
	if _, err := r.REST.do(ctx, request{method: http.MethodGet, path: path + "/dashboard?limit=1&state=Failed"}, &byState); err != nil {
		return err
	}
	st.Clusters = counts(byState.States)
	st.Clusters.Total = v.Total
	st.AppClusters = appClusters(v.Apps, byState.AppStates)
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
// the status the look recorded.
func nextDIGStep(o *v1.DeploymentIntentGroup) digStep {
	op := func(name string) digStep {
		return digStep{q: v1.RequestedOperation{Op: name, Hash: o.Status.AppliedHash}}
	}
	want, state := o.Spec.State, o.Status.State
	switch {
	case want == v1.StateCreated:
	case want == v1.StateApproved && (state == "Created" || state == "Terminated"):
		return op("approve")
	case (want == v1.StateApproved || want == v1.StateTerminated) && isDeployed(state):
		return op("terminate")
	case want == v1.StateInstantiated && state == "Created":
		step := op("instantiate")
		step.approveFirst = true
		return step
	case want == v1.StateInstantiated && (state == "Approved" || state == "Terminated"):
		return op("instantiate")
	case want == v1.StateInstantiated && state == "Instantiated":
		return changeStep(o, op)
	}
	return digStep{}
}

// changeStep plans the change of an instantiated DIG: a rollback its annotation asks for,
// else an update its spec or annotation asks for.
func changeStep(o *v1.DeploymentIntentGroup, op func(string) digStep) digStep {
	st := &o.Status
	if rb := o.Annotations[v1.AnnotationRollback]; rb != "" && rb != st.RollbackRequest {
		spec := map[string]any{"revision": rb}
		if _, err := strconv.Atoi(rb); err != nil {
			spec = map[string]any{"snapshot": rb}
		}
		step := op("rollback")
		step.q.Request, step.body = rb, map[string]any{"spec": spec}
		return step
	}
	up := o.Annotations[v1.AnnotationUpdate]
	if st.DeployedHash != st.AppliedHash || up != "" && up != st.UpdateRequest {
		step := op("update")
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
		if _, err := r.operate(ctx, owner, path, "approve", nil); err != nil {
			return 0, err
		}
	}
	q := step.q
	if q.Op == "update" || q.Op == "rollback" {
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
func setDIGReady(o *v1.DeploymentIntentGroup, s opStatus) {
	want, state := o.Spec.State, o.Status.State
	ready := want == "" || want == state || want == v1.StateApproved && state == "Approved"
	if ready && !s.failed() {
		setCondition(o, v1.Ready, metav1.ConditionTrue, state, "the DIG is "+state)
	} else {
		setCondition(o, v1.Ready, metav1.ConditionFalse, state, "the DIG is "+state+", wanted "+want)
	}
}

// carried records an operation temco took.
func carried(st *v1.DeploymentIntentGroupStatus, q v1.RequestedOperation) {
	st.Operation = q.Op
	switch q.Op {
	case "instantiate":
		st.DeployedHash = q.Hash
	case "update":
		st.DeployedHash, st.UpdateRequest = q.Hash, q.Request
	case "rollback":
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
	var list []struct {
		Revisions []struct {
			ContextID string `json:"contextId"`
			Operation string `json:"operation"`
		} `json:"revisions"`
	}
	if _, err := r.REST.do(ctx, request{method: http.MethodGet, path: path + "/snapshots?limit=10"}, &list); err != nil {
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

// isDeployed: states a terminate starts from.
func isDeployed(state string) bool {
	return state == "Instantiated" || state == "InstantiateStopped" || state == "TerminateStopped"
}

// digFinalize terminates a deployed DIG, waits for it, then deletes the DIG's resources.
func digFinalize(ctx context.Context, r *Reconciler, o *v1.DeploymentIntentGroup, n *node) (bool, error) {
	owner, path := ownerOf("DeploymentIntentGroup", o), n.path()
	s, err := r.status(ctx, path)
	if err != nil {
		return false, err
	}
	if s.running() {
		return false, nil
	}
	if isDeployed(s.state()) {
		a, err := r.operate(ctx, owner, path, "terminate", nil)
		if err != nil {
			return false, err
		}
		o.Status.Operation, o.Status.WorkflowID = "terminate", a.WorkflowID
		setCondition(o, v1.Progressing, metav1.ConditionTrue, "Terminating", "deleted: terminate started: "+a.WorkflowID)
		return false, nil
	}
	t := &tree{rest: r.REST, owner: owner}
	return true, t.remove(ctx, path, n.children)
}

// cloudAfter instantiates a logical cloud once its references are written.
func cloudAfter(ctx context.Context, r *Reconciler, o *v1.LogicalCloud, n *node) (time.Duration, error) {
	s, err := r.status(ctx, n.path())
	if err != nil {
		return 0, err
	}
	switch {
	case s.running():
		setCondition(o, v1.Ready, metav1.ConditionFalse, "Progressing", "an operation runs")
		return followRunning, nil
	case s.state() == "Created" || s.state() == "Terminated":
		if _, err := r.operate(ctx, ownerOf("LogicalCloud", o), n.path(), "instantiate", nil); err != nil {
			return 0, err
		}
		setCondition(o, v1.Ready, metav1.ConditionFalse, "Instantiating", "instantiate started")
		return followRunning, nil
	case s.failed():
		setCondition(o, v1.Ready, metav1.ConditionFalse, s.DeployedStatus, s.Error)
	default:
		setCondition(o, v1.Ready, metav1.ConditionTrue, s.state(), "the logical cloud is "+s.state())
	}
	return 0, nil
}

// cloudFinalize terminates an instantiated logical cloud, then deletes it.
func cloudFinalize(ctx context.Context, r *Reconciler, o *v1.LogicalCloud, n *node) (bool, error) {
	s, err := r.status(ctx, n.path())
	if err != nil || s.running() {
		return false, err
	}
	if isDeployed(s.state()) {
		_, err := r.operate(ctx, ownerOf("LogicalCloud", o), n.path(), "terminate", nil)
		return false, err
	}
	t := &tree{rest: r.REST, owner: ownerOf("LogicalCloud", o)}
	return true, t.remove(ctx, n.path(), n.children)
}

// counts reads a dashboard's counts by state (of clusters, or of objects).
func counts(m map[string]int) v1.Counts {
	var c v1.Counts
	for k, v := range m {
		c.Total += v
		switch k {
		case "Applied", "Ready", "NotReady":
			c.Deployed += v
		case "Pending":
			c.Pending += v
		case "Failed":
			c.Failed += v
		case "Retrying":
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
