package deploy

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/rollout"
)

// rolloutRun is a staged rollout: an operation applies its context stage by stage, each
// behind its window, tasks and gates, and on a failed stage returns what it changed (or
// waits for an operator, under a manual policy). Its waits are durable timers and its
// approvals signals, so a restarted worker goes on where it was.
type rolloutRun struct {
	o      *operation
	plan   *rollout.Plan
	status lifecycle.RolloutStatus
	// changed is how many of the context's batches, from the first, have been applied to.
	changed int

	paused   bool
	awaiting string          // the approval waited for ("stage/before"), "" if none
	approved map[string]bool // approvals given
	decision string          // a manual policy's answer to a failed stage: resume or rollback
	rollback bool            // an operator asked to roll back

	version, recorded int // status changes, and how many the context has

	// Release 5 on: when the running stage's window closes (zero: no window), and whether
	// the stage is held (its deadline stopped).
	closes  time.Time
	holding bool
}

// errRollbackAsked ends a wait an operator ended by asking for a rollback.
var errRollbackAsked = temporal.NewNonRetryableApplicationError("rolled back at an operator's request", lifecycle.ErrRolloutFailed, nil)

// pollMin and pollMax bound how often a gate reads the stage's live state: it reads
// again after pollMin, then ever less often, up to a thirtieth of the stage's deadline
// (at most pollMax).
const (
	pollMin = 2 * time.Second
	pollMax = 30 * time.Second
)

// roll applies the context in the plan's stages. apply changes a range of batches and
// compensate returns a range to what the clusters had before the operation.
func (o *operation) roll(ctx workflow.Context, plan *rollout.Plan, apply, compensate batchRange) error {
	r := &rolloutRun{o: o, plan: plan, status: lifecycle.NewRolloutStatus(plan), approved: map[string]bool{}}
	o.rollout = r
	o.progress.Phase = "rollout"
	workflow.Go(ctx, r.record)
	for i, st := range plan.Stages {
		if st.Clusters == 0 {
			continue
		}
		err := r.stage(ctx, i, apply)
		if err == nil {
			continue
		}
		if ctx.Err() != nil { // stopped or cancelled: the operation says so
			return err
		}
		if r.rollback || plan.Rollback == rollout.RollbackAuto {
			return r.undo(ctx, i, err, compensate)
		}
		// Manual: hold until an operator resumes (the stage stays failed) or rolls back.
		r.setRollout(lifecycle.RolloutAwaitingDecision, lifecycle.ErrorMessage(err))
		if werr := workflow.Await(ctx, func() bool { return r.decision != "" || r.rollback }); werr != nil {
			return err
		}
		if r.rollback {
			return r.undo(ctx, i, err, compensate)
		}
		r.decision = ""
		r.setRollout(lifecycle.RolloutRunning, "")
	}
	r.setRollout(lifecycle.RolloutSucceeded, "")
	r.flush(ctx)
	return nil
}

// batchRange works on the batches [first, first+n) of a stage.
type batchRange func(ctx workflow.Context, first, n, window int) (lifecycle.BatchResult, error)

