package operation

import (
	"context"
	"fmt"

	"go.temporal.io/sdk/temporal"
	"golang.org/x/sync/errgroup"

	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/digstate"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/store"
)

// A migrate records its start on the target (BeginMigrate: its new context, Instantiated)
// and its end on both (FinishMigrate); the origin is checked when its lifecycle workflow
// agrees to hold still (BeginHold), and again by BeginMigrate.

// BeginHold checks that the origin of a migrate may migrate and returns its running
// context. It records nothing: the origin changes only once the migrate is done.
func (a *Activities) BeginHold(ctx context.Context, in lifecycle.BeginInput) (lifecycle.BeginResult, error) {
	_, info, err := a.origin(ctx, in.Target)
	if err != nil {
		return lifecycle.BeginResult{}, err
	}
	return lifecycle.BeginResult{ContextID: info.ContextID(), Revision: last(info).Revision}, nil
}

// origin loads the origin of a migrate and checks that its state allows it.
func (a *Activities) origin(ctx context.Context, dig lifecycle.Target) (*store.Doc, lifecycle.StateInfo, error) {
	d, info, err := digstate.Load(ctx, a.Store, dig.ID())
	if store.CodeOf(err) == store.ErrNotFound {
		return nil, info, temporal.NewNonRetryableApplicationError(fmt.Sprintf("%s no longer exists", dig), lifecycle.ErrInvalidState, nil)
	}
	if err != nil {
		return nil, info, err
	}
	if _, err := start(dig, lifecycle.OpMigrate, info.Current()); err != nil {
		return nil, info, err
	}
	return d, info, nil
}

// BeginMigrate checks that the origin still runs in.OriginContext and that the target
// may take it over, creates the target's context for the origin's instance (so that its
// objects carry the same deployment-id labels and equal ones are left alone) in the
// target's logical cloud, and records the target Instantiated with it, as revision 1.
// Retrying it after a partial success finds its own record and returns the same result.
func (a *Activities) BeginMigrate(ctx context.Context, in lifecycle.MigrateBegin) (lifecycle.BeginResult, error) {
	return a.snapshotted(ctx, lifecycle.BeginInput{Target: in.DIG, Op: lifecycle.OpMigrate},
		func(ctx context.Context, _ lifecycle.BeginInput) (lifecycle.BeginResult, error) {
			return a.beginMigrate(ctx, in)
		})
}

func (a *Activities) beginMigrate(ctx context.Context, in lifecycle.MigrateBegin) (lifecycle.BeginResult, error) {
	res := lifecycle.BeginResult{ContextID: in.ContextID, Revision: 1, Previous: in.OriginContext}
	target, err := a.Store.Get(ctx, in.DIG.ID())
	if store.CodeOf(err) == store.ErrNotFound {
		return res, temporal.NewNonRetryableApplicationError(fmt.Sprintf("%s no longer exists", in.DIG), lifecycle.ErrInvalidState, nil)
	}
	if err != nil {
		return res, err
	}
	if info, err := digstate.Parse(target); err == nil && info.ContextID() == in.ContextID {
		return res, nil // recorded by an earlier attempt
	}
	_, origin, err := a.origin(ctx, in.Origin)
	if err != nil {
		return res, err
	}
	if origin.ContextID() != in.OriginContext {
		return res, temporal.NewNonRetryableApplicationError(fmt.Sprintf("%s now runs context %s, not %s: migrate it again",
			in.Origin, origin.ContextID(), in.OriginContext), lifecycle.ErrInvalidState, nil)
	}
	from, err := a.Contexts.Get(ctx, in.OriginContext)
	if err != nil {
		return res, err
	}
	namespace, creds, ready, err := a.scope(ctx, in.DIG, target)
	if err != nil {
		return res, err
	}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		return a.Contexts.Create(gctx, &appctx.Context{ID: in.ContextID, DIG: in.DIG.ID(), Instance: from.Instance,
			Revision: 1, Status: lifecycle.StatusInstantiating, Namespace: namespace, Credentials: creds})
	})
	g.Go(func() error { return ready(gctx) })
	if err = g.Wait(); err != nil {
		_ = a.Contexts.DeleteContext(context.WithoutCancel(ctx), in.ContextID)
		return res, err
	}
	_, err = digstate.ChangeFrom(ctx, a.Store, in.DIG.ID(), target, func(info lifecycle.StateInfo) ([]lifecycle.Action, error) {
		if info.ContextID() == in.ContextID {
			return nil, nil
		}
		t, err := start(in.DIG, lifecycle.OpMigrateInto, info.Current())
		if err != nil {
			return nil, err
		}
		return []lifecycle.Action{{State: t.To, ContextID: in.ContextID, Revision: 1}}, nil
	})
	if err != nil {
		_ = a.Contexts.DeleteContext(context.WithoutCancel(ctx), in.ContextID)
	}
	return res, err
}

// FinishMigrate records how a migrate ended (lifecycle.MigrateDone, MigrateRolledBack or
// MigrateStopped) in both DIGs' histories and contexts. Each write is skipped when an
// earlier attempt made it.
func (a *Activities) FinishMigrate(ctx context.Context, in lifecycle.MigrateFinish) error {
	if len(in.Hooks) > 0 {
		if err := a.Contexts.SetHooks(ctx, in.ContextID, in.Hooks); err != nil {
			return err
		}
	}
	switch in.Outcome {
	case lifecycle.MigrateDone:
		_, err := digstate.Change(ctx, a.Store, in.Origin.ID(), func(info lifecycle.StateInfo) ([]lifecycle.Action, error) {
			cur := last(info)
			if cur.State == lifecycle.StateMigrated && cur.ContextID == in.OriginContext {
				return nil, nil
			}
			t, err := start(in.Origin, lifecycle.OpMigrate, cur.State)
			if err != nil {
				return nil, err
			}
			return []lifecycle.Action{{State: t.To, ContextID: in.OriginContext, Revision: cur.Revision}}, nil
		})
		if err != nil {
			return err
		}
		if err := a.Contexts.SetStatus(ctx, in.OriginContext, lifecycle.StatusUpdated, ""); err != nil {
			return err
		}
		return a.Contexts.SetStatus(ctx, in.ContextID, lifecycle.StatusInstantiated, "")
	case lifecycle.MigrateRolledBack, lifecycle.MigrateStopped:
		state, status := lifecycle.StateApproved, lifecycle.StatusInstantiateFailed
		if in.Outcome == lifecycle.MigrateStopped {
			state, status = lifecycle.StateInstantiateStopped, lifecycle.StatusInstantiateStopped
		}
		_, err := digstate.Change(ctx, a.Store, in.DIG.ID(), func(info lifecycle.StateInfo) ([]lifecycle.Action, error) {
			if cur := last(info); cur.State != lifecycle.StateInstantiated || cur.ContextID != in.ContextID {
				return nil, nil // recorded by an earlier attempt
			}
			act := lifecycle.Action{State: state}
			if state == lifecycle.StateInstantiateStopped {
				act.ContextID, act.Revision = in.ContextID, 1
			}
			return []lifecycle.Action{act}, nil
		})
		if err != nil {
			return err
		}
		if err := a.failRetrying(ctx, in.ContextID); err != nil { // what a stop left Retrying
			return err
		}
		return a.Contexts.SetStatus(ctx, in.ContextID, status, in.Error)
	}
	return temporal.NewNonRetryableApplicationError("unknown outcome of a migrate: "+in.Outcome, lifecycle.ErrInvalidInput, nil)
}
