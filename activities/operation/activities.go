// Package operation records the beginning and end of DIG lifecycle operations: the
// state transition in the DIG's history and the AppContext's status.
package operation

import (
	"context"
	"fmt"
	"slices"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/temco/temco/internal/appctx"
	"github.com/temco/temco/internal/digstate"
	"github.com/temco/temco/internal/lifecycle"
	"github.com/temco/temco/internal/store"
)

// Activities record operations.
type Activities struct {
	Store    *store.Store
	Contexts *appctx.Store
}

// CanInstantiate and CanTerminate list the DIG states each operation starts from.
var (
	CanInstantiate = []string{lifecycle.StateApproved, lifecycle.StateTerminated}
	CanTerminate   = []string{lifecycle.StateInstantiated, lifecycle.StateInstantiateStopped, lifecycle.StateTerminateStopped}
)

// InvalidState is the error for a transition the DIG's state does not allow.
func InvalidState(dig lifecycle.DIGRef, op, state string, allowed []string) error {
	return temporal.NewNonRetryableApplicationError(
		fmt.Sprintf("%s is %s: %s needs one of %v", dig, state, op, allowed), lifecycle.ErrInvalidState, nil)
}

// BeginOperation checks the transition, records it in the DIG's history and prepares
// the context: a new one for instantiate, the current one for terminate. Retrying it
// after a partial success finds its own record and returns the same result.
func (a *Activities) BeginOperation(ctx context.Context, in lifecycle.BeginInput) (lifecycle.BeginResult, error) {
	switch in.Op {
	case lifecycle.OpInstantiate:
		return a.beginInstantiate(ctx, in)
	case lifecycle.OpTerminate:
		return a.beginTerminate(ctx, in)
	}
	return lifecycle.BeginResult{}, temporal.NewNonRetryableApplicationError("unknown operation "+in.Op, lifecycle.ErrInvalidInput, nil)
}

func (a *Activities) beginInstantiate(ctx context.Context, in lifecycle.BeginInput) (lifecycle.BeginResult, error) {
	err := a.Contexts.Create(ctx, &appctx.Context{ID: in.ContextID, DIG: in.DIG.ID(), Instance: in.ContextID,
		Revision: 1, Status: lifecycle.StatusInstantiating, Namespace: "default"})
	if err != nil {
		return lifecycle.BeginResult{}, err
	}
	_, err = digstate.Change(ctx, a.Store, in.DIG.ID(), func(info lifecycle.StateInfo) (*lifecycle.Action, error) {
		if info.ContextID() == in.ContextID {
			return nil, nil // recorded by an earlier attempt
		}
		if cur := info.Current(); !slices.Contains(CanInstantiate, cur) {
			return nil, InvalidState(in.DIG, in.Op, cur, CanInstantiate)
		}
		return &lifecycle.Action{State: lifecycle.StateInstantiated, ContextID: in.ContextID, Revision: 1}, nil
	})
	if err != nil {
		_ = a.Contexts.DeleteContext(context.WithoutCancel(ctx), in.ContextID)
		return lifecycle.BeginResult{}, err
	}
	return lifecycle.BeginResult{ContextID: in.ContextID, Revision: 1}, nil
}

func (a *Activities) beginTerminate(ctx context.Context, in lifecycle.BeginInput) (lifecycle.BeginResult, error) {
	var res lifecycle.BeginResult
	_, err := digstate.Change(ctx, a.Store, in.DIG.ID(), func(info lifecycle.StateInfo) (*lifecycle.Action, error) {
		last := info.Actions[len(info.Actions)-1]
		res = lifecycle.BeginResult{ContextID: last.ContextID, Revision: last.Revision}
		if last.State == lifecycle.StateTerminated {
			if c, err := a.Contexts.Get(ctx, last.ContextID); err == nil && c.Status == lifecycle.StatusTerminating {
				return nil, nil // recorded by an earlier attempt
			}
		}
		if !slices.Contains(CanTerminate, last.State) {
			return nil, InvalidState(in.DIG, in.Op, last.State, CanTerminate)
		}
		return &lifecycle.Action{State: lifecycle.StateTerminated, ContextID: last.ContextID, Revision: last.Revision}, nil
	})
	if err != nil {
		return res, err
	}
	return res, a.Contexts.SetStatus(ctx, res.ContextID, lifecycle.StatusTerminating, "")
}

// FinishOperation records the context's final status. A stopped operation also records
// the stopped state in the DIG's history, and its retrying objects become Failed.
func (a *Activities) FinishOperation(ctx context.Context, in lifecycle.FinishInput) error {
	if in.Stopped {
		stopped := lifecycle.StateInstantiateStopped
		if in.Status == lifecycle.StatusTerminateStopped {
			stopped = lifecycle.StateTerminateStopped
		}
		_, err := digstate.Change(ctx, a.Store, in.DIG.ID(), func(info lifecycle.StateInfo) (*lifecycle.Action, error) {
			last := info.Actions[len(info.Actions)-1]
			if last.State == stopped && last.ContextID == in.ContextID {
				return nil, nil
			}
			return &lifecycle.Action{State: stopped, ContextID: in.ContextID, Revision: last.Revision}, nil
		})
		if err != nil {
			return err
		}
		if err := a.failRetrying(ctx, in.ContextID); err != nil {
			return err
		}
	}
	return a.Contexts.SetStatus(ctx, in.ContextID, in.Status, in.Error)
}

// failRetrying turns Retrying objects into Failed once nobody retries them any more.
func (a *Activities) failRetrying(ctx context.Context, ctxID string) error {
	placements, err := a.Contexts.Placements(ctx, ctxID, appctx.Filter{})
	if err != nil {
		return err
	}
	touched := map[string]bool{}
	for _, p := range placements {
		for i := range p.Resources {
			if r := &p.Resources[i]; r.Status == lifecycle.ResRetrying {
				r.Status, r.Error, r.Updated = lifecycle.ResFailed, "stopped while retrying: "+r.Error, time.Now().UTC()
				touched[p.Cluster] = true
			}
		}
	}
	// A cluster's document is written whole: pass every app of the touched clusters.
	var changed []*appctx.ClusterApp
	for _, p := range placements {
		if touched[p.Cluster] {
			changed = append(changed, p)
		}
	}
	return a.Contexts.SaveClusters(ctx, ctxID, changed)
}
