package api

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/temco/temco/contract"
	"github.com/temco/temco/contract/remote"
	"github.com/temco/temco/internal/core/appctx"
)

// controlled stores a context placed for controllers: app "web" with a ConfigMap, one
// placement group of two clusters.
func controlled(t *testing.T, c *client, ctxID string) {
	t.Helper()
	ctx := context.Background()
	s, err := appctx.New(ctx, c.store.Database())
	if err != nil {
		t.Fatal(err)
	}
	obj, err := appctx.NewObject(&unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "cfg", "namespace": "default"}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Create(ctx, &appctx.Context{ID: ctxID, Instance: ctxID, Revision: 1, Apps: []string{"web"}}); err != nil {
		t.Fatal(err)
	}
	if err := s.PutApps(ctx, ctxID, []*appctx.App{{Name: "web", Objects: []appctx.Object{obj}}}); err != nil {
		t.Fatal(err)
	}
	if err := s.PutGroups(ctx, ctxID, map[string][][]string{"web": {{"p+c2", "p+c1"}}}); err != nil {
		t.Fatal(err)
	}
}

// An external controller reads the context as its step sees it and records edits that
// are checked as a built-in controller's are; a late attempt never replaces a newer one.
func TestControllerView(t *testing.T) {
	c := newClient(t)
	controlled(t, c, "ctx1")
	c.do("POST", "/controllers", res("lab", map[string]any{"type": "action", "taskQueue": "lab"})).must(t, 201)

	var apps []contract.App
	c.do("GET", "/contexts/ctx1/steps/0/apps", nil).must(t, 200).json(t, &apps)
	if len(apps) != 1 || apps[0].Name != "web" || strings.Join(apps[0].Clusters, ",") != "p+c1" {
		t.Errorf("apps %+v: want web on p+c1 (the group's first cluster by name)", apps)
	}
	if m := c.do("GET", "/contexts/nope/steps/0/apps", nil).must(t, 404).message(t); !strings.Contains(m, `"nope"`) {
		t.Errorf("missing context: %q", m)
	}
	c.do("GET", "/contexts/ctx1/steps/x/apps", nil).must(t, 400)
	c.do("GET", "/contexts/ctx1/steps/0/apps/nope/resources", nil).must(t, 404)

	put := func(attempt int32, edits ...contract.Edit) response {
		return c.do("PUT", "/contexts/ctx1/steps/0/edits", remote.StepEdits{Controller: "lab", Attempt: attempt, Edits: edits})
	}
	label := func(v string) contract.Edit {
		return contract.Edit{Op: contract.EditPatch, App: "web", Kind: "ConfigMap", Name: "cfg", Type: contract.PatchMerge,
			Data: []byte(`{"metadata":{"labels":{"l":"` + v + `"}}}`)}
	}
	// An action controller may not move apps, and may not patch what is not there.
	m := put(1, contract.Edit{Op: contract.EditRemoveClusters, App: "web", Clusters: []string{"p+c1"}}).must(t, 400).message(t)
	if !strings.Contains(m, "placement") {
		t.Errorf("an action controller's removeClusters: %q", m)
	}
	bad := label("x")
	bad.Name = "missing"
	put(1, bad).must(t, 400)
	c.do("PUT", "/contexts/ctx1/steps/0/edits", remote.StepEdits{Controller: "nope"}).must(t, 400)

	put(2, label("second")).must(t, 204)
	if m := put(1, label("first")).must(t, 409).message(t); !strings.Contains(m, "later attempt") {
		t.Errorf("a stale attempt: %q", m)
	}
	var objs []contract.Resource
	c.do("GET", "/contexts/ctx1/steps/1/apps/web/resources?cluster=p%2Bc1", nil).must(t, 200).json(t, &objs)
	if len(objs) != 1 || !strings.Contains(string(objs[0].Manifest), `"l":"second"`) {
		t.Errorf("the next step sees %+v; want the label of attempt 2", objs)
	}
	c.do("GET", "/contexts/ctx1/steps/0/apps/web/resources", nil).must(t, 200).json(t, &objs)
	if len(objs) != 1 || strings.Contains(string(objs[0].Manifest), `"l"`) {
		t.Errorf("step 0 sees its own edit: %+v", objs)
	}

	c.do("GET", "/contexts/ctx1/clusters", nil).must(t, 400)
	c.do("GET", "/contexts/ctx1/clusters?provider=nope", nil).must(t, 404)
}
