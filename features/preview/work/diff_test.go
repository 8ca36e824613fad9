package work

import (
	"fmt"
	"slices"
	"testing"

	"github.com/temco/temco/features/preview/flow"
	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/lifecycle"
)

func obj(group, kind, ns, name, content string) appctx.Object {
	return appctx.Object{Ref: appctx.Ref{Group: group, Version: "v1", Kind: kind, Namespace: ns, Name: name}, Hash: content}
}

// placedAs places app with its objects on a cluster, each in the status given (as the
// apply records them: the namespace it went to, none for cluster-scoped kinds).
func placedAs(app string, objs []appctx.Object, status string, namespaces ...string) *appctx.ClusterApp {
	ca := &appctx.ClusterApp{App: app}
	for i, o := range objs {
		r := appctx.ResourceStatus{Ref: o.Ref, Status: status}
		if i < len(namespaces) {
			r.Namespace = namespaces[i]
		}
		ca.Resources = append(ca.Resources, r)
	}
	return ca
}

// inNS is ref as the apply records it in the context's namespace.
func inNS(r appctx.Ref) appctx.Ref {
	r.Namespace = "default"
	return r
}

func sideOf(apps map[string][]appctx.Object, placed ...*appctx.ClusterApp) side {
	s := side{placed: placed, apps: map[string]*appctx.App{}}
	for name, objs := range apps {
		s.apps[name] = &appctx.App{Name: name, Objects: objs}
	}
	return s
}

func TestDiffCluster(t *testing.T) {
	cm := obj("", "ConfigMap", "", "web-config", "cm1")
	deploy := obj("apps", "Deployment", "", "web", "d1")
	svc := obj("", "Service", "", "web", "s1")
	role := obj("rbac.authorization.k8s.io", "ClusterRole", "", "web-reader", "r1")
	other := obj("", "ConfigMap", "other", "extra", "x1")
	applied := func(objs ...appctx.Object) *appctx.ClusterApp {
		ns := make([]string, len(objs))
		for i, o := range objs {
			if o.Kind != "ClusterRole" {
				ns[i] = "default"
			}
		}
		return placedAs("web", objs, lifecycle.ResApplied, ns...)
	}
	prev := sideOf(map[string][]appctx.Object{"web": {cm, deploy, svc, role}}, applied(cm, deploy, svc, role))
	for _, tc := range []struct {
		name                    string
		next, prev              side
		added, changed, removed []string
		same                    int
		unchanged, dropped      bool
	}{
		{name: "instantiate: everything is added",
			next:  sideOf(map[string][]appctx.Object{"web": {cm, deploy, role}}, placedAs("web", []appctx.Object{cm, deploy, role}, lifecycle.ResPending)),
			added: []string{"ClusterRole/web-reader", "ConfigMap/default/web-config", "Deployment/default/web"}},
		{name: "nothing changed",
			next: sideOf(map[string][]appctx.Object{"web": {cm, deploy, svc, role}}, placedAs("web", []appctx.Object{cm, deploy, svc, role}, lifecycle.ResPending)),
			prev: prev, same: 4, unchanged: true},
		{name: "a Deployment changed, a Service removed, a ConfigMap added in its own namespace",
			next: sideOf(map[string][]appctx.Object{"web": {cm, obj("apps", "Deployment", "", "web", "d2"), role, other}},
				placedAs("web", []appctx.Object{cm, deploy, role, other}, lifecycle.ResPending)),
			prev: prev, added: []string{"ConfigMap/other/extra"}, changed: []string{"Deployment/default/web"},
			removed: []string{"Service/default/web"}, same: 2},
		{name: "an object the running revision failed to apply is applied again",
			next: sideOf(map[string][]appctx.Object{"web": {cm, deploy}}, placedAs("web", []appctx.Object{cm, deploy}, lifecycle.ResPending)),
			prev: sideOf(map[string][]appctx.Object{"web": {cm, deploy}}, &appctx.ClusterApp{App: "web", Resources: []appctx.ResourceStatus{
				{Ref: inNS(cm.Ref), Status: lifecycle.ResApplied}, {Ref: inNS(deploy.Ref), Status: lifecycle.ResFailed}}}),
			changed: []string{"Deployment/default/web"}, same: 1},
		{name: "what the running revision never applied or deleted is not removed",
			next: sideOf(map[string][]appctx.Object{"web": {cm}}, placedAs("web", []appctx.Object{cm}, lifecycle.ResPending)),
			prev: sideOf(map[string][]appctx.Object{"web": {cm, deploy, svc}}, &appctx.ClusterApp{App: "web", Resources: []appctx.ResourceStatus{
				{Ref: inNS(cm.Ref), Status: lifecycle.ResApplied}, {Ref: deploy.Ref, Status: lifecycle.ResPending},
				{Ref: inNS(svc.Ref), Status: lifecycle.ResDeleted}}}),
			same: 1, unchanged: true},
		{name: "a cluster the new placement drops loses everything",
			next: side{}, prev: prev, dropped: true,
			removed: []string{"ClusterRole/web-reader", "ConfigMap/default/web-config", "Deployment/default/web", "Service/default/web"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := newScope("default", tc.next.apps)
			sc.learn(tc.prev)
			got := diffCluster("local+c1", tc.next, tc.prev, sc)
			for _, l := range []struct {
				what      string
				got, want []string
			}{{"added", got.Added, tc.added}, {"changed", got.Changed, tc.changed}, {"removed", got.Removed, tc.removed}} {
				if l.got == nil {
					t.Errorf("%s is null, want a list", l.what)
				}
				if !slices.Equal(l.got, l.want) && (len(l.got) > 0 || len(l.want) > 0) {
					t.Errorf("%s %q, want %q", l.what, l.got, l.want)
				}
			}
			if got.Same != tc.same || got.Unchanged != tc.unchanged || got.Dropped != tc.dropped || got.Cluster != "local+c1" {
				t.Errorf("same %d unchanged %v dropped %v, want %d %v %v", got.Same, got.Unchanged, got.Dropped, tc.same, tc.unchanged, tc.dropped)
			}
		})
	}
}

