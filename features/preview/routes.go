package preview

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/temco/temco/api"
	"github.com/temco/temco/features/preview/flow"
	"github.com/temco/temco/internal/core/lifecycle"
)

// Rollout previews' part of the api: POST DIG/rollout-preview.

// Previewer runs rollout previews: the Starter, or a test's.
type Previewer interface {
	Preview(ctx context.Context, in flow.PreviewInput) (flow.RolloutPreview, error)
}

// Routes are rollout previews' routes.
type Routes struct {
	// Previewer runs the previews; nil: the feature is switched off, and a preview
	// asked for answers 503 once the request is checked.
	Previewer Previewer
	// Wait is how long a request waits for its preview (0: defaultWait); the preview
	// goes on after it, and deletes its scratch context when it ends.
	Wait time.Duration
}

// defaultWait is how long a request waits for its preview: within the api's
// WriteTimeout (routes_test).
const defaultWait = 2 * time.Minute

// Limits of a preview's answer: the clusters each stage details (its counts are whole).
const (
	DefaultLimit = 100
	maxLimit     = 500
)

// Extension is rollout previews' part of the api.
func (r Routes) Extension() api.Extension {
	if r.Wait == 0 {
		r.Wait = defaultWait
	}
	return api.Extension{Name: "preview", Mount: func(m *api.Mount) {
		h := handler{Routes: r, m: m}
		m.Route(api.Doc{Method: http.MethodPost, Path: lifecycle.RouteDIG + "/rollout-preview", Code: http.StatusOK,
			Summary:     "Preview what the DIG's next operation would change, cluster by cluster and stage by stage",
			Description: description, Body: reflect.TypeFor[body](), BodyOptional: true,
			Response: reflect.TypeFor[flow.RolloutPreview](), Query: []string{"limit"}, NoOwner: true}, h.preview)
	}}
}

// body is the optional body of a preview: a rollback's revision, as a number or, as
// rollback's body has it, {"spec": {"revision": "1"}}.
type body struct {
	Revision json.Number `json:"revision,omitempty"`
	Spec     struct {
		Revision json.Number `json:"revision,omitempty"`
	} `json:"spec,omitempty"`
}

const description = `Answers, before anything runs, what the DIG's next operation would change: an instantiate when the DIG is Approved or Terminated, an update when it is Instantiated, or with a body naming a revision ({"revision": 1}) a rollback to it. ` +
	`The operation's context is built as a scratch context — rendered, placed and edited by the DIG's built-in controllers as the operation would (tac's hooks are not run; a DIG naming an external controller is refused) — compared with the running revision on every cluster, and deleted: no state is recorded and nothing is written to any cluster. ` +
	`The answer lists the stages of the DIG's rollout strategy in order (one stage, "all", without one), each with its clusters in the order the stage would change them and the objects added, changed and removed on each ("Kind/namespace/name", or "Kind/name" for cluster-scoped objects; an unchanged cluster is listed with empty lists and "unchanged": true), then a stage "removed clusters" ("removedClusters": true) for the clusters the new placement drops, everything on them removed. ` +
	`Query parameter limit (0 to 500, default 100) bounds the clusters each stage details; "more" counts the others, and "counts" (and "totals") always cover every cluster. ` +
	`A DIG in another state, an operation running, a placement or chart that fails, or a strategy leaving a cluster in no stage answer 409 with the reason; a preview that did not finish within 2 minutes answers 503.`

type handler struct {
	Routes
	m *api.Mount
}

func (h handler) preview(c echo.Context) error {
	var limit int
	var revision int64
	dig, info, err := h.m.LoadDIG(c, func(lifecycle.Target) (err error) {
		if limit, err = limitOf(c); err != nil {
			return err
		}
		revision, err = revisionOf(c)
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
		return api.BadRequest("%s", refused.Message)
	case err != nil:
		return api.Conflict("%v", err)
	}
	if err := h.m.ReadyFor(ctx, dig, start.Op); err != nil {
		return err
	}
	if h.Previewer == nil {
		return api.Unavailable("this temco runs no rollout previews: feature preview is switched off (--disable-features)")
	}
	wctx, cancel := context.WithTimeout(ctx, h.Wait)
	defer cancel()
	in := flow.PreviewInput{DIG: dig, ContextID: lifecycle.NewContextID(), Revision: revision, Limit: limit}
	out, err := h.Previewer.Preview(wctx, in)
	var failed *flow.PreviewFailed
	switch {
	case err == nil:
		return c.JSON(http.StatusOK, out)
	case errors.As(err, &failed):
		c.Response().Header().Set("Retry-After", "1")
		return api.Unavailable("the rollout preview of %s could not finish: %s; retry", dig, failed.Message)
	case wctx.Err() != nil && ctx.Err() == nil:
		c.Response().Header().Set("Retry-After", "1")
		return api.Unavailable("the rollout preview of %s did not finish within %s; retry", dig, h.Wait)
	}
	return api.OperationErr(err)
}

func limitOf(c echo.Context) (int, error) {
	v, ok := c.QueryParams()["limit"]
	if !ok {
		return DefaultLimit, nil
	}
	n, err := strconv.Atoi(v[0])
	if err != nil || n < 0 || n > maxLimit || len(v) > 1 {
		return 0, api.BadRequest("limit %q is not a number of clusters from 0 to %d", v[0], maxLimit)
	}
	return n, nil
}

// revisionOf reads the optional body: 0 without a revision.
func revisionOf(c echo.Context) (int64, error) {
	if c.Request().ContentLength == 0 {
		return 0, nil
	}
	var b body
	if err := api.ReadJSON(c, &b); err != nil {
		return 0, err
	}
	r := b.Revision
	if r == "" {
		r = b.Spec.Revision
	}
	if r == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(r.String(), 10, 64)
	if err != nil || n < 1 {
		return 0, api.BadRequest("revision %q is not a revision number (1, 2, ...)", r)
	}
	return n, nil
}
