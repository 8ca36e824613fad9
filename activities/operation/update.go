package operation

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/digstate"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/store"
	"github.com/temco/temco/starter"
)

// Updates update DIGs for the workflows that change one (relocate, the autoscaler, the
// cluster inventories): in the core, so that each works whichever features are on.
type Updates struct {
	Store    *store.Store
	Contexts *appctx.Store
	Ops      *starter.Starter
}

func permanent(typ, format string, args ...any) error {
	return temporal.NewNonRetryableApplicationError(fmt.Sprintf(format, args...), typ, nil)
}

// UpdateDIG updates the DIG to the new context in.ContextID through its lifecycle
// workflow and waits until that update ended; an update that did not end Instantiated is
// a permanent failure. While another operation runs on the DIG it is retried; a retried
// attempt finds the update an earlier one started.
func (u *Updates) UpdateDIG(ctx context.Context, in lifecycle.UpdateDIGInput) error {
	_, info, err := digstate.Load(ctx, u.Store, in.DIG.ID())
	if err != nil {
		return err
	}
	if !slices.ContainsFunc(info.Actions, func(act lifecycle.Action) bool { return act.ContextID == in.ContextID }) {
		if cur := info.Current(); cur != lifecycle.StateInstantiated {
			return permanent(lifecycle.ErrInvalidState, "%s is %s: an update of it by a workflow (relocate, the autoscaler, an inventory) needs it Instantiated", in.DIG, cur)
		}
		_, err := u.Ops.Operate(ctx, in.DIG, lifecycle.OpRequest{Op: lifecycle.OpUpdate, ContextID: in.ContextID,
			Requested: time.Now().UTC().Format(time.RFC3339Nano)})
		var inv *starter.Invalid
		if errors.As(err, &inv) {
			return permanent(lifecycle.ErrInvalidInput, "%s", inv.Message)
		}
		if err != nil {
			return fmt.Errorf("update %s: %w", in.DIG, err) // busy: tried again later
		}
	}
	id := in.DIG.OpWorkflowID(lifecycle.OpUpdate, in.ContextID)
	if err := u.Ops.AwaitEnd(ctx, id, time.Minute, func() { activity.RecordHeartbeat(ctx, nil) }); err != nil {
		return err
	}
	c, err := u.Contexts.Get(ctx, in.ContextID)
	if err != nil {
		return err
	}
	if c.Status != lifecycle.StatusInstantiated {
		return permanent(lifecycle.ErrApplyFailed, "the update of %s to context %s ended %s: %s", in.DIG, in.ContextID, c.Status, c.Error)
	}
	return nil
}