// A kind whose CustomResourceDefinition the deployment carries as cluster-scoped, or
// that the running revision applied without a namespace, lands in no namespace.
func TestScopeOfKindsNotBuiltIn(t *testing.T) {
	crd := appctx.Object{Ref: appctx.Ref{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition", Name: "widgets.example.com"},
		Manifest: `{"spec":{"group":"example.com","scope":"Cluster","names":{"kind":"Widget"}}}`}
	sc := newScope("ns1", map[string]*appctx.App{"a": {Objects: []appctx.Object{crd}}})
	sc.learn(side{placed: []*appctx.ClusterApp{{Resources: []appctx.ResourceStatus{
		{Ref: appctx.Ref{Group: "example.org", Kind: "Gadget", Name: "g"}, Status: lifecycle.ResApplied}}}}})
	for _, tc := range []struct {
		ref  appctx.Ref
		want string
	}{
		{appctx.Ref{Group: "example.com", Kind: "Widget", Name: "w"}, ""},
		{appctx.Ref{Group: "example.org", Kind: "Gadget", Name: "g"}, ""},
		{appctx.Ref{Group: "example.org", Kind: "Thing", Name: "t"}, "ns1"},
		{appctx.Ref{Group: "example.org", Kind: "Thing", Namespace: "own", Name: "t"}, "own"},
		{appctx.Ref{Kind: "Namespace", Name: "n"}, ""},
	} {
		if got := sc.namespaceOf(tc.ref); got != tc.want {
			t.Errorf("%s: namespace %q, want %q", tc.ref, got, tc.want)
		}
	}
}

// Stages detail at most limit clusters each and count all; clusters only the running
// revision uses come last, in their own pseudo-stage.
func TestSummarizeBoundsTheDetailNotTheCounts(t *testing.T) {
	previews := map[string]flow.ClusterPreview{}
	var rest []string
	for i := range 5 {
		cl := fmt.Sprintf("local+r%d", i)
		rest = append(rest, cl)
		p := flow.ClusterPreview{Cluster: cl, Added: []string{}, Changed: []string{"Deployment/default/web"}, Removed: []string{}, Same: 2}
		if i%2 == 1 {
			p = flow.ClusterPreview{Cluster: cl, Added: []string{}, Changed: []string{}, Removed: []string{}, Same: 3, Unchanged: true}
		}
		previews[cl] = p
	}
	previews["local+c"] = flow.ClusterPreview{Cluster: "local+c", Added: []string{"Service/default/web"}, Changed: []string{}, Removed: []string{}}
	previews["local+gone"] = flow.ClusterPreview{Cluster: "local+gone", Added: []string{}, Changed: []string{},
		Removed: []string{"ConfigMap/default/a", "Deployment/default/web"}, Dropped: true}
	stages, total := summarize([]stage{{"canary", []string{"local+c"}}, {"rest", rest}, {"empty", nil}}, []string{"local+gone"}, 2,
		func(cl string) flow.ClusterPreview { return previews[cl] })
	var names []string
	for _, s := range stages {
		names = append(names, s.Name)
	}
	if want := []string{"canary", "rest", "empty", flow.PreviewRemovedStage}; !slices.Equal(names, want) {
		t.Fatalf("stages %q, want %q", names, want)
	}
	r := stages[1]
	if len(r.Clusters) != 2 || r.More != 3 || r.Clusters[0].Cluster != "local+r0" || r.Clusters[1].Cluster != "local+r1" {
		t.Errorf("rest details %d clusters (more %d): %+v", len(r.Clusters), r.More, r.Clusters)
	}
	if want := (flow.PreviewCounts{Clusters: 5, Changing: 3, Changed: 3, Unchanged: 12}); r.Counts != want {
		t.Errorf("rest counts %+v, want %+v", r.Counts, want)
	}
	if e := stages[2]; e.Clusters == nil || len(e.Clusters) != 0 || e.Counts != (flow.PreviewCounts{}) {
		t.Errorf("an empty stage: %+v", e)
	}
	if g := stages[3]; !g.Removed || g.Counts.Removed != 2 || g.Counts.Changing != 1 {
		t.Errorf("removed clusters: %+v", g)
	}
	if want := (flow.PreviewCounts{Clusters: 7, Changing: 5, Added: 1, Changed: 3, Removed: 2, Unchanged: 12}); total != want {
		t.Errorf("totals %+v, want %+v", total, want)
	}
}
