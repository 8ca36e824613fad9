package api

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/temco/temco/internal/adapters/archive"
	"github.com/temco/temco/internal/adapters/egress"
	"github.com/temco/temco/internal/adapters/profile"
	"github.com/temco/temco/internal/core/artifact"
	"github.com/temco/temco/internal/core/digstate"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/model"
	"github.com/temco/temco/internal/core/store"
)

// Routes of the orchestrator (EMCO's CA and DIG abbreviations).
const (
	routeCA  = "/projects/:project/composite-apps/:compositeApp/:version"
	routeDIG = lifecycle.RouteDIG
	routeGPI = routeDIG + "/generic-placement-intents/:genericPlacementIntent"
)

func (s *Server) registerOrchestrator(g *echo.Group) {
	register(g, s, kind[model.Empty]{name: model.KindProject, coll: "/projects", item: "/projects/:project"})
	register(g, s, kind[model.CompositeAppSpec]{name: model.KindCompositeApp,
		coll: "/projects/:project/composite-apps", item: routeCA,
		version: func(sp *model.CompositeAppSpec) string { return sp.Version }})
	register(g, s, kind[model.AppSpec]{name: model.KindApp, coll: routeCA + "/apps", item: routeCA + "/apps/:app", check: checkApp,
		file: &fileSpec[model.AppSpec]{required: true, attach: attachChart, download: true, orJSON: true}})
	register(g, s, kind[model.AppDependencySpec]{name: model.KindAppDependency, check: checkDependency,
		coll: routeCA + "/apps/:app/dependency", item: routeCA + "/apps/:app/dependency/:dependency"})
	register(g, s, kind[model.Empty]{name: model.KindCompositeProfile,
		coll: routeCA + "/composite-profiles", item: routeCA + "/composite-profiles/:compositeProfile"})
	register(g, s, kind[model.AppProfileSpec]{name: model.KindAppProfile, check: checkAppProfile,
		coll: routeCA + "/composite-profiles/:compositeProfile/profiles",
		item: routeCA + "/composite-profiles/:compositeProfile/profiles/:profile",
		file: &fileSpec[model.AppProfileSpec]{required: true, attach: attachProfile, download: true, orJSON: true}})
	register(g, s, kind[model.ControllerSpec]{name: model.KindController, check: checkController,
		coll: "/controllers", item: "/controllers/:controller"})
	// A change of a DIG or its intents is a modify of its lifecycle: an approved DIG
	// goes back to Created.
	unapprove := func(ctx context.Context, s *Server, id string) error { return s.unapprove(ctx, digOf(id)) }
	register(g, s, kind[model.DIGSpec]{name: model.KindDIG, check: checkDIG, changed: withDIGHooks(unapprove),
		remove: s.deleteDIG(s.withSnapshotsDeleted(s.deleteOperated(routeDIG, lifecycle.DIGs.Machine))), state: digstate.NewHistory,
		coll: routeCA + "/deployment-intent-groups", item: routeDIG})
	register(g, s, kind[model.DIGIntentSpec]{name: model.KindDIGIntent, check: checkDIGIntent, changed: unapprove,
		coll: routeDIG + "/intents", item: routeDIG + "/intents/:intent"})
	register(g, s, kind[model.GenericPlacementIntentSpec]{name: model.KindGPI, changed: unapprove,
		coll: routeDIG + "/generic-placement-intents", item: routeGPI})
	register(g, s, kind[model.AppIntentSpec]{name: model.KindAppIntent, check: checkAppIntent, changed: unapprove,
		coll: routeGPI + "/app-intents", item: routeGPI + "/app-intents/:appIntent"})
	s.registerRollout(g)
	s.registerArtifacts(g)
}

// caOf returns the composite app _id that contains id: "/projects/p/composite-apps/ca/v".
func caOf(id string) string { return prefixSegments(id, 5) }

// digOf returns the DIG _id that contains id.
func digOf(id string) string { return prefixSegments(id, 7) }

// prefixSegments keeps the first n path segments of id.
func prefixSegments(id string, n int) string {
	seen := 0
	for i := range id {
		if id[i] == '/' {
			if seen++; seen == n+1 {
				return id[:i]
			}
		}
	}
	return id
}

