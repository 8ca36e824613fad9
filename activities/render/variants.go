// Rendering for the target clusters: a chart that reads .Capabilities is rendered for the
// Kubernetes version and APIs of the clusters it goes to, as `helm install` renders it for
// its cluster, once per distinct set of capabilities.

package render

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"

	"go.temporal.io/sdk/activity"
	"golang.org/x/sync/errgroup"

	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/capabilities"
	"github.com/temco/temco/internal/core/ctxedit"
	"github.com/temco/temco/internal/core/lifecycle"
)

// capabilityReads bounds how many clusters' capabilities are read at once.
const capabilityReads = 16

// RenderVariants renders again, once the context is placed and its controllers' edits
// committed, each app whose chart reads .Capabilities, for each distinct set of
// capabilities among its clusters, with the controllers' edits applied as to the app. Where
// the objects differ from the app's, they are stored once as the app's variant for those
// capabilities, and each cluster that has them names it. A cluster whose capabilities
// cannot be read keeps the app's objects (Helm's default capabilities, as EMCO renders
// for every cluster).
func (a *Activities) RenderVariants(ctx context.Context, in lifecycle.ContextRef) error {
	if a.Capabilities == nil {
		return nil
	}
	header, err := a.Contexts.Get(ctx, in.ContextID)
	if err != nil {
		return err
	}
	apps, err := a.Contexts.Apps(ctx, header)
	if err != nil {
		return err
	}
	var reading []string
	for _, name := range header.Apps {
		if apps[name].Capabilities {
			reading = append(reading, name)
		}
	}
	if len(reading) == 0 {
		return nil
	}
	placed, err := a.Contexts.Placements(ctx, in.ContextID, appctx.Filter{})
	if err != nil {
		return err
	}
	classOf, classes, unknown := a.classes(ctx, header, placed, reading)
	for cl, err := range unknown {
		activity.GetLogger(ctx).Warn("a cluster's capabilities are unknown: its charts render with Helm's defaults", "cluster", cl, "error", err)
	}
	if len(classes) == 0 {
		return nil
	}
	v, err := a.variants(ctx, in, header, apps, reading, classes)
	if err != nil {
		return err
	}
	for _, name := range reading {
		if len(v.objects[name]) > 0 {
			if err := a.Contexts.SetVariants(ctx, in.ContextID, name, v.objects[name]); err != nil {
				return err
			}
		}
	}
	return a.Contexts.SaveStatuses(ctx, in.ContextID, appctx.Attempt{}, v.place(placed, apps, classOf)) // not the live reads: a read may have saved since
}

// class is one set of capabilities and the clusters that have it.
type class struct {
	caps     capabilities.Capabilities
	clusters map[string]bool
}

// classes reads the capabilities of the clusters the reading apps are placed on and groups
// the clusters by them; unknown holds why those whose capabilities could not be read.
func (a *Activities) classes(ctx context.Context, header *appctx.Context, placed []*appctx.ClusterApp, reading []string) (
	classOf map[string]string, classes map[string]*class, unknown map[string]error) {
	var clusters []string
	for _, p := range placed {
		if slices.Contains(reading, p.App) && !slices.Contains(clusters, p.Cluster) {
			clusters = append(clusters, p.Cluster)
		}
	}
	var mu sync.Mutex
	classOf, classes, unknown = map[string]string{}, map[string]*class{}, map[string]error{}
	var g errgroup.Group
	g.SetLimit(capabilityReads)
	for _, cl := range clusters {
		g.Go(func() error {
			caps, err := a.Capabilities(ctx, cl, header)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				unknown[cl] = err
				return nil
			}
			key := caps.Key()
			if classes[key] == nil {
				classes[key] = &class{caps: caps, clusters: map[string]bool{}}
			}
			classes[key].clusters[cl], classOf[cl] = true, key
			return nil
		})
	}
	_ = g.Wait()
	return classOf, classes, unknown
}

// variantSet is what the reading apps become per set of capabilities.
type variantSet struct {
	objects map[string]map[string][]appctx.Object // app -> capabilities' key -> objects, where they differ from the app's
	own     map[string]map[string][]appctx.Object // app -> cluster -> its own objects (cluster-specific edits) under its capabilities
}