// stage runs stage i: its window, its before tasks, the apply in groups of MaxConcurrency
// clusters, the health gate, the bake and its after tasks.
func (r *rolloutRun) stage(ctx workflow.Context, i int, apply batchRange) error {
	st := r.plan.Stages[i]
	if err := r.hold(ctx); err != nil {
		return err
	}
	if r.o.release < releaseStages {
		if err := r.window(ctx, i); err != nil {
			return err
		}
	}
	if err := r.tasks(ctx, i, "before", st.Before); err != nil {
		return err
	}
	if r.o.release < releaseStages {
		if err := r.hold(ctx); err != nil { // a pause that came during the tasks
			return err
		}
	} else if err := r.goOn(ctx, i); err != nil { // the tasks may have outlasted the window
		return err
	}
	now := workflow.Now(ctx)
	deadline := now.Add(st.ProgressDeadline)
	r.setStage(i, func(s *lifecycle.StageStatus) {
		s.State, s.Started, s.Until = lifecycle.StageApplying, &now, &deadline
	})
	var gctx workflow.Context
	var expired func() bool
	var cancel workflow.CancelFunc
	if r.o.release < releaseStages {
		gctx, expired, cancel = withDeadline(ctx, st.ProgressDeadline)
		defer cancel() // its timer is cancelled when the stage ends, as those runs recorded
	} else {
		gctx, expired, cancel = r.clock(ctx, i, st.ProgressDeadline)
		r.o.hold = &batchHold{held: func() bool { return r.held(ctx) }, wait: func(c workflow.Context) error { return r.resume(c, i) }}
	}
	failures, err := r.applyAndVerify(gctx, i, apply)
	if r.o.release >= releaseStages {
		r.o.hold = nil
		cancel()
	}
	if ctx.Err() != nil {
		return err
	}
	if expired() { // count once more, on what the clusters have now
		var res lifecycle.BatchResult
		if res, err = r.read(ctx, i, "final", true); err != nil {
			return err
		}
		failures = res.ClustersNotReady + (st.Clusters - res.Clusters)
		r.counted(i, res)
	} else if err != nil {
		return err
	}
	if failures > st.MaxFailures {
		cause := fmt.Sprintf("stage %s: %d of %d clusters not Ready by its progress deadline (%s), more than its budget of %d",
			st.Name, failures, st.Clusters, st.ProgressDeadline, st.MaxFailures)
		r.failStage(ctx, i, cause)
		return temporal.NewNonRetryableApplicationError(cause, lifecycle.ErrRolloutFailed, nil)
	}
	if err := r.bake(ctx, i); err != nil {
		return err
	}
	if err := r.tasks(ctx, i, "after", st.After); err != nil {
		return err
	}
	end := workflow.Now(ctx)
	r.setStage(i, func(s *lifecycle.StageStatus) { s.State, s.Ended, s.Until = lifecycle.StageSucceeded, &end, nil })
	return nil
}

// applyAndVerify applies the stage's batches, MaxConcurrency clusters at a time, then
// reads the stage until every cluster is Ready; it returns the clusters that are not.
// Between groups it waits until at most MaxUnavailable of the changed clusters are not
// Ready. ctx ends at the progress deadline.
func (r *rolloutRun) applyAndVerify(ctx workflow.Context, i int, apply batchRange) (int, error) {
	st := r.plan.Stages[i]
	grouped := st.MaxUnavailable < st.Clusters // otherwise nothing waits between groups
	step := st.Batches
	if grouped {
		step = st.Wave
	}
	for done := 0; done < st.Batches; done += step {
		if r.rollback {
			return st.Clusters, errRollbackAsked
		}
		n := min(step, st.Batches-done)
		r.changed = max(r.changed, st.FirstBatch+done+n)
		res, err := apply(ctx, st.FirstBatch+done, n, st.Wave)
		r.setStage(i, func(s *lifecycle.StageStatus) { s.Changed += res.Clusters; s.Failed += res.ClustersFailed })
		if err != nil {
			return st.Clusters, err
		}
		if grouped && done+n < st.Batches {
			if _, err := r.verify(ctx, i, done+n, st.MaxUnavailable); err != nil {
				return st.Clusters, err
			}
		}
	}
	r.setStage(i, func(s *lifecycle.StageStatus) { s.State = lifecycle.StageVerifying })
	return r.verify(ctx, i, st.Batches, 0)
}

// verify reads the stage's first n batches until at most allowed of their clusters are
// not Ready; it returns how many are not.
func (r *rolloutRun) verify(ctx workflow.Context, i, n, allowed int) (int, error) {
	st := r.plan.Stages[i]
	poll := min(max(st.ProgressDeadline/30, pollMin), pollMax)
	for round := 0; ; round++ {
		res, err := r.readRange(ctx, i, n, fmt.Sprintf("gate%d-%d", n, round), true)
		if err != nil {
			return st.Clusters, err
		}
		r.counted(i, res)
		if res.ClustersNotReady <= allowed {
			return res.ClustersNotReady, nil
		}
		if err := r.sleep(ctx, min(pollMin<<min(round, 5), poll)); err != nil {
			return res.ClustersNotReady, err
		}
	}
}

