// Package actions runs the built-in intent controllers: the RunController activity gives a
// controller the view of the new context at its step and stores its edits as that step's
// layer. External controllers implement the same activity on their own task queue
// (contract.Serve) and reach the view through the API.
package actions

import (
	"context"
	"errors"
	"fmt"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/temco/temco/contract"
	"github.com/temco/temco/contract/remote"
	"github.com/temco/temco/controllers"
	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/ctxedit"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/model"
	"github.com/temco/temco/internal/core/store"
)

// Activities runs built-in controllers.
type Activities struct {
	Store    *store.Store
	Contexts *appctx.Store
	Builtin  []controllers.Builtin
	Deps     controllers.Deps
}

// RunController runs the controller registered as in.Controller over the context.
func (a *Activities) RunController(ctx context.Context, in contract.Input) (contract.Result, error) {
	b, err := a.builtin(ctx, in.Controller, in.Parent)
	if err != nil {
		return contract.Result{}, err
	}
	s, err := ctxedit.Load(ctx, a.Contexts, in.ContextID, in.Step)
	if err != nil {
		return contract.Result{}, Refused(err)
	}
	v := ctxedit.NewView(in, s, ctxedit.StoreClusters(a.Store))
	stop := remote.Heartbeat(ctx)
	err = contract.Dispatch(ctx, b.New(a.Deps), v)
	stop()
	if err != nil {
		return contract.Result{}, Refused(err)
	}
	if in.Hook != contract.HookRun {
		return contract.Result{Workflows: v.Workflows}, nil
	}
	l := &appctx.Layer{Context: in.ContextID, Step: in.Step, Attempt: activity.GetInfo(ctx).Attempt, Controller: in.Controller,
		Parent: in.Parent, Intent: in.Intent, Type: in.Type, Edits: v.Edits}
	return contract.Result{Edits: len(v.Edits), Workflows: v.Workflows}, a.Contexts.PutLayer(ctx, l)
}

// ContextControllers lists the controllers that edited a context, in the order they ran,
// for its terminate and finished hooks; a controller no longer registered is left out.
func (a *Activities) ContextControllers(ctx context.Context, ctxID string) (lifecycle.Hooked, error) {
	layers, err := a.Contexts.Layers(ctx, ctxID, -1)
	if err != nil || len(layers) == 0 {
		return lifecycle.Hooked{}, err
	}
	out := lifecycle.Hooked{Steps: layers[len(layers)-1].Step + 1}
	for _, l := range layers {
		d, err := a.Store.Get(ctx, lifecycle.RegistrationID(l.Controller, l.Parent))
		if store.CodeOf(err) == store.ErrNotFound {
			continue
		}
		if err != nil {
			return out, err
		}
		sp, err := model.Decode[model.ControllerSpec](d.Body)
		if err != nil {
			return out, err
		}
		out.Controllers = append(out.Controllers, lifecycle.Controller{Name: l.Controller, Intent: l.Intent, Type: l.Type, Priority: sp.Spec.Priority,
			TaskQueue: sp.Spec.TaskQueue, Parent: l.Parent})
	}
	return out, nil
}

// builtin finds the built-in controller a registration means.
func (a *Activities) builtin(ctx context.Context, name, parent string) (controllers.Builtin, error) {
	d, err := a.Store.Get(ctx, lifecycle.RegistrationID(name, parent))
	if err != nil {
		return controllers.Builtin{}, err
	}
	sp, err := model.Decode[model.ControllerSpec](d.Body)
	if err != nil {
		return controllers.Builtin{}, err
	}
	b, ok := controllers.Lookup(a.Builtin, parent, name, sp.Spec.Host)
	if !ok || b.FanOut {
		return b, temporal.NewNonRetryableApplicationError(fmt.Sprintf(
			"controller %q (%s) is not built into temco and its registration names no taskQueue of an external controller worker",
			name, lifecycle.RegistrationID(name, parent)), lifecycle.ErrInvalidInput, nil)
	}
	return b, nil
}

// Refused turns a controller's refusal and an edit it may not make into the operation's
// failure (not retried); other errors are returned to be retried.
func Refused(err error) error {
	var r *contract.Refusal
	var e *ctxedit.Error
	if errors.As(err, &r) || errors.As(err, &e) {
		return temporal.NewNonRetryableApplicationError(err.Error(), lifecycle.ErrInvalidInput, nil)
	}
	return err
}
