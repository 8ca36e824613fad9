// Package render builds an AppContext revision: it renders every app's Helm chart
// with its profile and the DIG's override values and stores the manifests in MongoDB.
package render

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sort"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.temporal.io/sdk/temporal"
	"golang.org/x/sync/errgroup"

	"github.com/temco/temco/internal/adapters/profile"
	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/artifact"
	"github.com/temco/temco/internal/core/artifact/blobs"
	"github.com/temco/temco/internal/core/capabilities"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/model"
	"github.com/temco/temco/internal/core/store"
)

// Activities renders apps.
type Activities struct {
	Store    *store.Store
	Contexts *appctx.Store
	// Capabilities reads a cluster's capabilities, for the context whose header is given
	// (its credentials); nil: every chart renders with Helm's defaults.
	Capabilities func(ctx context.Context, cluster string, header *appctx.Context) (capabilities.Capabilities, error)
	// Sandbox renders each chart in a child process (nil: in this one, for tests).
	Sandbox *Sandbox
	// Blobs hold the charts that came by reference (activities/artifact stored them).
	Blobs *blobs.Store
}

// invalid is a permanent failure caused by what the user configured.
func invalid(format string, args ...any) error {
	return temporal.NewNonRetryableApplicationError(fmt.Sprintf(format, args...), lifecycle.ErrInvalidInput, nil)
}

// RenderApps renders every app of the DIG's composite app into the context, with Helm's
// default capabilities (RenderVariants renders again those whose charts ask, for the
// clusters whose capabilities differ). It answers how many apps' charts read them: the
// operation runs RenderVariants only then. (Workers before 2026-12-06 answered the number
// of apps: more than none whenever there were apps, so the operation renders again
// when it need not, never the reverse.)
func (a *Activities) RenderApps(ctx context.Context, in lifecycle.ContextRef) (int, error) {
	r, err := a.load(ctx, in)
	if err != nil {
		return 0, err
	}
	// Charts render on every core; the first app that fails (in list order) is reported.
	rendered := make([]*appctx.App, len(r.apps))
	errs := make([]error, len(r.apps))
	var wg errgroup.Group
	wg.SetLimit(runtime.GOMAXPROCS(0))
	for i, doc := range r.apps {
		wg.Go(func() error {
			out, err := a.renderApp(ctx, r.input(doc, nil), fmt.Sprintf("app %q", doc.Name))
			errs[i] = err
			rendered[i] = &appctx.App{Name: doc.Name, Deps: r.deps[doc.ID], Objects: out.objects, Capabilities: out.readsCapabilities}
			return nil
		})
	}
	_ = wg.Wait() // errors are in errs
	for _, err := range errs {
		if err != nil {
			return 0, err
		}
	}
	order, err := dependencyOrder(rendered)
	if err != nil {
		return 0, invalid("%v", err)
	}
	w, wctx := errgroup.WithContext(ctx) // different collections: written together
	w.Go(func() error { return a.Contexts.PutApps(wctx, in.ContextID, rendered) })
	header := bson.D{{Key: "apps", Value: order}}
	for app := range r.header.Artifacts {
		header = append(header, bson.E{Key: "artifacts." + app + ".stage", Value: artifact.StageRendered})
	}
	w.Go(func() error { return a.Contexts.Set(wctx, in.ContextID, header) })
	reading := 0
	for _, app := range rendered {
		if app.Capabilities {
			reading++
		}
	}
	return reading, w.Wait()
}

// renderApp renders one app, in the sandbox when there is one; what names it in the error.
func (a *Activities) renderApp(ctx context.Context, in chartInput, what string) (rendering, error) {
	var out rendering
	var err error
	if a.Sandbox != nil {
		out, err = a.Sandbox.render(ctx, in, renderTimeout)
	} else {
		out, err = render(ctx, in)
	}
	return out, renderFailure(ctx, what, err)
}

// renderFailure is why an app did not render: the user's chart, profile or values, not
// retried, unless the activity is cancelled.
func renderFailure(ctx context.Context, what string, err error) error {
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.As(err, new(sandboxFault)):
		return fmt.Errorf("%s: %w", what, err) // retried: not the chart's fault
	}
	return invalid("%s: %v", what, err)
}

// renderInputs is what a context's apps are rendered from.
type renderInputs struct {
	dig       model.Resource[model.DIGSpec]
	apps      []*store.Doc // with their charts
	profiles  map[string]*profile.Profile
	header    *appctx.Context
	deps      map[string][]model.AppDependencySpec
	overrides map[string]map[string]string
}

// input is what one app's rendering depends on (caps nil: Helm's defaults).
func (r *renderInputs) input(doc *store.Doc, caps *capabilities.Capabilities) chartInput {
	return chartInput{app: doc.Name, archive: doc.Blob, profile: r.profiles[doc.Name], overrides: r.overrides[doc.Name],
		release: r.dig.Spec.Version, namespace: r.header.Namespace, caps: caps,
		labels: map[string]string{lifecycle.DeploymentIDLabel: r.header.Instance + "-" + doc.Name}}
}

