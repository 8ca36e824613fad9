// Package actions invokes action (and placement) controllers over an AppContext. A
// controller is either built into the worker (registered by name) or external: a worker
// on the controller's own task queue that implements the RunController activity.
package actions

import (
	"context"
	"fmt"

	"go.temporal.io/sdk/temporal"

	"github.com/temco/temco/internal/lifecycle"
)

// Controller reads and rewrites an AppContext before it is applied.
type Controller interface {
	Run(ctx context.Context, in lifecycle.ActionInput) error
}

// Activities dispatches to the built-in controllers.
type Activities struct {
	Builtin map[string]Controller
}

// RunController runs the named controller's intent over the context.
func (a *Activities) RunController(ctx context.Context, in lifecycle.ActionInput) error {
	c, ok := a.Builtin[in.Controller.Name]
	if !ok {
		return temporal.NewNonRetryableApplicationError(fmt.Sprintf(
			"controller %q is not built into temco and its registration names no taskQueue of an external controller worker",
			in.Controller.Name), lifecycle.ErrInvalidInput, nil)
	}
	return c.Run(ctx, in)
}
