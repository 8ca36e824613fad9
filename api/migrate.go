package api

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/temco/temco/internal/core/digstate"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/model"
	"github.com/temco/temco/internal/core/store"
)

// migrateBody is EMCO's migrate request: the target is a DIG of another version of the
// same composite app.
type migrateBody struct {
	Metadata struct {
		Description string `json:"description,omitempty"`
	} `json:"metadata"`
	Spec struct {
		TargetCompositeAppVersion   string `json:"targetCompositeAppVersion"`
		TargetDeploymentIntentGroup string `json:"targetDeploymentIntentGroup"`
	} `json:"spec"`
}

func (s *Server) registerMigrate(g *echo.Group) {
	s.route(g, opDoc{method: http.MethodPost, path: routeDIG + "/migrate",
		summary: "Move a DIG's running deployment to a DIG of another version of its composite app",
		body:    typeOf[migrateBody](), code: http.StatusAccepted, response: typeOf[opAccepted]()}, s.migrate)
}

// migrate checks both DIGs before anything is built (EMCO renders the target's context
// first, and leaves it behind when the target turns out not to be approved), then asks
// the target's lifecycle workflow to run the migrate: it answers as instantiate does,
// with the target's new context and the migrate's workflow.
func (s *Server) migrate(c echo.Context) error {
	var target lifecycle.Target
	origin, _, from, err := s.loadTarget(c, digRef, func(origin lifecycle.Target) (err error) {
		target, err = readMigrateTarget(c, origin)
		return err
	})
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	_, to, err := digstate.Load(ctx, s.Store, target.ID())
	if store.CodeOf(err) == store.ErrNotFound {
		return httpErr(http.StatusNotFound, "the migrate's target, %s, does not exist", target)
	}
	if err != nil {
		return fromStore(err)
	}
	if err := s.mayChange(ctx, target.ID()); err != nil { // the target's lifecycle is operated too
		return err
	}
	if _, err := lifecycle.DIGs.Machine.Start(origin.String(), lifecycle.OpMigrate, from.Current()); err != nil {
		return conflict("%v", err)
	}
	if _, err := lifecycle.DIGs.Machine.Start(target.String(), lifecycle.OpMigrateInto, to.Current()); err != nil {
		return conflict("%v", err)
	}
	if err := s.readyFor(ctx, target, lifecycle.OpInstantiate); err != nil {
		return err
	}
	acc, err := s.Ops.Migrate(ctx, target, lifecycle.MigrateRequest{Origin: origin, ContextID: lifecycle.NewContextID(),
		Requested: time.Now().UTC().Format(time.RFC3339Nano)})
	if err != nil {
		return operationErr(err)
	}
	s.Log.Info("operation started", "request_id", c.Response().Header().Get(echo.HeaderXRequestID),
		"target", target.ID(), "origin", origin.ID(), "op", lifecycle.OpMigrate, "workflow_id", acc.WorkflowID, "context", acc.ContextID)
	return c.JSON(http.StatusAccepted, acc)
}

// readMigrateTarget reads and checks the body (400 naming the field) and returns the
// target DIG.
func readMigrateTarget(c echo.Context, origin lifecycle.Target) (lifecycle.Target, error) {
	var body migrateBody
	if err := readJSON(c, &body); err != nil {
		return lifecycle.Target{}, err
	}
	if len(body.Metadata.Description) > 1024 {
		return lifecycle.Target{}, badRequest("metadata.description is longer than 1024 characters")
	}
	for _, f := range []struct{ field, value string }{
		{"spec.targetCompositeAppVersion", body.Spec.TargetCompositeAppVersion},
		{"spec.targetDeploymentIntentGroup", body.Spec.TargetDeploymentIntentGroup},
	} {
		if err := model.ValidateName(f.field, f.value); err != nil {
			return lifecycle.Target{}, badRequest("%v", err)
		}
	}
	target := origin
	target.Version, target.DIG = body.Spec.TargetCompositeAppVersion, body.Spec.TargetDeploymentIntentGroup
	if target == origin {
		return lifecycle.Target{}, badRequest("the target of a migrate is the DIG itself: name another DIG (usually of another version of the composite app)")
	}
	return target, nil
}
