// Package work holds the activities of a drift check (features/drift/flow): its store steps,
// what to check and the check's summary (here), and its per-cluster steps, a batch's
// clusters and DetectDrift, which compares a cluster's live objects with those the
// context applied and corrects drift (detect.go; the comparison is features/drift/detect,
// which temco agent runs too, and an agent cluster's record is its agent's report:
// agent.go). The clusters are reached, and drift applied again, with activities/cluster's
// machinery (cluster.Access), as the operations' per-cluster activities do.
package work

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/temco/temco/activities/cluster"
	"github.com/temco/temco/features/drift/flow"
	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/digstate"
	"github.com/temco/temco/internal/core/events"
	"github.com/temco/temco/internal/core/events/feed"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/model"
	"github.com/temco/temco/internal/core/store"
)

// Activities read DIGs, check clusters for drift and write what they found.
type Activities struct {
	Store    *store.Store
	Contexts *appctx.Store
	Clusters cluster.Access // the worker's clients and cached contexts (cluster.Shared)
	Events   *feed.Emitter  // nil: none raised
}

// PlanDriftCheck reads the DIG: a check runs on its running context only when the DIG is
// Instantiated, its last operation succeeded and no operation runs (the context's status
// is Instantiated), and drift detection is still asked for (or an operator asked for this
// check). Otherwise Skip says why.
func (a *Activities) PlanDriftCheck(ctx context.Context, in flow.DriftInput) (flow.DriftPlan, error) {
	d, info, err := digstate.Load(ctx, a.Store, in.DIG.ID())
	if store.CodeOf(err) == store.ErrNotFound {
		return flow.DriftPlan{Skip: in.DIG.String() + " no longer exists"}, nil
	}
	if err != nil {
		return flow.DriftPlan{}, err
	}
	spec, err := model.Decode[model.DIGSpec](d.Body)
	if err != nil {
		return flow.DriftPlan{}, err
	}
	dd := spec.Spec.DriftDetection
	if dd == nil && !in.Asked {
		return flow.DriftPlan{Skip: "drift detection is off"}, nil
	}
	if st := info.Current(); st != lifecycle.StateInstantiated {
		return flow.DriftPlan{Skip: fmt.Sprintf("the DIG is %s, not %s", st, lifecycle.StateInstantiated)}, nil
	}
	ctxID := info.ContextID()
	header, err := a.Contexts.Get(ctx, ctxID)
	if err != nil {
		return flow.DriftPlan{}, err
	}
	if header.Status != lifecycle.StatusInstantiated {
		return flow.DriftPlan{Skip: fmt.Sprintf("its context %s is %s: an operation runs or the last one did not succeed", ctxID, header.Status)}, nil
	}
	batches, err := a.Contexts.Batches(ctx, ctxID)
	if err != nil {
		return flow.DriftPlan{}, err
	}
	return flow.DriftPlan{ContextID: ctxID, Batches: batches, Correct: in.Correct || dd != nil && dd.CorrectDrift}, nil
}

// RecordDriftCheck sums what the check's clusters recorded into the context's drift
// summary, which the DIG's status shows.
func (a *Activities) RecordDriftCheck(ctx context.Context, in flow.DriftRecordInput) error {
	sum := &appctx.DriftSummary{Context: in.ContextID, Check: in.Check.ID, Started: in.Check.Started,
		Finished: time.Now().UTC(), Correct: in.Check.Correct, Error: in.Error}
	prev, err := a.Contexts.SummarizeDriftAfter(ctx, sum)
	if err != nil {
		return err
	}
	return a.Events.Emit(ctx, driftEvents(in, prev, sum)...)
}

// driftEvents are what a check tells: drift found, unless the check before found the
// same (checks repeat every few minutes: a drift stays news once), and drift corrected.
// A retried record raises the same ids (the check's).
func driftEvents(in flow.DriftRecordInput, prev, sum *appctx.DriftSummary) []events.Event {
	var evs []events.Event
	raise := func(typ, summary string) {
		e := events.Event{ID: events.ID(in.ContextID, in.Check.ID, typ), Type: typ, Summary: summary,
			Details: map[string]any{"contextId": in.ContextID, "check": in.Check.ID, "drifted": sum.Drifted, "missing": sum.Missing,
				"corrected": sum.Corrected, "clusters": sum.DriftedClusters}}
		e.About(in.DIG.ID())
		e.Summary = strings.ReplaceAll(e.Summary, "{dig}", e.Name())
		evs = append(evs, e)
	}
	same := prev != nil && prev.Check != sum.Check && prev.Drifted == sum.Drifted && slices.Equal(prev.DriftedClusters, sum.DriftedClusters)
	if sum.Drifted > 0 && !same {
		raise(events.DriftFound, fmt.Sprintf("{dig} drifted: %d objects on %d clusters are not as applied (%d deleted)",
			sum.Drifted, len(sum.DriftedClusters), sum.Missing))
	}
	if sum.Corrected > 0 {
		raise(events.DriftCorrected, fmt.Sprintf("{dig}: %d drifted objects applied again", sum.Corrected))
	}
	return evs
}
