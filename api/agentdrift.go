package api

// An agent's drift report (docs/agent.md, "Drift"): temco agent compares the objects a
// revision applied on its cluster with the live ones, as a drift check compares a cluster
// temco reaches (features/drift/detect), and sends the finding when it changed. The api
// keeps the last one per revision and cluster (appctx.PutAgentDrift); the next drift check
// of the DIG records it as that cluster's finding.

import (
	"net/http"
	"slices"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/temco/temco/internal/core/agent"
	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/drift"
)

// agentDrift stores the drift an agent found of a revision on its cluster, checked: only
// objects the revision placed there, each once, bounded, and no value of a Secret's
// fields, whatever the agent sent.
func (s *Server) agentDrift(c echo.Context) error {
	key, _, err := s.namedRevision(c)
	if err != nil {
		return err
	}
	var sent agent.Drift
	if err := readJSON(c, &sent); err != nil {
		return err
	}
	ctx, ctxID := c.Request().Context(), c.Param("context")
	placed, err := s.Contexts.ClusterApps(ctx, ctxID, key)
	if err != nil {
		return err
	}
	rec, err := checkDrift(sent, placed, key)
	if err != nil {
		return err
	}
	rec.Context, rec.Cluster, rec.Checked = ctxID, key, time.Now().UTC() // when it reached temco: the agent's clock is not trusted
	if err := s.Contexts.PutAgentDrift(ctx, rec); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// checkDrift is the record of an agent's drift report against placed, the apps the
// revision placed on cluster key with their objects' statuses.
func checkDrift(sent agent.Drift, placed []*appctx.ClusterApp, key string) (*appctx.ClusterDrift, error) {
	total := 0
	for _, p := range placed {
		total += len(p.Resources)
	}
	switch {
	case sent.InSync < 0:
		return nil, badRequest("inSync %d is negative", sent.InSync)
	case sent.InSync > total-len(sent.Objects): // not InSync+len: a huge InSync would overflow
		return nil, badRequest("inSync %d and %d objects: the revision placed %d objects on cluster %q", sent.InSync, len(sent.Objects), total, key)
	case sent.Error != "" && (sent.InSync > 0 || len(sent.Objects) > 0):
		return nil, badRequest("error: a cluster that could not be compared has no objects in sync or drifted")
	}
	rec := &appctx.ClusterDrift{InSync: sent.InSync, Error: clip(sent.Error)}
	seen := map[[2]int]bool{} // app, object
	fields := 0
	for i, o := range sent.Objects {
		at := func(format string, a ...any) error {
			return badRequest("objects[%d]: "+format, append([]any{i}, a...)...)
		}
		a := slices.IndexFunc(placed, func(p *appctx.ClusterApp) bool { return p.App == o.App })
		if a < 0 {
			return nil, at("app %q is not placed on cluster %q by this revision", o.App, key)
		}
		j := slices.IndexFunc(placed[a].Resources, func(r appctx.ResourceStatus) bool { return r.Ref == o.Ref })
		if j < 0 {
			return nil, at("%s is no object of app %q on cluster %q", o.Ref, o.App, key)
		}
		if seen[[2]int{a, j}] {
			return nil, at("%s of app %q is reported twice", o.Ref, o.App)
		}
		seen[[2]int{a, j}] = true
		switch {
		case len(o.Fields) > agent.MaxDriftFields:
			return nil, at("%d fields: at most %d", len(o.Fields), agent.MaxDriftFields)
		case o.Missing && len(o.Fields) > 0:
			return nil, at("an object missing from the cluster has no fields that differ")
		case !o.Missing && len(o.Fields) == 0 && o.Error == "":
			return nil, at("neither missing, nor fields that differ, nor an error: an object in sync is counted in inSync")
		}
		if fields += len(o.Fields); fields > agent.MaxDriftReportFields {
			return nil, badRequest("more than %d fields in all", agent.MaxDriftReportFields)
		}
		out := appctx.DriftObject{App: o.App, Ref: placed[a].Resources[j].Ref, Missing: o.Missing, Error: clip(o.Error)}
		secret := o.Ref.Group == "" && o.Ref.Kind == "Secret"
		for k, f := range o.Fields {
			switch {
			case f.Path == "" || len(f.Path) > agent.MaxDriftPath:
				return nil, at("fields[%d].path: 1 to %d bytes", k, agent.MaxDriftPath)
			case len(f.Live) > agent.MaxDriftValue || len(f.Desired) > agent.MaxDriftValue:
				return nil, at("fields[%d] (%s): a value over %d bytes", k, f.Path, agent.MaxDriftValue)
			}
			if secret || f.Redacted {
				// A Secret's values are never stored: the api cannot tell which of an
				// agent's values come from its data, so none is kept; the path names it.
				f = drift.Field{Path: f.Path, Redacted: true}
			}
			out.Fields = append(out.Fields, f)
		}
		rec.Objects = append(rec.Objects, out)
	}
	return rec, nil
}