// bake keeps the stage under watch for MinSuccessTime: a read every poll, failing the
// stage when more clusters than its budget fall out of Ready.
func (r *rolloutRun) bake(ctx workflow.Context, i int) error {
	st := r.plan.Stages[i]
	if st.MinSuccessTime <= 0 {
		return nil
	}
	end := workflow.Now(ctx).Add(st.MinSuccessTime)
	r.setStage(i, func(s *lifecycle.StageStatus) { s.State, s.Until = lifecycle.StageBaking, &end })
	poll := min(max(st.MinSuccessTime/10, pollMin), pollMax)
	for round := 0; ; round++ {
		left := end.Sub(workflow.Now(ctx))
		if err := r.sleep(ctx, min(poll, left)); err != nil {
			return err
		}
		res, err := r.read(ctx, i, fmt.Sprintf("bake%d", round), false)
		if err != nil {
			return err
		}
		r.counted(i, res)
		if res.ClustersNotReady > st.MaxFailures {
			cause := fmt.Sprintf("stage %s: %d of %d clusters fell out of Ready during its bake (%s), more than its budget of %d",
				st.Name, res.ClustersNotReady, st.Clusters, st.MinSuccessTime, st.MaxFailures)
			r.failStage(ctx, i, cause)
			return temporal.NewNonRetryableApplicationError(cause, lifecycle.ErrRolloutFailed, nil)
		}
		if !workflow.Now(ctx).Before(end) {
			return nil
		}
	}
}

// read reads the live state of the whole stage.
func (r *rolloutRun) read(ctx workflow.Context, i int, round string, gate bool) (lifecycle.BatchResult, error) {
	return r.readRange(ctx, i, r.plan.Stages[i].Batches, round, gate)
}

// readRange reads the live state of the stage's first n batches (never a stored status:
// a gate judges what the clusters say now). From release 12 a gate does not read again
// what is Ready once applied (BatchInput.Gate); a bake, watching for objects that fall
// out of Ready, reads everything.
func (r *rolloutRun) readRange(ctx workflow.Context, i, n int, round string, gate bool) (lifecycle.BatchResult, error) {
	st := r.plan.Stages[i]
	in := lifecycle.BatchInput{ContextID: r.o.in.ContextID, Tolerant: true, Gate: gate && r.o.release >= releaseGateApplied}
	f := fan{kind: readBatch, in: in,
		batches: n, offset: st.FirstBatch, prefix: fmt.Sprintf("stage%d-read-%s", i, round), gates: r.o.gates}
	return f.run(ctx, sum)
}

// counted records a read's counts in the stage's status.
func (r *rolloutRun) counted(i int, res lifecycle.BatchResult) {
	r.setStage(i, func(s *lifecycle.StageStatus) {
		s.NotReady = res.ClustersNotReady + (s.Clusters - res.Clusters)
		s.Ready = s.Clusters - s.NotReady
	})
}

// hold waits while the rollout is paused. Before release 5 a pause held only the next
// stage; since, it holds a started stage's next batches too (held, resume).
func (r *rolloutRun) hold(ctx workflow.Context) error {
	if r.rollback {
		return errRollbackAsked
	}
	if !r.paused {
		return nil
	}
	err := workflow.Await(ctx, func() bool { return !r.paused || r.rollback })
	if err == nil && r.rollback {
		return errRollbackAsked
	}
	return err
}

// window waits until the stage's maintenance window is open.
func (r *rolloutRun) window(ctx workflow.Context, i int) error {
	w := r.plan.Stages[i].Window
	r.closes = time.Time{}
	if w == nil {
		return nil
	}
	for {
		var open rollout.Opening
		if err := lifecycle.RolloutWindow.ExecuteLocal(recording(ctx),
			lifecycle.WindowInput{Window: *w, Now: workflow.Now(ctx)}).Get(ctx, &open); err != nil {
			return err
		}
		if open.Open {
			r.closes = open.Closes
			return nil
		}
		r.setStage(i, func(s *lifecycle.StageStatus) { s.State, s.Until = lifecycle.StageWaitingForWindow, &open.Opens })
		if err := r.sleep(ctx, open.Opens.Sub(workflow.Now(ctx))); err != nil {
			return err
		}
	}
}

