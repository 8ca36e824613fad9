package cluster

import (
	"slices"
	"testing"

	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/lifecycle"
)

func object(kind, name, hash string) appctx.Object {
	return appctx.Object{Ref: appctx.Ref{Version: "v1", Kind: kind, Name: name}, Hash: hash}
}

// placedApp builds an app's placement on a cluster with the given statuses, in namespace ns.
func placedApp(app string, objs []appctx.Object, status string) *appctx.ClusterApp {
	p := &appctx.ClusterApp{App: app, Cluster: "cp+c1"}
	for _, o := range objs {
		ns := "default"
		if o.Kind == "Namespace" {
			ns = ""
		}
		r := appctx.ResourceStatus{Ref: o.Ref, Status: status}
		r.Namespace = ns
		p.Resources = append(p.Resources, r)
	}
	return p
}

func TestUnchangedObjectsAreNotReapplied(t *testing.T) {
	prevObjs := []appctx.Object{object("ConfigMap", "cfg", "h1"), object("Deployment", "web", "h2"), object("Service", "web", "h3")}
	prevApps := map[string]*appctx.App{"web": {Name: "web", Objects: prevObjs}}
	prev := []*appctx.ClusterApp{placedApp("web", prevObjs, lifecycle.ResApplied)}
	applied := appliedHashes(prev, prevApps)
	cases := []struct {
		name string
		obj  appctx.Object
		ns   string
		want bool
	}{
		{"unchanged", object("Deployment", "web", "h2"), "default", true},
		{"changed content", object("ConfigMap", "cfg", "h1-new"), "default", false},
		{"added object", object("Secret", "s", "h9"), "default", false},
		{"moved to another namespace", object("Service", "web", "h3"), "other", false},
		{"new API version, same content hash", appctx.Object{Ref: appctx.Ref{Group: "", Version: "v2", Kind: "Service", Name: "web"}, Hash: "h3"}, "default", true},
	}
	for _, c := range cases {
		if got := unchanged(applied, &c.obj, c.ns); got != c.want {
			t.Errorf("%s: unchanged = %v, want %v", c.name, got, c.want)
		}
	}
	// Only Applied objects count as being there.
	failed := []*appctx.ClusterApp{placedApp("web", prevObjs, lifecycle.ResFailed)}
	if unchanged(appliedHashes(failed, prevApps), &prevObjs[0], "default") {
		t.Error("an object that failed to apply was taken as applied")
	}
}

func TestPrunePlansDeletionsOfObjectsAppsAndClusters(t *testing.T) {
	web := []appctx.Object{object("ConfigMap", "cfg", "h1"), object("Deployment", "web", "h2"), object("Service", "web", "h3")}
	db := []appctx.Object{object("StatefulSet", "db", "h4")}
	prev := []*appctx.ClusterApp{placedApp("web", web, lifecycle.ResApplied), placedApp("db", db, lifecycle.ResApplied)}
	cases := []struct {
		name string
		next []*appctx.ClusterApp
		want map[string][]int
	}{
		{"nothing removed", []*appctx.ClusterApp{placedApp("web", web, lifecycle.ResApplied), placedApp("db", db, lifecycle.ResApplied)},
			map[string][]int{}},
		{"an object removed", []*appctx.ClusterApp{placedApp("web", web[:2], lifecycle.ResApplied), placedApp("db", db, lifecycle.ResApplied)},
			map[string][]int{"web": {2}}},
		{"an app removed", []*appctx.ClusterApp{placedApp("web", web, lifecycle.ResApplied)},
			map[string][]int{"db": {0}}},
		{"the cluster no longer used", nil,
			map[string][]int{"web": {0, 1, 2}, "db": {0}}},
		{"an object moved to another app is kept", []*appctx.ClusterApp{placedApp("web", web[:2], lifecycle.ResApplied),
			placedApp("db", append(slices.Clone(db), web[2]), lifecycle.ResApplied)}, map[string][]int{}},
		{"a new revision that failed to apply still owns the object", []*appctx.ClusterApp{placedApp("web", web, lifecycle.ResFailed),
			placedApp("db", db, lifecycle.ResPending)}, map[string][]int{}},
	}
	for _, c := range cases {
		got := toPrune(prev, c.next)
		if len(got) != len(c.want) {
			t.Errorf("%s: prune %v, want %v", c.name, got, c.want)
			continue
		}
		for app, idx := range c.want {
			if !slices.Equal(got[app], idx) {
				t.Errorf("%s: prune %v, want %v", c.name, got, c.want)
			}
		}
	}
	// What was never applied, or is already gone, is not deleted again.
	gone := []*appctx.ClusterApp{placedApp("web", web[:1], lifecycle.ResDeleted), placedApp("db", db, lifecycle.ResPending)}
	if got := toPrune(gone, nil); len(got) != 0 {
		t.Errorf("prune of deleted and pending objects: %v", got)
	}
}
