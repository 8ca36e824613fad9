package flow

import (
	"fmt"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/temco/temco/contract"
	"github.com/temco/temco/internal/core/lifecycle"
)

// evaluationsPerRun bounds one run's history: Policy continues as new after them.
const evaluationsPerRun = 100

// idleFor ends a Policy workflow no event reached for that long; the next event starts
// it again (signal-with-start), so a DIG whose agents went quiet holds no workflow open.
const idleFor = 10 * time.Minute

// pendingKept bounds the events waiting for evaluation: when events come faster than
// policies are evaluated, only the newest of each intent, agent, app and event id is
// kept, and beyond this many the oldest are dropped.
const pendingKept = 1000

type evaluator struct {
	dig     lifecycle.Target
	pending []PolicyEvent
	// decided are the decisions of this run, for the query.
	decided []PolicyDecision
}

// Policy evaluates the DIG's policy intents as their events come (SignalPolicyEvent), in
// order, and starts the workflow a policy asks for; it ends after idleFor without events
// or on SignalStop.
func Policy(ctx workflow.Context, in PolicyInput) error {
	e := &evaluator{dig: in.DIG, pending: in.Pending}
	if err := workflow.SetQueryHandler(ctx, QueryPolicy, func() (map[string]any, error) {
		return map[string]any{"pending": len(e.pending), "decisions": e.decided}, nil
	}); err != nil {
		return err
	}
	events := workflow.GetSignalChannel(ctx, SignalPolicyEvent)
	stop := workflow.GetSignalChannel(ctx, lifecycle.SignalStop)
	for n := 0; ; n++ {
		e.take(events)
		if len(e.pending) == 0 {
			if stopped := e.await(ctx, events, stop); stopped {
				return nil
			}
			if e.take(events); len(e.pending) == 0 {
				return nil // idle: nothing came
			}
		}
		if stop.ReceiveAsync(nil) {
			return nil
		}
		if n >= evaluationsPerRun || workflow.GetInfo(ctx).GetContinueAsNewSuggested() {
			e.take(events)
			return workflow.NewContinueAsNewError(ctx, Policy, PolicyInput{DIG: e.dig, Pending: e.pending})
		}
		ev := e.pending[0]
		e.pending = e.pending[1:]
		if err := e.evaluate(ctx, ev); err != nil {
			return err
		}
	}
}

// await waits for an event, a stop or idleFor; it reports a stop.
func (e *evaluator) await(ctx workflow.Context, events, stop workflow.ReceiveChannel) bool {
	tctx, cancel := workflow.WithCancel(ctx)
	defer cancel()
	stopped := false
	sel := workflow.NewSelector(ctx)
	sel.AddFuture(workflow.NewTimer(tctx, idleFor), func(workflow.Future) {})
	sel.AddReceive(events, func(workflow.ReceiveChannel, bool) {}) // taken by take
	sel.AddReceive(stop, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, nil); stopped = true })
	sel.Select(ctx)
	return stopped
}

// take moves every event already signalled into pending: an event replaces a pending
// one of the same intent, agent, context, app and id (the newer measurement supersedes
// it), and beyond pendingKept the oldest go.
func (e *evaluator) take(events workflow.ReceiveChannel) {
	for {
		var ev PolicyEvent
		if !events.ReceiveAsync(&ev) {
			return
		}
		key := func(p PolicyEvent) string {
			return strings.Join([]string{p.Intent, p.Agent, p.ContextID, p.App, p.EventID}, "\x00")
		}
		replaced := false
		for i := range e.pending {
			if key(e.pending[i]) == key(ev) {
				e.pending[i], replaced = ev, true
				break
			}
		}
		if !replaced {
			e.pending = append(e.pending, ev)
		}
		if n := len(e.pending) - pendingKept; n > 0 {
			e.pending = e.pending[n:]
		}
	}
}