// variants renders the reading apps for each class, applies the controllers' edits, and
// keeps what differs from the context's apps.
func (a *Activities) variants(ctx context.Context, in lifecycle.ContextRef, header *appctx.Context, apps map[string]*appctx.App,
	reading []string, classes map[string]*class) (*variantSet, error) {
	r, err := a.load(ctx, in)
	if err != nil {
		return nil, err
	}
	layers, err := a.Contexts.Layers(ctx, in.ContextID, -1)
	if err != nil {
		return nil, err
	}
	var groups map[string][][]string
	if len(layers) > 0 {
		if groups, err = a.Contexts.Groups(ctx, in.ContextID); err != nil {
			return nil, err
		}
	}
	v := &variantSet{objects: map[string]map[string][]appctx.Object{}, own: map[string]map[string][]appctx.Object{}}
	for _, key := range slices.Sorted(maps.Keys(classes)) {
		c := classes[key]
		rendered := maps.Clone(apps)
		for _, doc := range r.apps {
			if !slices.Contains(reading, doc.Name) {
				continue
			}
			out, err := a.renderApp(ctx, r.input(doc, &c.caps), fmt.Sprintf("app %q, rendered for Kubernetes %s and its APIs", doc.Name, c.caps.KubeVersion))
			if err != nil {
				return nil, err
			}
			rendered[doc.Name] = &appctx.App{Name: doc.Name, Objects: out.objects}
		}
		final, own := rendered, map[string]map[string][]appctx.Object{}
		if len(layers) > 0 {
			s, err := ctxedit.New(header.Apps, rendered, groups, func(app string) map[string]string {
				return map[string]string{lifecycle.DeploymentIDLabel: header.Instance + "-" + app}
			})
			if err != nil {
				return nil, err
			}
			for _, l := range layers {
				if err := s.Apply(l.Controller, l.Type, l.Edits); err != nil {
					return nil, invalid("the edits of controller %s on the rendering for Kubernetes %s: %v", l.Controller, c.caps.KubeVersion, err)
				}
			}
			final = map[string]*appctx.App{}
			for name, app := range s.Apps {
				final[name], own[name] = &appctx.App{Name: name, Objects: app.Objects}, app.PerCluster
			}
		}
		for _, name := range reading {
			if !sameObjects(final[name].Objects, apps[name].Objects) {
				if v.objects[name] == nil {
					v.objects[name] = map[string][]appctx.Object{}
				}
				v.objects[name][key] = final[name].Objects
			}
			for cl, objs := range own[name] {
				if c.clusters[cl] {
					if v.own[name] == nil {
						v.own[name] = map[string][]appctx.Object{}
					}
					v.own[name][cl] = objs
				}
			}
		}
	}
	return v, nil
}

// place points each placement of a reading app at its capabilities' variant (and at its
// own objects under them) and returns the placements of every cluster that changed, whole
// (a cluster's statuses are one document), their objects listed Pending.
func (v *variantSet) place(placed []*appctx.ClusterApp, apps map[string]*appctx.App, classOf map[string]string) []*appctx.ClusterApp {
	touched := map[string]bool{}
	for _, p := range placed {
		variant := ""
		if _, ok := v.objects[p.App][classOf[p.Cluster]]; ok {
			variant = classOf[p.Cluster]
		}
		objs, own := v.own[p.App][p.Cluster]
		if variant == p.Variant && (!own || sameObjects(objs, p.Objects)) {
			continue
		}
		p.Variant = variant
		if own {
			p.Objects = objs
		}
		app := *apps[p.App]
		app.Variants = v.objects[p.App]
		listed := app.ObjectsFor(p)
		p.Resources, p.Unlisted = make([]appctx.ResourceStatus, len(listed)), false
		for i, o := range listed {
			p.Resources[i] = appctx.ResourceStatus{Ref: o.Ref, Status: lifecycle.ResPending}
		}
		touched[p.Cluster] = true
	}
	var out []*appctx.ClusterApp
	for _, p := range placed {
		if touched[p.Cluster] {
			out = append(out, p)
		}
	}
	return out
}

// sameObjects tells whether two object lists are the same objects, in the same order.
func sameObjects(a, b []appctx.Object) bool {
	return slices.EqualFunc(a, b, func(x, y appctx.Object) bool { return x.Hash == y.Hash })
}