// goOn waits until stage i may apply: not paused, its window open (checked once the
// pause is over: a long pause may outlast the window).
func (r *rolloutRun) goOn(ctx workflow.Context, i int) error {
	for {
		if err := r.hold(ctx); err != nil {
			return err
		}
		if err := r.window(ctx, i); err != nil {
			return err
		}
		if !r.paused { // a pause that came while the window was checked
			return nil
		}
	}
}

// held says whether a started stage's next batches wait: the rollout paused, or the
// stage's window closed since it opened. A rollback is never held.
func (r *rolloutRun) held(ctx workflow.Context) bool {
	if r.rollback {
		return false
	}
	return r.paused || (!r.closes.IsZero() && !workflow.Now(ctx).Before(r.closes))
}

// resume waits until a held stage may go on, its progress deadline stopped meanwhile
// (holding), then gives the stage back its state.
func (r *rolloutRun) resume(ctx workflow.Context, i int) error {
	state := r.status.Stages[i].State
	r.holding = true
	defer func() { r.holding = false }()
	r.setStage(i, func(s *lifecycle.StageStatus) { s.Until = nil }) // the deadline is stopped
	if err := r.goOn(ctx, i); err != nil {
		return err
	}
	r.setStage(i, func(s *lifecycle.StageStatus) { s.State = state })
	return nil
}

// clock is ctx cancelled once stage i has been applying for d, the time it was held
// (resume) not counted; expired tells whether that is why. It keeps the stage's until
// on its deadline.
func (r *rolloutRun) clock(ctx workflow.Context, i int, d time.Duration) (workflow.Context, func() bool, workflow.CancelFunc) {
	dctx, cancel := workflow.WithCancel(ctx)
	expired := false
	workflow.Go(dctx, func(c workflow.Context) {
		for left, held := d, false; ; held = true {
			if workflow.Await(c, func() bool { return !r.holding }) != nil {
				return
			}
			start := workflow.Now(c)
			if held { // the deadline moved
				until := start.Add(left)
				r.setStage(i, func(s *lifecycle.StageStatus) { s.Until = &until })
			}
			tctx, stop := workflow.WithCancel(c)
			fired := false
			workflow.Go(tctx, func(t workflow.Context) { fired = workflow.NewTimer(t, left).Get(t, nil) == nil })
			err := workflow.Await(c, func() bool { return fired || r.holding })
			stop()
			if err != nil {
				return
			}
			if fired {
				expired = true
				cancel()
				return
			}
			left -= workflow.Now(c).Sub(start)
		}
	})
	return dctx, func() bool { return expired }, cancel
}

// tasks runs a stage's before or after tasks in order.
func (r *rolloutRun) tasks(ctx workflow.Context, i int, when string, tasks []rollout.Task) error {
	st := r.plan.Stages[i]
	for _, t := range tasks {
		switch t.Type {
		case rollout.TaskWait:
			until := workflow.Now(ctx).Add(time.Duration(t.Duration))
			r.setStage(i, func(s *lifecycle.StageStatus) { s.State, s.Until = lifecycle.StageWaiting, &until })
			if err := r.sleep(ctx, time.Duration(t.Duration)); err != nil {
				return err
			}
		case rollout.TaskApproval:
			key := st.Name + "/" + when
			if r.approved[key] {
				continue
			}
			r.awaiting = key
			r.setStage(i, func(s *lifecycle.StageStatus) { s.State, s.Until = lifecycle.StageWaitingForApproval, nil })
			err := workflow.Await(ctx, func() bool { return r.approved[key] || r.rollback })
			r.awaiting = ""
			if err != nil {
				return err
			}
			if r.rollback {
				return errRollbackAsked
			}
			r.setStage(i, func(s *lifecycle.StageStatus) { s.Approved = append(s.Approved, when) })
		}
	}
	return nil
}

