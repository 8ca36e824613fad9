package render

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/capabilities"
	"github.com/temco/temco/internal/core/lifecycle"
)

// Clusters with the same capabilities are one class, rendered once: a thousand alike
// clusters and one that serves an extra API are two; a cluster whose capabilities cannot be
// read is left out (it keeps Helm's defaults), and only the reading apps' clusters count.
func TestClustersWithTheSameCapabilitiesShareOneClass(t *testing.T) {
	var placed []*appctx.ClusterApp
	for i := range 1000 {
		placed = append(placed, &appctx.ClusterApp{App: "web", Cluster: fmt.Sprintf("p+c%d", i)})
	}
	placed = append(placed, &appctx.ClusterApp{App: "web", Cluster: "p+extra"}, &appctx.ClusterApp{App: "web", Cluster: "p+down"},
		&appctx.ClusterApp{App: "static", Cluster: "p+other"})
	base := capabilities.Capabilities{KubeVersion: "v1.35.4", APIVersions: []string{"apps/v1", "v1"}}
	extra := capabilities.Capabilities{KubeVersion: "v1.35.4", APIVersions: []string{"apps/v1", "probe.example.com/v1", "v1"}}
	var read []string
	a := &Activities{Capabilities: func(_ context.Context, cluster string, _ *appctx.Context) (capabilities.Capabilities, error) {
		switch cluster {
		case "p+extra":
			return extra, nil
		case "p+down":
			return capabilities.Capabilities{}, errors.New("connection refused")
		case "p+other":
			read = append(read, cluster)
		}
		return base, nil
	}}
	classOf, classes, unknown := a.classes(context.Background(), &appctx.Context{}, placed, []string{"web"})
	if len(classes) != 2 || len(classes[base.Key()].clusters) != 1000 || !classes[extra.Key()].clusters["p+extra"] {
		t.Errorf("%d classes: want the thousand alike clusters in one, p+extra in the other", len(classes))
	}
	if classOf["p+c7"] != base.Key() || classOf["p+down"] != "" || unknown["p+down"] == nil || len(read) != 0 {
		t.Errorf("classOf p+c7 %q, p+down %q (unknown: %v); clusters of apps that read no capabilities read: %v",
			classOf["p+c7"], classOf["p+down"], unknown, read)
	}
}

// A placement points at its capabilities' variant where the app has one, and its statuses
// are listed anew from the variant; placements whose objects do not change are not saved.
func TestPlaceNamesEachClustersVariant(t *testing.T) {
	o := func(h string) appctx.Object {
		return appctx.Object{Ref: appctx.Ref{Kind: "ConfigMap", Name: h}, Hash: h}
	}
	apps := map[string]*appctx.App{"web": {Name: "web", Objects: []appctx.Object{o("default")}}}
	v := &variantSet{objects: map[string]map[string][]appctx.Object{"web": {"k2": {o("served"), o("extra")}}}}
	placed := []*appctx.ClusterApp{
		{App: "web", Cluster: "p+c1", Unlisted: true},
		{App: "web", Cluster: "p+c2", Unlisted: true},
		{App: "db", Cluster: "p+c2", Resources: []appctx.ResourceStatus{{Status: lifecycle.ResPending}}},
	}
	apps["db"] = &appctx.App{Name: "db"}
	saved := v.place(placed, apps, map[string]string{"p+c1": "k1", "p+c2": "k2"})
	if len(saved) != 2 || saved[0].Cluster != "p+c2" || saved[1].App != "db" {
		t.Fatalf("saved %+v, want cluster p+c2 whole (both its apps)", saved)
	}
	if p := placed[1]; p.Variant != "k2" || p.Unlisted || len(p.Resources) != 2 || p.Resources[1].Name != "extra" {
		t.Errorf("p+c2's web: variant %q, resources %+v", p.Variant, p.Resources)
	}
	if placed[0].Variant != "" || !placed[0].Unlisted {
		t.Errorf("p+c1 has the default objects: %+v", placed[0])
	}
}