// load reads what the context's apps are rendered from.
func (a *Activities) load(ctx context.Context, in lifecycle.ContextRef) (*renderInputs, error) {
	caID := in.Target.CompositeAppID()
	var (
		dig      model.Resource[model.DIGSpec]
		apps     []*store.Doc
		profiles map[string]*store.Doc
		header   *appctx.Context
		deps     map[string][]model.AppDependencySpec
	)
	// The reads are independent database round trips: done together, not one by one.
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		digDoc, err := a.Store.Get(gctx, in.Target.ID())
		if err != nil {
			return err
		}
		if dig, err = model.Decode[model.DIGSpec](digDoc.Body); err != nil {
			return err
		}
		profiles, err = a.profiles(gctx, caID+"/composite-profiles/"+dig.Spec.CompositeProfile)
		return err
	})
	g.Go(func() (err error) {
		apps, err = a.Store.List(gctx, store.Query{Parent: caID, Kind: model.KindApp, Full: true})
		return err
	})
	g.Go(func() (err error) {
		header, err = a.Contexts.Get(gctx, in.ContextID)
		return err
	})
	g.Go(func() (err error) {
		deps, err = a.dependencies(gctx, in.Target)
		return err
	})
	if err := g.Wait(); err != nil {
		return nil, err
	}
	if len(apps) == 0 {
		return nil, invalid("composite app %q %q has no apps", in.Target.CompositeApp, in.Target.Version)
	}
	if err := a.charts(ctx, apps, header); err != nil {
		return nil, err
	}
	parsed, err := a.parseProfiles(ctx, profiles, header)
	if err != nil {
		return nil, err
	}
	r := &renderInputs{dig: dig, apps: apps, profiles: parsed, header: header, deps: deps, overrides: map[string]map[string]string{}}
	for _, ov := range dig.Spec.OverrideValues {
		r.overrides[ov.App] = ov.Values
	}
	return r, nil
}

// charts puts into each app that names its chart by reference the bytes its artifact was
// pinned to in this revision (never what a tag names now).
func (a *Activities) charts(ctx context.Context, apps []*store.Doc, header *appctx.Context) error {
	for _, d := range apps {
		st, ok := header.Artifacts[d.Name]
		if !ok {
			if len(d.Blob) == 0 {
				return invalid("app %q has neither a chart archive nor a fetched chart reference", d.Name)
			}
			continue
		}
		if st.Blob == "" {
			return invalid("app %q: its chart %s was not fetched (stage %s)", d.Name, st.Source, st.Stage)
		}
		data, err := a.Blobs.Get(ctx, st.Blob)
		if err != nil {
			return err
		}
		d.Blob = data
	}
	return nil
}

// profiles loads the composite profile's app profiles by app name.
func (a *Activities) profiles(ctx context.Context, compositeProfile string) (map[string]*store.Doc, error) {
	docs, err := a.Store.List(ctx, store.Query{Parent: compositeProfile, Kind: model.KindAppProfile, Full: true})
	if err != nil {
		return nil, err
	}
	out := map[string]*store.Doc{}
	for _, d := range docs {
		out[d.Fields["app"]] = d
	}
	return out, nil
}

// parseProfiles reads each app's profile: its upload, or the archive its reference was
// pinned to in this revision.
func (a *Activities) parseProfiles(ctx context.Context, docs map[string]*store.Doc, header *appctx.Context) (map[string]*profile.Profile, error) {
	out := map[string]*profile.Profile{}
	for app, d := range docs {
		data := d.Blob
		if st, ok := header.Artifacts[artifact.ProfileKey(app)]; ok {
			if st.Blob == "" {
				return nil, invalid("app profile %q: its archive %s was not fetched (stage %s)", d.Name, st.Source, st.Stage)
			}
			var err error
			if data, err = a.Blobs.Get(ctx, st.Blob); err != nil {
				return nil, err
			}
		}
		p, err := profile.Parse(data)
		if err != nil {
			return nil, invalid("app profile %q: %v", d.Name, err)
		}
		out[app] = p
	}
	return out, nil
}

// dependencies loads the app dependencies of the composite app, by app _id, in one query.
func (a *Activities) dependencies(ctx context.Context, dig lifecycle.Target) (map[string][]model.AppDependencySpec, error) {
	docs, err := a.Store.List(ctx, store.Query{Scope: "/projects/" + dig.Project, Kind: model.KindAppDependency})
	if err != nil {
		return nil, err
	}
	deps := map[string][]model.AppDependencySpec{}
	for _, d := range docs {
		if !strings.HasPrefix(d.Parent, dig.CompositeAppID()+"/") {
			continue // another composite app of the project
		}
		r, err := model.Decode[model.AppDependencySpec](d.Body)
		if err != nil {
			return nil, err
		}
		deps[d.Parent] = append(deps[d.Parent], r.Spec)
	}
	return deps, nil
}

// dependencyOrder sorts apps so every app comes after the apps it depends on
// (ties by name); a dependency cycle is an error.
func dependencyOrder(apps []*appctx.App) ([]string, error) {
	byName := map[string]*appctx.App{}
	for _, a := range apps {
		byName[a.Name] = a
	}
	names := make([]string, 0, len(apps))
	for n := range byName {
		names = append(names, n)
	}
	sort.Strings(names)
	const (
		unvisited = iota
		visiting
		done
	)
	mark := map[string]int{}
	var order []string
	var visit func(n string, path []string) error
	visit = func(n string, path []string) error {
		switch mark[n] {
		case done:
			return nil
		case visiting:
			return fmt.Errorf("app dependencies form a cycle: %v", append(path, n))
		}
		mark[n] = visiting
		deps := make([]string, 0, len(byName[n].Deps))
		for _, d := range byName[n].Deps {
			if _, ok := byName[d.App]; !ok {
				return fmt.Errorf("app %q depends on %q, which is not in the composite app", n, d.App)
			}
			deps = append(deps, d.App)
		}
		sort.Strings(deps)
		for _, d := range deps {
			if err := visit(d, append(path, n)); err != nil {
				return err
			}
		}
		mark[n] = done
		order = append(order, n)
		return nil
	}
	for _, n := range names {
		if err := visit(n, nil); err != nil {
			return nil, err
		}
	}
	return order, nil
}
