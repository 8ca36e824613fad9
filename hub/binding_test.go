package hub

import (
	"context"
	"net/http"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/temco/temco/hubapi/v1alpha1"
)

// binding is a Project object (temco name project) listing namespaces.
func binding(project string, namespaces ...string) *v1.Project {
	return &v1.Project{ObjectMeta: metav1.ObjectMeta{Name: "bind-" + project + "-" + strings.Join(namespaces, "-")},
		Spec: v1.ProjectSpec{Named: v1.Named{Name: project}, Namespaces: namespaces}}
}

func TestANamespaceActsAsTheOneProjectThatListsIt(t *testing.T) {
	for _, c := range []struct {
		name     string
		projects []client.Object
		ns       string
		want     string // the project, or the refusal's words
		code     int
	}{
		{"listed", []client.Object{binding("shop", "team-a"), binding("other", "team-b")}, "team-a", "shop", 0},
		{"listed among others", []client.Object{binding("shop", "x", "team-a", "y")}, "team-a", "shop", 0},
		{"named after a project, not listed", []client.Object{binding("team-a", "elsewhere")}, "team-a",
			"namespace team-a is bound to no temco project: an admin lists it in a Project's spec.namespaces", http.StatusForbidden},
		{"no projects at all", nil, "team-a", "bound to no temco project", http.StatusForbidden},
		{"listed by two", []client.Object{binding("p1", "team-a"), binding("p2", "team-a")}, "team-a",
			"namespace team-a is bound to projects p1, p2: an admin lists it in one Project only", http.StatusConflict},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := &Reconciler{Kube: newKube(t, c.projects...)}
			got, err := r.projectOf(context.Background(), c.ns)
			if c.code == 0 {
				if err != nil || got != c.want {
					t.Fatalf("projectOf = %q, %v; want %q", got, err, c.want)
				}
				return
			}
			ref, ok := IsRefusal(err)
			if !ok || ref.Code != c.code || !strings.Contains(ref.Message, c.want) {
				t.Fatalf("projectOf = %q, %v; want a %d saying %q", got, err, c.code, c.want)
			}
		})
	}
}

// A DIG acts as its namespace's project: every request carries the project's authority,
// its resources are under the project's path whatever the namespace is called; in an
// unbound namespace nothing is sent at all and the refusal is in its status.
func TestADIGActsAsItsNamespacesProject(t *testing.T) {
	for _, c := range []struct {
		name    string
		binding *v1.Project
		refused string
	}{
		{name: "bound", binding: binding("shop", "p1")},
		{name: "named after a project, unbound", binding: binding("p1", "elsewhere"), refused: "namespace p1 is bound to no temco project"},
	} {
		t.Run(c.name, func(t *testing.T) {
			api := newFakeAPI(t)
			o := dig()
			kube := newKube(t, o, c.binding)
			g := &generic[*v1.DeploymentIntentGroup]{&Reconciler{Kube: kube, API: api.client(), Events: &fakeEvents{}}, kindOps[*v1.DeploymentIntentGroup]{
				kind: "DeploymentIntentGroup", new: func() *v1.DeploymentIntentGroup { return &v1.DeploymentIntentGroup{} },
				build: func(ctx context.Context, r *Reconciler, o *v1.DeploymentIntentGroup, project string) (*node, error) {
					return digNode(ctx, r.filesFor(o), project, o)
				}}}
			key := types.NamespacedName{Namespace: o.Namespace, Name: o.Name}
			if _, err := g.Reconcile(context.Background(), ctrl.Request{NamespacedName: key}); err != nil {
				t.Fatal(err)
			}
			var got v1.DeploymentIntentGroup
			if err := kube.Get(context.Background(), key, &got); err != nil {
				t.Fatal(err)
			}
			accepted := condition2(t, got.Status.Conditions, v1.Accepted)
			calls := api.all()
			if c.refused != "" {
				if accepted.Status != metav1.ConditionFalse || !strings.Contains(accepted.Message, c.refused) {
					t.Errorf("Accepted = %+v, want False saying %q", accepted, c.refused)
				}
				for _, call := range calls {
					if !strings.HasPrefix(call.Path, "/diagnostics/") {
						t.Errorf("%s sent for an object of an unbound namespace", call)
					}
				}
				return
			}
			if accepted.Status != metav1.ConditionTrue {
				t.Fatalf("Accepted = %+v", accepted)
			}
			if len(calls) == 0 {
				t.Fatal("nothing sent")
			}
			for _, call := range calls {
				if strings.HasPrefix(call.Path, "/diagnostics/") {
					if call.ActAs != "" {
						t.Errorf("%s: the hub's own report acts as %q", call, call.ActAs)
					}
					continue
				}
				if call.ActAs != "project:shop" || !strings.HasPrefix(call.Path, "/projects/shop/") {
					t.Errorf("%s acts as %q, want project:shop below /projects/shop/", call, call.ActAs)
				}
			}
		})
	}
}

func condition2(t *testing.T, conds []metav1.Condition, typ string) metav1.Condition {
	t.Helper()
	for _, c := range conds {
		if c.Type == typ {
			return c
		}
	}
	t.Fatalf("no %s condition in %v", typ, conds)
	return metav1.Condition{}
}

// A DIG deleted after an admin unbound its namespace: the hub has no project to act as,
// so it sends nothing to temco for it, says so in an Event, and lets the object go.
func TestADIGOfANamespaceUnboundSinceIsLetGo(t *testing.T) {
	api := newFakeAPI(t)
	o := dig()
	o.Finalizers = []string{Finalizer}
	o.Status.Owner, o.Status.Path = v1.OwnerHub, "/v2/projects/shop/composite-apps/shop/v1/deployment-intent-groups/prod"
	kube := newKube(t, o, binding("shop", "elsewhere"))
	ev := &fakeEvents{}
	g := &generic[*v1.DeploymentIntentGroup]{&Reconciler{Kube: kube, API: api.client(), Events: ev}, digOps}
	ctx := context.Background()
	if err := kube.Delete(ctx, o); err != nil {
		t.Fatal(err)
	}
	key := types.NamespacedName{Namespace: o.Namespace, Name: o.Name}
	if _, err := g.Reconcile(ctx, ctrl.Request{NamespacedName: key}); err != nil {
		t.Fatal(err)
	}
	for _, c := range api.all() {
		if !strings.HasPrefix(c.Path, "/diagnostics/") {
			t.Errorf("%s sent for an object of an unbound namespace", c)
		}
	}
	if err := kube.Get(ctx, key, &v1.DeploymentIntentGroup{}); err == nil {
		t.Error("the object is still there: its finalizer was kept")
	}
	if got := strings.Join(ev.events(), "\n"); !strings.Contains(got, "Abandoned: namespace p1 is bound to no temco project") || !strings.Contains(got, o.Status.Path) {
		t.Errorf("events %q", got)
	}
}
