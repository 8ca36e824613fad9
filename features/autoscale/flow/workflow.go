// Package flow holds the Autoscale workflow: the autoscaler of one DIG with a capacity
// placement (docs/autoscaling.md). It observes (the DIG and its capacity placement, then
// every member cluster's signals, one activity per cluster), decides (capacity.Decide, pure,
// so every decision replays) and acts: drains or restores HPAs, records its state (which
// placement reads) and changes the DIG's clusters through the DIG's ordinary update, one at
// a time, waiting while another operation runs. Workflow code only: the activities
// (features/autoscale/work, and relocate's UpdateDIG) do the I/O.
package flow

import (
	"slices"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/temco/temco/internal/core/capacity"
	"github.com/temco/temco/internal/core/lifecycle"
)

// evaluationsPerRun bounds one run's history: the autoscaler continues as new after them.
const evaluationsPerRun = 100

type autoscaler struct {
	dig     lifecycle.Target
	name    string // of the capacity placement, as last observed
	state   lifecycle.AutoscaleState
	stopped bool
	woken   bool // an evaluation is asked for now
}

// Autoscale runs the DIG's autoscaler until its capacity placement is gone or it is
// stopped; pause and resume signals hold and restart its evaluations.
func Autoscale(ctx workflow.Context, in AutoscaleInput) error {
	a := &autoscaler{dig: in.DIG, name: in.Name, woken: true}
	if in.State != nil {
		a.state = *in.State
	}
	if err := workflow.SetQueryHandler(ctx, QueryAutoscaler, func() (lifecycle.AutoscaleState, error) {
		return a.state, nil
	}); err != nil {
		return err
	}
	interval := capacity.DefaultEvaluationInterval
	for n := 0; ; n++ {
		if !a.state.Paused && a.woken {
			a.woken = false
			view, err := a.evaluate(ctx)
			if err != nil {
				return err
			}
			if view.Name == "" {
				return nil // the capacity placement is gone, and so is the record
			}
			interval = time.Duration(view.Spec.WithDefaults().EvaluationInterval)
		}
		wasPaused := a.state.Paused
		a.wait(ctx, interval)
		if a.stopped {
			workflow.GetLogger(ctx).Info("autoscaler stopped", "dig", a.dig.String())
			return nil
		}
		if a.state.Paused != wasPaused && a.name != "" {
			if err := a.record(ctx, a.name, nil); err != nil {
				return err
			}
		}
		if n >= evaluationsPerRun || workflow.GetInfo(ctx).GetContinueAsNewSuggested() {
			return workflow.NewContinueAsNewError(ctx, Autoscale, AutoscaleInput{DIG: a.dig, Name: a.name, State: &a.state})
		}
	}
}

// wait returns after the next event: the evaluation interval passed (unless paused), or a
// signal came; it takes every signal already there, so none is lost by a continue-as-new.
func (a *autoscaler) wait(ctx workflow.Context, interval time.Duration) {
	tctx, cancel := workflow.WithCancel(ctx)
	defer cancel()
	sel := workflow.NewSelector(ctx)
	if !a.state.Paused {
		sel.AddFuture(workflow.NewTimer(tctx, interval), func(workflow.Future) { a.woken = true })
	}
	on := func(name string, then func()) {
		sel.AddReceive(workflow.GetSignalChannel(ctx, name), func(c workflow.ReceiveChannel, _ bool) {
			c.Receive(ctx, nil)
			then()
		})
	}
	on(lifecycle.SignalWake, func() { a.woken = true })
	on(lifecycle.SignalPause, func() { a.state.Paused = true })
	on(lifecycle.SignalResume, func() { a.state.Paused, a.woken = false, true })
	on(lifecycle.SignalStop, func() { a.stopped = true })
	sel.Select(ctx)
	for sel.HasPending() {
		sel.Select(ctx)
	}
}

// evaluate is one evaluation: observe, decide, act. It returns the view it started from.
func (a *autoscaler) evaluate(ctx workflow.Context) (lifecycle.CapacityView, error) {
	var view lifecycle.CapacityView
	in := lifecycle.CapacityObserveInput{Target: a.dig, Seed: len(a.state.Members) == 0}
	if err := lifecycle.ObserveCapacity.Execute(bookkeeping(ctx), in).Get(ctx, &view); err != nil {
		return view, err
	}
	now := workflow.Now(ctx).UTC()
	a.name = view.Name
	if view.Name == "" {
		return view, nil // deleted, and its record with it
	}
	if !view.Deployed && len(a.state.Members) > 0 {
		a.state.Members = nil // the next instantiate places anew
	}
	if view.Waiting != "" {
		return view, a.record(ctx, view.Name, &lifecycle.Evaluation{At: now, Waiting: view.Waiting})
	}
	if a.state.Update != "" { // an update started and not seen to end (a run reset after it began)
		if err := a.carry(ctx, view.Name, a.state.Update); err != nil {
			return view, err
		}
	}
	if len(a.state.Members) == 0 {
		for _, c := range view.Placed {
			a.state.Members = append(a.state.Members, capacity.Member{Cluster: c, State: capacity.Active, Since: now, Added: now,
				Reason: "placed by the DIG's operation"})
		}
	}
	spec := view.Spec.WithDefaults()
	signals := a.read(ctx, view, spec)
	d := capacity.Decide(spec, a.state.Members, view.Eligible, signals, now)
	a.state.Members = d.Members
	ev := &lifecycle.Evaluation{At: now, Signals: signals}
	if len(d.Transitions) > 0 {
		ev.Decision, ev.Summary = &d, d.Describe()
		workflow.GetLogger(ctx).Info("autoscaler decided", "dig", a.dig.String(), "decision", ev.Summary)
	}
	if d.Changes() {
		ev.Update = lifecycle.DrawContextID(ctx)
		a.state.Update = ev.Update
	}
	// Recorded before anything is done: placement reads the members from the record, and
	// the status says why a cluster's HPA is drained before it is.
	if err := a.record(ctx, view.Name, ev); err != nil {
		return view, err
	}
	a.drain(ctx, view, spec, d)
	if !d.Changes() {
		return view, nil
	}
	return view, a.carry(ctx, view.Name, ev.Update)
}

