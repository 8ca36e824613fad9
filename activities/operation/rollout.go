package operation

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.temporal.io/sdk/temporal"

	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/rollout"
)

// RecordRollout stores where a rollout stands in its context, for the status API.
func (a *Activities) RecordRollout(ctx context.Context, in lifecycle.RolloutRecord) error {
	if err := a.Contexts.Set(ctx, in.ContextID, bson.D{{Key: "rollout", Value: in.Status}}); err != nil {
		return err
	}
	return a.rolloutEvents(ctx, in)
}

// RolloutWindow tells whether a stage's maintenance window is open: it reads the time
// zone's rules, which workflow code may not.
func (a *Activities) RolloutWindow(_ context.Context, in lifecycle.WindowInput) (rollout.Opening, error) {
	o, err := in.Window.At(in.Now)
	if err != nil {
		return o, temporal.NewNonRetryableApplicationError(err.Error(), lifecycle.ErrInvalidInput, nil)
	}
	return o, nil
}