// evaluate evaluates one event's intent, starts the workflow its verdict asks for and
// records the decision. An evaluation that fails is recorded as such, never retried
// beyond its activity's attempts: the next event is the next chance.
func (e *evaluator) evaluate(ctx workflow.Context, ev PolicyEvent) error {
	d := PolicyDecision{At: workflow.Now(ctx).UTC(), EventID: ev.EventID, Agent: ev.Agent, Source: ev.Source,
		ContextID: ev.ContextID, App: ev.App}
	var v PolicyVerdict
	err := EvaluatePolicy.Execute(evaluating(ctx),
		PolicyEvaluateInput{DIG: e.dig, Event: ev}).Get(ctx, &v)
	switch {
	case err != nil:
		d.Outcome, d.Error = "not evaluated", lifecycle.ErrorMessage(err)
	case v.Gone:
		return nil // the intent was deleted: nothing to record it in
	case !v.ActionRequired:
		d.Engine, d.Outcome = v.Engine, "no action"
	default:
		d.Engine, d.ActionRequired, d.Workflow = v.Engine, true, v.Workflow
		e.act(ctx, &d, ev.Intent)
	}
	workflow.GetLogger(ctx).Info("policy decision", "dig", e.dig.String(), "intent", ev.Intent, "event", ev.EventID,
		"outcome", d.Outcome, "workflowID", d.WorkflowID, "error", d.Error)
	e.decided = append(e.decided, d)
	if n := len(e.decided) - PolicyDecisionsKept; n > 0 {
		e.decided = e.decided[n:]
	}
	return RecordPolicy.Execute(bookkeeping(ctx),
		PolicyRecord{DIG: e.dig, Intent: ev.Intent, Decision: d}).Get(ctx, nil)
}

// act starts the workflow intent the decision names as an abandoned child: started once
// (the start is in this workflow's history, so a replay or a retried task never starts
// it again), left running when this workflow ends. A run of the same id still running
// is not started again: the decision says so.
func (e *evaluator) act(ctx workflow.Context, d *PolicyDecision, intent string) {
	var w contract.Workflow
	if err := PolicyAction.Execute(bookkeeping(ctx),
		PolicyActionInput{DIG: e.dig, Workflow: d.Workflow}).Get(ctx, &w); err != nil {
		d.Outcome, d.Error = "not started", lifecycle.ErrorMessage(err)
		return
	}
	opts := workflow.ChildWorkflowOptions{
		WorkflowID: w.ID, TaskQueue: w.TaskQueue,
		WorkflowExecutionTimeout: w.ExecutionTimeout, WorkflowRunTimeout: w.RunTimeout, WorkflowTaskTimeout: w.TaskTimeout,
		WorkflowIDReusePolicy: enumspb.WorkflowIdReusePolicy(w.IDReusePolicy), RetryPolicy: retryOf(w.Retry),
		TypedSearchAttributes: lifecycle.SearchAttributes(e.dig, OpPolicy),
		StaticSummary:         fmt.Sprintf("workflow intent %s of %s, started by policy intent %s on event %s", w.Name, e.dig, intent, d.EventID),
		ParentClosePolicy:     enumspb.PARENT_CLOSE_POLICY_ABANDON,
	}
	cctx, _ := workflow.NewDisconnectedContext(ctx)
	// Users' workers hold no key of temco's payload codec.
	cctx = workflow.WithDataConverter(workflow.WithChildOptions(cctx, opts), converter.GetDefaultDataConverter())
	var args []any
	if len(w.Arg) > 0 {
		args = append(args, w.Arg)
	}
	var exec workflow.Execution
	if err := workflow.ExecuteChildWorkflow(cctx, w.Type, args...).GetChildWorkflowExecution().Get(ctx, &exec); err != nil {
		d.Outcome, d.Error, d.WorkflowID = "not started", lifecycle.ErrorMessage(err), w.ID
		if temporal.IsWorkflowExecutionAlreadyStartedError(err) {
			d.Outcome, d.Error = "not started: a run of "+w.ID+" is still running", ""
		}
		return
	}
	d.Outcome, d.WorkflowID, d.RunID = "started", exec.ID, exec.RunID
}

func retryOf(p *contract.RetryPolicy) *temporal.RetryPolicy {
	if p == nil {
		return nil
	}
	return &temporal.RetryPolicy{InitialInterval: p.InitialInterval, BackoffCoefficient: p.BackoffCoefficient,
		MaximumInterval: p.MaximumInterval, MaximumAttempts: p.MaximumAttempts, NonRetryableErrorTypes: p.NonRetryableErrorTypes}
}

var permanent = []string{lifecycle.ErrInvalidInput, lifecycle.ErrInvalidState}

// evaluating is for an evaluation: an external engine that does not answer is tried
// three times; a policy that cannot be evaluated is not retried.
func evaluating(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 30 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 3, NonRetryableErrorTypes: permanent}})
}

// bookkeeping is for the store-only steps: retried until the store answers.
func bookkeeping(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute,
		RetryPolicy: &temporal.RetryPolicy{MaximumInterval: 30 * time.Second, NonRetryableErrorTypes: permanent}})
}