// appRef validates an app name and returns the app's _id in the composite app of id.
func appRef(id, field, app string) (string, error) {
	if err := model.ValidateName(field, app); err != nil {
		return "", badRequest("%v", err)
	}
	return caOf(id) + "/apps/" + app, nil
}

// checkApp: an app's chart is EMCO's upload (the multipart "file" part) or temco's
// reference (spec.chart: an OCI registry, a Helm repository or a URL on a host the admin
// allowed), never both; a reference replaces a stored upload. A profile likewise
// (spec.archive, a URL).
func checkApp(_ context.Context, s *Server, r *request[model.AppSpec]) error {
	if src := r.res.Spec.Chart; src != nil {
		if err := s.checkReference("spec.chart", src, r.hasFile); err != nil {
			return err
		}
		r.noFile = true
	}
	return nil
}

// checkReference validates a reference (field names it) that replaces an upload: never
// both, and only from a host the admin allowed.
func (s *Server) checkReference(field string, src *artifact.Source, hasFile bool) error {
	if hasFile {
		return badRequest("give the archive as the multipart part \"file\" or as %s, not both", field)
	}
	if err := src.Validate(field); err != nil {
		return badRequest("%v", err)
	}
	if u := src.Endpoint(); u == nil || !s.ArtifactHosts.AllowsURL(u) {
		return badRequest("%s: %s is not on the hosts an admin allowed charts to come from (--artifact-hosts-allow)", field, src.Host())
	}
	return nil
}

// attachChart accepts a chart archive Helm can load, in any layout EMCO accepts, and
// stores it as uploaded.
func attachChart(_ context.Context, _ *Server, r *request[model.AppSpec]) error {
	if _, err := archive.LoadChart(r.file, r.res.Metadata.Name); err != nil {
		return badRequest("invalid Helm chart archive: %v", err)
	}
	r.blob = r.file
	return nil
}

func attachProfile(_ context.Context, _ *Server, r *request[model.AppProfileSpec]) error {
	if _, err := profile.Parse(r.file); err != nil {
		return badRequest("invalid app profile archive: %v", err)
	}
	r.blob = r.file
	return nil
}

func checkAppProfile(ctx context.Context, s *Server, r *request[model.AppProfileSpec]) error {
	app, err := appRef(r.id, "spec.app", r.res.Spec.App)
	if err != nil {
		return err
	}
	if src := r.res.Spec.Archive; src != nil {
		if err := s.checkReference("spec.archive", src, r.hasFile); err != nil {
			return err
		}
		if src.Transport() != artifact.TransportURL {
			return badRequest("spec.archive: a profile's archive comes from a url (with its digest)")
		}
		r.noFile = true
	}
	r.ref(app)
	r.field("app", r.res.Spec.App)
	// Rendering takes exactly one profile per app from a composite profile.
	others, err := s.Store.List(ctx, store.Query{Parent: r.parent, Kind: model.KindAppProfile, Fields: map[string]string{"app": r.res.Spec.App}})
	if err != nil {
		return err
	}
	for _, o := range others {
		if o.ID != r.id {
			return conflict("%s already has %s for app %q", describe(r.parent), describe(o.ID), r.res.Spec.App)
		}
	}
	return nil
}

func checkDependency(_ context.Context, _ *Server, r *request[model.AppDependencySpec]) error {
	sp := r.res.Spec
	app, err := appRef(r.id, "spec.app", sp.App)
	if err != nil {
		return err
	}
	switch {
	case app == r.parent:
		return badRequest("an app cannot depend on itself")
	case sp.OpStatus != model.OpStatusReady && sp.OpStatus != model.OpStatusDeployed:
		return badRequest("spec.opStatus %q is invalid: use %q or %q", sp.OpStatus, model.OpStatusReady, model.OpStatusDeployed)
	case sp.Wait < 0:
		return badRequest("spec.wait must not be negative")
	}
	r.ref(app)
	return nil
}

