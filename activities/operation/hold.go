package operation

import (
	"context"
	"errors"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/starter"
)

// Holds are the activities by which a migrate's target holds its origin: they work on
// another DIG's lifecycle workflow, through the starter.
type Holds struct {
	Ops *starter.Starter
}

// HoldDIG asks the origin's lifecycle workflow to run nothing while in.Holder runs, and
// returns its running context. Its refusals (busy, or a state that does not allow a
// migrate) are final and keep their 409.
func (h *Holds) HoldDIG(ctx context.Context, in lifecycle.HoldInput) (lifecycle.OpAccepted, error) {
	acc, err := h.Ops.Hold(ctx, in.DIG, in.HoldRequest)
	var r *starter.Refused
	if errors.As(err, &r) {
		return acc, temporal.NewNonRetryableApplicationError(r.Message, lifecycle.ErrBusy, nil)
	}
	var inv *starter.Invalid
	if errors.As(err, &inv) {
		return acc, temporal.NewNonRetryableApplicationError(inv.Message, lifecycle.ErrInvalidInput, nil)
	}
	return acc, err
}

// HolderStartWait is how long a hold waits for its holder to start: the target's
// lifecycle workflow starts it right after the hold, or releases the hold.
const HolderStartWait = 2 * time.Minute

// AwaitHolder returns once the workflow holding a DIG (its id) has ended, however it
// ended, heartbeating meanwhile; a holder that never starts releases the hold after
// HolderStartWait.
func (h *Holds) AwaitHolder(ctx context.Context, holder string) error {
	return h.Ops.AwaitEnd(ctx, holder, HolderStartWait, func() { activity.RecordHeartbeat(ctx, nil) })
}
