package operation

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/temco/temco/internal/core/events"
	"github.com/temco/temco/internal/core/lifecycle"
)

// The events an operation raises (internal/core/events): its start and end, a rollout
// stage waiting for an approval, a rollout rolled back. Each id is its context's and what
// happened, so a retried activity raises nothing twice.

func targetEvent(targetID, typ, ctxID, summary string, details map[string]any) events.Event {
	e := events.Event{ID: events.ID(ctxID, typ), Type: typ, Details: details}
	e.About(targetID)
	e.Summary = strings.ReplaceAll(summary, "{target}", e.Name())
	details["contextId"] = ctxID
	return e
}

// started raises OperationStarted.
func (a *Activities) started(ctx context.Context, in lifecycle.BeginInput, out lifecycle.BeginResult) error {
	return a.Events.Emit(ctx, targetEvent(in.Target.ID(), events.OperationStarted, out.ContextID,
		fmt.Sprintf("%s of {target} started (revision %d)", in.Op, out.Revision),
		map[string]any{"operation": in.Op, "revision": out.Revision}))
}

// finished raises OperationSucceeded or OperationFailed (a stop fails the operation).
func (a *Activities) finished(ctx context.Context, in lifecycle.FinishInput) error {
	typ, how := events.OperationSucceeded, "succeeded"
	if in.Error != "" || in.Stopped || strings.HasSuffix(in.Status, "Failed") || strings.HasSuffix(in.Status, "Stopped") {
		typ, how = events.OperationFailed, "failed"
	}
	summary := fmt.Sprintf("the operation on {target} %s: %s", how, in.Status)
	if in.Error != "" {
		summary += ": " + in.Error
	}
	details := map[string]any{"status": in.Status}
	if in.Error != "" {
		details["error"] = in.Error
	}
	if in.Stopped {
		details["stopped"] = true
	}
	return a.Events.Emit(ctx, targetEvent(in.Target.ID(), typ, in.ContextID, summary, details))
}

// rolloutEvents raises what a rollout's recorded status shows: a stage waiting for an
// approval, the rollout rolled back on its own. The DIG is read only then.
func (a *Activities) rolloutEvents(ctx context.Context, in lifecycle.RolloutRecord) error {
	if a.Events == nil || !waits(in.Status) && in.Status.State != lifecycle.RolloutRolledBack {
		return nil
	}
	target, err := a.Contexts.DIGOf(ctx, in.ContextID)
	if err != nil {
		return err
	}
	var evs []events.Event
	for _, st := range in.Status.Stages {
		if st.State != lifecycle.StageWaitingForApproval {
			continue
		}
		when := "before"
		if slices.Contains(st.Approved, "before") {
			when = "after"
		}
		e := targetEvent(target, events.StageWaiting, in.ContextID,
			fmt.Sprintf("rollout stage %q of {target} waits for an approval (%s)", st.Name, when),
			map[string]any{"stage": st.Name, "approval": when, "clusters": st.Clusters})
		e.ID = events.ID(in.ContextID, events.StageWaiting, st.Name, when)
		evs = append(evs, e)
	}
	if in.Status.State == lifecycle.RolloutRolledBack {
		evs = append(evs, targetEvent(target, events.RolledBack, in.ContextID,
			"the rollout of {target} failed and was rolled back: "+in.Status.Cause,
			map[string]any{"cause": in.Status.Cause}))
	}
	return a.Events.Emit(ctx, evs...)
}

func waits(s lifecycle.RolloutStatus) bool {
	return slices.ContainsFunc(s.Stages, func(st lifecycle.StageStatus) bool { return st.State == lifecycle.StageWaitingForApproval })
}