func checkDIG(_ context.Context, s *Server, r *request[model.DIGSpec]) error {
	sp := &r.res.Spec
	if err := model.ValidateName("spec.compositeProfile", sp.CompositeProfile); err != nil {
		return badRequest("%v", err)
	}
	if err := model.ValidateName("spec.version", sp.Version); err != nil {
		return badRequest("%v", err)
	}
	if err := model.ValidateName("spec.logicalCloud", sp.LogicalCloud); err != nil {
		return badRequest("%v", err)
	}
	if err := s.checkDIGExtensions(sp); err != nil {
		return err
	}
	if p := sp.ImagePinning; p != nil {
		for i, h := range p.PlainHTTP {
			if _, err := egress.Parse(h); err != nil || h == "" || strings.Contains(h, ",") {
				return badRequest("spec.imagePinning.plainHTTP[%d] %q: give a registry's host or host:port", i, h)
			}
		}
	}
	r.ref(caOf(r.id) + "/composite-profiles/" + sp.CompositeProfile)
	r.ref(lifecycle.LogicalCloudID(prefixSegments(r.id, 2)[len("/projects/"):], sp.LogicalCloud))
	seen := map[string]bool{}
	for i, ov := range sp.OverrideValues {
		app, err := appRef(r.id, fmt.Sprintf("spec.overrideValues[%d].app", i), ov.App)
		if err != nil {
			return err
		}
		if seen[app] {
			return badRequest("spec.overrideValues names app %q twice", ov.App)
		}
		seen[app] = true
		r.ref(app)
	}
	return nil
}

// checkDIGIntent: keys name controllers (or the generic placement intent), values name
// intents. As in EMCO, none of them need exist yet: instantiate reports what is missing.
func checkDIGIntent(_ context.Context, _ *Server, r *request[model.DIGIntentSpec]) error {
	in := r.res.Spec.Intent
	keys := make([]string, 0, len(in))
	for k := range in {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if err := model.ValidateName("spec.intent."+k, in[k]); err != nil {
			return badRequest("%v", err)
		}
		if k == model.GenericPlacementIntentKey {
			continue // not a reference in EMCO: the placement intent may be deleted first
		}
		if err := model.ValidateName("controller "+k+" in spec.intent", k); err != nil {
			return badRequest("%v", err)
		}
		r.ref("/controllers/" + k)
	}
	return nil
}

func checkAppIntent(_ context.Context, _ *Server, r *request[model.AppIntentSpec]) error {
	app, err := appRef(r.id, "spec.app", r.res.Spec.App)
	if err != nil {
		return err
	}
	if err := validatePlacement(r.res.Spec.Intent); err != nil {
		return badRequest("%v", err)
	}
	r.ref(app)
	r.field("app", r.res.Spec.App)
	return nil
}

// validatePlacement checks the allOf/anyOf structure: every cluster match names a provider
// and exactly one of cluster / clusterLabel; an allOf entry is either a match or a nested anyOf.
func validatePlacement(in model.PlacementIntent) error {
	if len(in.AllOf) == 0 && len(in.AnyOf) == 0 {
		return fmt.Errorf("spec.intent needs at least one allOf or anyOf entry")
	}
	for i, a := range in.AllOf {
		where := fmt.Sprintf("spec.intent.allOf[%d]", i)
		if a.ClusterMatch == (model.ClusterMatch{}) {
			if len(a.AnyOf) == 0 {
				return fmt.Errorf("%s is empty: give clusterProvider with cluster or clusterLabel, or an anyOf list", where)
			}
			if err := validateMatches(where+".anyOf", a.AnyOf); err != nil {
				return err
			}
			continue
		}
		if len(a.AnyOf) > 0 {
			return fmt.Errorf("%s has both a cluster match and an anyOf list; use separate allOf entries", where)
		}
		if err := validateMatch(where, a.ClusterMatch); err != nil {
			return err
		}
	}
	return validateMatches("spec.intent.anyOf", in.AnyOf)
}

func validateMatches(where string, ms []model.ClusterMatch) error {
	for i, m := range ms {
		if err := validateMatch(fmt.Sprintf("%s[%d]", where, i), m); err != nil {
			return err
		}
	}
	return nil
}

func validateMatch(where string, m model.ClusterMatch) error {
	if err := model.ValidateName(where+".clusterProvider", m.ClusterProvider); err != nil {
		return err
	}
	switch {
	case m.Cluster != "" && m.ClusterLabel != "":
		return fmt.Errorf("%s gives both cluster and clusterLabel: give exactly one", where)
	case m.Cluster != "":
		return model.ValidateName(where+".cluster", m.Cluster)
	case m.ClusterLabel != "":
		return model.ValidateName(where+".clusterLabel", m.ClusterLabel)
	}
	return fmt.Errorf("%s gives neither cluster nor clusterLabel: give exactly one", where)
}
