package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/temco/temco/features/preview/flow"
	"github.com/temco/temco/internal/core/lifecycle"
)

// Previewer runs rollout previews (the preview feature's Starter, features/preview).
type Previewer interface {
	Preview(ctx context.Context, in flow.PreviewInput) (flow.RolloutPreview, error)
}

// Limits of a preview's answer: the clusters each stage details (its counts are whole).
const (
	previewDefaultLimit = 100
	previewMaxLimit     = 500
)

// previewWait is how long a request waits for its preview; the preview goes on after
// it, and deletes its scratch context when it ends.
var previewWait = 2 * time.Minute

// previewBody is the optional body of a preview: a rollback's revision, as a number or,
// as rollback's body has it, {"spec": {"revision": "1"}}.
type previewBody struct {
	Revision json.Number `json:"revision,omitempty"`
	Spec     struct {
		Revision json.Number `json:"revision,omitempty"`
	} `json:"spec,omitempty"`
}

const previewDescription = `Answers, before anything runs, what the DIG's next operation would change: an instantiate when the DIG is Approved or Terminated, an update when it is Instantiated, or with a body naming a revision ({"revision": 1}) a rollback to it. ` +
	`The operation's context is built as a scratch context — rendered, placed and edited by the DIG's built-in controllers as the operation would (tac's hooks are not run; a DIG naming an external controller is refused) — compared with the running revision on every cluster, and deleted: no state is recorded and nothing is written to any cluster. ` +
	`The answer lists the stages of the DIG's rollout strategy in order (one stage, "all", without one), each with its clusters in the order the stage would change them and the objects added, changed and removed on each ("Kind/namespace/name", or "Kind/name" for cluster-scoped objects; an unchanged cluster is listed with empty lists and "unchanged": true), then a stage "removed clusters" ("removedClusters": true) for the clusters the new placement drops, everything on them removed. ` +
	`Query parameter limit (0 to 500, default 100) bounds the clusters each stage details; "more" counts the others, and "counts" (and "totals") always cover every cluster. ` +
	`A DIG in another state, an operation running, a placement or chart that fails, or a strategy leaving a cluster in no stage answer 409 with the reason; a preview that did not finish within 2 minutes answers 503.`

func (s *Server) registerPreview(g *echo.Group) {
	s.route(g, opDoc{method: http.MethodPost, path: routeDIG + "/rollout-preview", code: http.StatusOK,
		summary:     "Preview what the DIG's next operation would change, cluster by cluster and stage by stage",
		description: previewDescription, body: typeOf[previewBody](), bodyOptional: true,
		response: typeOf[flow.RolloutPreview](), query: []string{"limit"}, noOwner: true}, s.preview)
}

func (s *Server) preview(c echo.Context) error {
	var limit int
	var revision int64
	dig, _, info, err := s.loadTarget(c, digRef, func(lifecycle.Target) (err error) {
		if limit, err = previewLimit(c); err != nil {
			return err
		}
		revision, err = previewRevision(c)
		return err
	})
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	// A first check here, for a quick answer; the workflow checks again as it starts.
	start, err := flow.Preview(dig, info, revision)
	var refused *flow.PreviewRefused
	switch {
	case errors.As(err, &refused) && refused.BadRevision:
		return badRequest("%s", refused.Message)
	case err != nil:
		return conflict("%v", err)
	}
	if err := s.readyFor(ctx, dig, start.Op); err != nil {
		return err
	}
	if s.Previewer == nil {
		return httpErr(http.StatusServiceUnavailable, "this temco runs no rollout previews: feature preview is switched off (--disable-features)")
	}
	wctx, cancel := context.WithTimeout(ctx, previewWait)
	defer cancel()
	in := flow.PreviewInput{DIG: dig, ContextID: lifecycle.NewContextID(), Revision: revision, Limit: limit}
	out, err := s.Previewer.Preview(wctx, in)
	var failed *flow.PreviewFailed
	switch {
	case err == nil:
		return c.JSON(http.StatusOK, out)
	case errors.As(err, &failed):
		c.Response().Header().Set("Retry-After", "1")
		return httpErr(http.StatusServiceUnavailable, "the rollout preview of %s could not finish: %s; retry", dig, failed.Message)
	case wctx.Err() != nil && ctx.Err() == nil:
		c.Response().Header().Set("Retry-After", "1")
		return httpErr(http.StatusServiceUnavailable, "the rollout preview of %s did not finish within %s; retry", dig, previewWait)
	}
	return operationErr(err)
}

func previewLimit(c echo.Context) (int, error) {
	v, ok := c.QueryParams()["limit"]
	if !ok {
		return previewDefaultLimit, nil
	}
	n, err := strconv.Atoi(v[0])
	if err != nil || n < 0 || n > previewMaxLimit || len(v) > 1 {
		return 0, badRequest("limit %q is not a number of clusters from 0 to %d", v[0], previewMaxLimit)
	}
	return n, nil
}

// previewRevision reads the optional body: 0 without a revision.
func previewRevision(c echo.Context) (int64, error) {
	if c.Request().ContentLength == 0 {
		return 0, nil
	}
	var body previewBody
	if err := readJSON(c, &body); err != nil {
		return 0, err
	}
	r := body.Revision
	if r == "" {
		r = body.Spec.Revision
	}
	if r == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(r.String(), 10, 64)
	if err != nil || n < 1 {
		return 0, badRequest("revision %q is not a revision number (1, 2, ...)", r)
	}
	return n, nil
}