// read reads every member's signals at once; a member whose read failed is not read (to
// Decide, unreachable).
func (a *autoscaler) read(ctx workflow.Context, view lifecycle.CapacityView, spec capacity.Spec) map[string]capacity.Signals {
	floor := 0
	if spec.ScaleIn.Drain != nil {
		floor = spec.ScaleIn.Drain.MaxReplicas
	}
	futures := make([]lifecycle.Future[capacity.Signals], len(a.state.Members))
	for i, m := range a.state.Members {
		futures[i] = CapacitySignals.Execute(reading(ctx), CapacitySignalsInput{
			DIG: a.dig, ContextID: view.ContextID, Cluster: m.Cluster, Workloads: spec.Workloads, Floor: floor})
	}
	signals := make(map[string]capacity.Signals, len(futures))
	for i, f := range futures {
		var s capacity.Signals
		if err := f.Get(ctx, &s); err != nil {
			s = capacity.Signals{Error: lifecycle.ErrorMessage(err)}
		}
		signals[a.state.Members[i].Cluster] = s
	}
	return signals
}

// drain lowers the HPAs of every member being emptied (again at each evaluation: an update
// applies the chart's maximum back) and restores those of members scaling out again. A
// cluster that fails is tried again at the next evaluation.
func (a *autoscaler) drain(ctx workflow.Context, view lifecycle.CapacityView, spec capacity.Spec, d capacity.Decision) {
	if spec.ScaleIn.Drain == nil {
		return
	}
	in := func(cluster string) CapacitySignalsInput {
		return CapacitySignalsInput{DIG: a.dig, ContextID: view.ContextID, Cluster: cluster,
			Workloads: spec.Workloads, Floor: spec.ScaleIn.Drain.MaxReplicas}
	}
	var futures []lifecycle.Future[lifecycle.None]
	for _, m := range d.Members {
		if (m.State == capacity.ScalingIn || m.State == capacity.Evicting) && m.Unreachable.IsZero() {
			futures = append(futures, DrainCapacity.Execute(reading(ctx),
				CapacityDrainInput{CapacitySignalsInput: in(m.Cluster)}))
		}
	}
	for _, c := range d.Restore {
		futures = append(futures, DrainCapacity.Execute(reading(ctx),
			CapacityDrainInput{CapacitySignalsInput: in(c), Restore: true}))
	}
	for _, f := range futures {
		if err := f.Get(ctx, nil); err != nil {
			workflow.GetLogger(ctx).Warn("autoscaler drain", "dig", a.dig.String(), "error", lifecycle.ErrorMessage(err))
		}
	}
}

// carry runs the DIG's update to context ctxID (waiting while another operation runs; a
// retried attempt finds the update it started) and records how it ended.
func (a *autoscaler) carry(ctx workflow.Context, name, ctxID string) error {
	err := lifecycle.UpdateDIG.Execute(updating(ctx),
		lifecycle.UpdateDIGInput{DIG: a.dig, ContextID: ctxID}).Get(ctx, nil)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	outcome := "the update ended " + lifecycle.StatusInstantiated
	if err != nil {
		outcome = "the update failed: " + lifecycle.ErrorMessage(err)
	}
	a.state.Update = ""
	workflow.GetLogger(ctx).Info("autoscaler update ended", "dig", a.dig.String(), "context", ctxID, "outcome", outcome)
	for i := len(a.state.Events) - 1; i >= 0; i-- {
		if a.state.Events[i].Update == ctxID {
			a.state.Events[i].Outcome = outcome
		}
	}
	if a.state.Last != nil && a.state.Last.Update == ctxID {
		a.state.Last.Outcome = outcome
	}
	return a.record(ctx, name, nil)
}

// record stores the state with ev as its last evaluation (nil: the same), ev among the
// events when it decided something; name "" deletes the record.
func (a *autoscaler) record(ctx workflow.Context, name string, ev *lifecycle.Evaluation) error {
	if ev != nil {
		a.state.Last = ev
		if ev.Decision != nil {
			a.state.Events = append(a.state.Events, *ev)
			if n := len(a.state.Events) - AutoscaleEventsKept; n > 0 {
				a.state.Events = slices.Delete(a.state.Events, 0, n)
			}
		}
	}
	return lifecycle.RecordCapacity.Execute(bookkeeping(ctx),
		lifecycle.CapacityRecord{DIG: a.dig, Name: name, State: a.state}).Get(ctx, nil)
}

var permanent = []string{lifecycle.ErrInvalidInput, lifecycle.ErrInvalidState, lifecycle.ErrApplyFailed}

// bookkeeping is for the store-only steps: retried until the store answers.
func bookkeeping(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute,
		RetryPolicy: &temporal.RetryPolicy{MaximumInterval: 30 * time.Second, NonRetryableErrorTypes: permanent}})
}

// reading is for a cluster's signals and drain: an unreachable cluster is reported by the
// activity itself, so a failure here is a worker that died, tried once more.
func reading(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 20 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 2}})
}

// updating is for a DIG update: it waits while another operation runs, then for the
// update, heartbeating (at least every 10 s: starter.AwaitEnd's long poll).
func updating(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 24 * time.Hour, HeartbeatTimeout: 30 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{MaximumInterval: 30 * time.Second, NonRetryableErrorTypes: permanent}})
}
