package ctxedit

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/temco/temco/contract"
	"github.com/temco/temco/internal/core/appctx"
)

func object(t *testing.T, manifest string) appctx.Object {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON([]byte(manifest)); err != nil {
		t.Fatal(err)
	}
	o, err := appctx.NewObject(u)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func newState(t *testing.T) *State {
	t.Helper()
	dep := object(t, `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"},"spec":{"replicas":1,
		"template":{"spec":{"containers":[{"name":"c","image":"i","resources":{"requests":{"memory":"1M"}}}]}}}}`)
	rendered := map[string]*appctx.App{"web": {Name: "web", Objects: []appctx.Object{dep}}}
	groups := map[string][][]string{"web": {{"p+a"}, {"p+c", "p+b"}}}
	s, err := New([]string{"web"}, rendered, groups, func(app string) map[string]string { return map[string]string{"id": "x-" + app} })
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestPlacementEditsWorkOnGroups(t *testing.T) {
	s := newState(t)
	if got := strings.Join(s.Apps["web"].Clusters(), ","); got != "p+a,p+b" {
		t.Fatalf("clusters %s, want each group's first by name", got)
	}
	// Removing the anyOf group's choice picks the next; adding makes a group of its own.
	err := s.Apply("plc", contract.TypePlacement, []contract.Edit{
		{Op: contract.EditRemoveClusters, App: "web", Clusters: []string{"p+b", "p+a"}},
		{Op: contract.EditAddClusters, App: "web", Clusters: []string{"q+z"}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(s.Apps["web"].Clusters(), ","); got != "p+c,q+z" {
		t.Errorf("clusters %s, want p+c,q+z", got)
	}
	if err := s.Apply("ac", contract.TypeAction, []contract.Edit{{Op: contract.EditRemoveClusters, App: "web"}}); err == nil {
		t.Error("an action controller changed the placement")
	}
	if err := s.Apply("plc", contract.TypePlacement, []contract.Edit{{Op: contract.EditPatch, App: "web"}}); err == nil {
		t.Error("a placement controller patched a resource")
	}
}

func TestActionEditsAppWideAndPerCluster(t *testing.T) {
	s := newState(t)
	err := s.Apply("gac", contract.TypeAction, []contract.Edit{
		{Op: contract.EditAddResource, App: "web", Clusters: []string{"p+b"},
			Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: only-b\ndata:\n  k: v\n")},
		{Op: contract.EditPatch, App: "web", Kind: "Deployment", Name: "web", Type: contract.PatchStrategic,
			Data: []byte(`{"spec":{"template":{"spec":{"containers":[{"name":"c","resources":{"limits":{"cpu":"2"}}}]}}}}`)},
		{Op: contract.EditPatch, App: "web", Kind: "Deployment", Name: "web", Type: contract.PatchJSON,
			Data: []byte(`[{"op":"replace","path":"/spec/replicas","value":3}]`)},
	})
	if err != nil {
		t.Fatal(err)
	}
	a := s.Apps["web"]
	if len(a.Objects) != 1 || len(a.ObjectsOn("p+b")) != 2 || len(a.ObjectsOn("p+a")) != 1 {
		t.Fatalf("objects: every cluster %d, p+b %d, p+a %d", len(a.Objects), len(a.ObjectsOn("p+b")), len(a.ObjectsOn("p+a")))
	}
	for _, on := range []string{"p+a", "p+b"} {
		m := a.ObjectsOn(on)[0].Manifest // app-wide patches reach the cluster's own copy too
		if !strings.Contains(m, `"replicas":3`) || !strings.Contains(m, `"limits":{"cpu":"2"}`) || !strings.Contains(m, `"memory":"1M"`) {
			t.Errorf("deployment on %s: %s", on, m)
		}
	}
	if cm := a.ObjectsOn("p+b")[1]; cm.Kind != "ConfigMap" || !strings.Contains(cm.Manifest, `"id":"x-web"`) || cm.Hash == "" {
		t.Errorf("added object %+v lacks the app's label or hash", cm)
	}
	for _, bad := range []contract.Edit{
		{Op: contract.EditPatch, App: "web", Kind: "Deployment", Name: "nope", Type: contract.PatchJSON, Data: []byte(`[]`)},
		{Op: contract.EditAddResource, App: "web", Clusters: []string{"p+c"}, Data: []byte(`{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"x"}}`)},
		{Op: contract.EditAddResource, App: "other", Data: []byte(`{}`)},
		{Op: contract.EditPatch, App: "web", Kind: "Deployment", Name: "web", Type: contract.PatchJSON,
			Data: []byte(`[{"op":"replace","path":"/metadata/name","value":"renamed"}]`)},
	} {
		err := s.Clone().Apply("gac", contract.TypeAction, []contract.Edit{bad})
		if _, ok := err.(*Error); !ok {
			t.Errorf("edit %+v: error %v, want a refusal", bad, err)
		}
	}
}

// An action controller adds an app of its own, after the others, and gives it objects on
// some of its clusters; what cannot be added is refused with the reason.
func TestAnActionControllerAddsAnApp(t *testing.T) {
	s := newState(t)
	cm := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"chain"}}`
	err := s.Apply("sfc", contract.TypeAction, []contract.Edit{
		{Op: contract.EditAddApp, App: "chains", Clusters: []string{"p+b", "p+a", "p+a"}},
		{Op: contract.EditAddResource, App: "chains", Clusters: []string{"p+b"}, Data: []byte(cm)}})
	if err != nil {
		t.Fatal(err)
	}
	a := s.Apps["chains"]
	if strings.Join(s.Order, ",") != "web,chains" || !a.Added || strings.Join(a.Clusters(), ",") != "p+a,p+b" {
		t.Fatalf("order %v, app %+v", s.Order, a)
	}
	if len(a.ObjectsOn("p+a")) != 0 || len(a.ObjectsOn("p+b")) != 1 || !strings.Contains(a.ObjectsOn("p+b")[0].Manifest, `"id":"x-chains"`) {
		t.Errorf("objects: p+a %v, p+b %v; want the ConfigMap, labelled, on p+b alone", a.ObjectsOn("p+a"), a.ObjectsOn("p+b"))
	}
	for _, c := range []struct {
		typ  string
		edit contract.Edit
		want string
	}{
		{contract.TypeAction, contract.Edit{Op: contract.EditAddApp, App: "web", Clusters: []string{"p+a"}}, `already has app "web"`},
		{contract.TypeAction, contract.Edit{Op: contract.EditAddApp, App: "bad name!", Clusters: []string{"p+a"}}, `"bad name!" is invalid`},
		{contract.TypeAction, contract.Edit{Op: contract.EditAddApp, App: "x"}, "needs clusters"},
		{contract.TypeAction, contract.Edit{Op: contract.EditAddApp, App: "x", Clusters: []string{"nocluster"}}, "not provider+cluster"},
		{contract.TypePlacement, contract.Edit{Op: contract.EditAddApp, App: "x", Clusters: []string{"p+a"}}, "placement controllers may only"},
	} {
		if err := s.Clone().Apply("c", c.typ, []contract.Edit{c.edit}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.edit, err, c.want)
		}
	}
}

// A retried commit starts again from what rendering produced: an app an earlier attempt
// stored as added is left out, for the controllers' edits to add it again.
func TestNewLeavesOutTheAppsControllersAdded(t *testing.T) {
	rendered := map[string]*appctx.App{"web": {Name: "web"}, "chains": {Name: "chains", Added: true}}
	s, err := New([]string{"web", "chains"}, rendered, map[string][][]string{"web": {{"p+a"}}}, func(string) map[string]string { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(s.Order, ",") != "web" || s.Apps["chains"] != nil {
		t.Errorf("order %v, apps %v", s.Order, s.Apps)
	}
}