// sleep is a durable timer that an operator's rollback ends early.
func (r *rolloutRun) sleep(ctx workflow.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	tctx, cancel := workflow.WithCancel(ctx)
	defer cancel()
	fired := false
	workflow.Go(tctx, func(ctx workflow.Context) {
		_ = workflow.NewTimer(ctx, d).Get(ctx, nil)
		fired = true
	})
	if err := workflow.Await(ctx, func() bool { return fired || r.rollback }); err != nil {
		return err
	}
	if r.rollback {
		return errRollbackAsked
	}
	return nil
}

// undo returns the clusters of the stages that ran, the failed one included, to what
// they had, and fails the operation with the stage's cause.
func (r *rolloutRun) undo(ctx workflow.Context, failed int, cause error, compensate batchRange) error {
	r.setRollout(lifecycle.RolloutRollingBack, lifecycle.ErrorMessage(cause))
	r.o.progress.Phase = "rollback"
	res, err := compensate(ctx, 0, r.changed, BatchWindow)
	if err != nil {
		r.setRollout(lifecycle.RolloutFailed, lifecycle.ErrorMessage(cause))
		r.flush(ctx)
		return fmt.Errorf("%s; returning the changed clusters failed: %w", lifecycle.ErrorMessage(cause), err)
	}
	for i := 0; i <= failed; i++ {
		if r.plan.Stages[i].Clusters > 0 {
			r.setStage(i, func(s *lifecycle.StageStatus) { s.State = lifecycle.StageRolledBack })
		}
	}
	r.o.rolledBack = true
	msg := fmt.Sprintf("%s; rolled back on the %d clusters it had changed", lifecycle.ErrorMessage(cause), res.Clusters)
	r.setRollout(lifecycle.RolloutRolledBack, msg)
	r.flush(ctx)
	return temporal.NewNonRetryableApplicationError(msg, lifecycle.ErrRolloutFailed, nil)
}

func (r *rolloutRun) failStage(ctx workflow.Context, i int, cause string) {
	end := workflow.Now(ctx)
	r.setStage(i, func(s *lifecycle.StageStatus) {
		s.State, s.Message, s.Ended, s.Until = lifecycle.StageFailed, cause, &end, nil
	})
}

func (r *rolloutRun) setStage(i int, change func(*lifecycle.StageStatus)) {
	change(&r.status.Stages[i])
	r.version++
}

func (r *rolloutRun) setRollout(state, cause string) {
	r.status.State, r.status.Cause = state, cause
	r.version++
}

// record writes each change of the status to the context, the latest first when several
// came together; the status API reads it there, also while no worker runs.
func (r *rolloutRun) record(ctx workflow.Context) {
	for {
		if err := workflow.Await(ctx, func() bool { return r.recorded < r.version }); err != nil {
			return
		}
		v := r.version
		in := lifecycle.RolloutRecord{ContextID: r.o.in.ContextID, Status: r.snapshot()}
		if err := lifecycle.RecordRollout.ExecuteLocal(recording(ctx), in).Get(ctx, nil); err != nil {
			return
		}
		r.recorded = v
	}
}

// flush waits until the status is recorded (the operation's finish records it anyway:
// a store that keeps refusing must not hold the operation).
func (r *rolloutRun) flush(ctx workflow.Context) {
	_, _ = workflow.AwaitWithTimeout(ctx, time.Minute, func() bool { return r.recorded >= r.version })
}

// snapshot is a copy of the status safe to hand out.
func (r *rolloutRun) snapshot() lifecycle.RolloutStatus {
	s := r.status
	s.Stages = make([]lifecycle.StageStatus, len(r.status.Stages))
	copy(s.Stages, r.status.Stages)
	if r.paused && s.State == lifecycle.RolloutRunning {
		s.State = lifecycle.RolloutPaused
	}
	return s
}

// withDeadline is ctx cancelled after d; expired tells whether that is why.
func withDeadline(ctx workflow.Context, d time.Duration) (workflow.Context, func() bool, workflow.CancelFunc) {
	dctx, cancel := workflow.WithCancel(ctx)
	expired := false
	workflow.Go(dctx, func(c workflow.Context) {
		if workflow.NewTimer(c, d).Get(c, nil) == nil {
			expired = true
			cancel()
		}
	})
	return dctx, func() bool { return expired }, cancel
}
