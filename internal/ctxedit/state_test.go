package ctxedit

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/temco/temco/contract"
	"github.com/temco/temco/internal/appctx"
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
