package hub

import (
	"context"
	"net/http"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	v1 "github.com/temco/temco/hubapi/v1alpha1"
)

// projects is the Project reconciler as setup registers it, on a fake cluster and API.
type projects struct {
	api    *fakeAPI
	kube   client.Client
	events *fakeEvents
	g      *generic[*v1.Project]
}

func newProjects(t *testing.T, objs ...client.Object) *projects {
	api := newFakeAPI(t)
	kube := newKube(t, objs...)
	ev := &fakeEvents{}
	r := &Reconciler{Kube: kube, API: api.client(), Events: ev, Namespace: "temco-system"}
	return &projects{api: api, kube: kube, events: ev, g: &generic[*v1.Project]{r, projectOps}}
}

func (p *projects) reconcile(t *testing.T, name string) ctrl.Result {
	t.Helper()
	res, err := p.g.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Name: name}})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func (p *projects) get(t *testing.T, name string) *v1.Project {
	t.Helper()
	var o v1.Project
	if err := p.kube.Get(context.Background(), types.NamespacedName{Name: name}, &o); err != nil {
		t.Fatal(err)
	}
	return &o
}

func condition(t *testing.T, o *v1.Project, typ string) metav1.Condition {
	t.Helper()
	c := meta.FindStatusCondition(o.Status.Conditions, typ)
	if c == nil {
		t.Fatalf("no %s condition in %v", typ, o.Status.Conditions)
	}
	return *c
}

func TestReconcileCreatesANewProject(t *testing.T) {
	p := newProjects(t, &v1.Project{ObjectMeta: metav1.ObjectMeta{Name: "web", Generation: 3}})
	res := p.reconcile(t, "web")
	if res.RequeueAfter != defaultRecheck {
		t.Errorf("result %+v, want a recheck in %v", res, defaultRecheck)
	}
	w := p.api.writes()
	wantCalls(t, w, "POST /projects")
	if w[0].Owner != "hub:Project/web" {
		t.Errorf("owner %q", w[0].Owner)
	}
	o := p.get(t, "web")
	if !controllerutil.ContainsFinalizer(o, Finalizer) {
		t.Errorf("finalizers %v", o.Finalizers)
	}
	st := o.Status
	if st.ObservedGeneration != 3 || st.Owner != v1.OwnerHub || st.Path != "/v2/projects/web" || st.AppliedHash == "" {
		t.Errorf("status %+v", st)
	}
	for _, typ := range []string{v1.Accepted, v1.Ready} {
		if c := condition(t, o, typ); c.Status != metav1.ConditionTrue || c.ObservedGeneration != 3 {
			t.Errorf("%s = %+v", typ, c)
		}
	}
	if ev := p.events.events(); len(ev) != 0 {
		t.Errorf("events %v", ev)
	}

	p.api.reset() // nothing changed: nothing is written again
	p.reconcile(t, "web")
	wantCalls(t, p.api.all())
}

func TestReconcileUsesSpecName(t *testing.T) {
	p := newProjects(t, &v1.Project{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: v1.ProjectSpec{Named: v1.Named{Name: "shop"}}})
	p.reconcile(t, "web")
	if _, ok := p.api.item("/projects/shop"); !ok {
		t.Error("/projects/shop not created")
	}
	if got := p.get(t, "web").Status.Path; got != "/v2/projects/shop" {
		t.Errorf("path %q", got)
	}
}

func TestReconcileReportsARefusal(t *testing.T) {
	p := newProjects(t, &v1.Project{ObjectMeta: metav1.ObjectMeta{Name: "web", Generation: 1}})
	p.api.answer(http.MethodPost, "/projects", http.StatusBadRequest, `{"message":"bad thing"}`)
	res := p.reconcile(t, "web")
	if res.RequeueAfter <= 0 {
		t.Errorf("result %+v does not look again", res)
	}
	o := p.get(t, "web")
	c := condition(t, o, v1.Accepted)
	if c.Status != metav1.ConditionFalse || c.Message != "bad thing" || c.Reason != "Refused" {
		t.Errorf("Accepted = %+v", c)
	}
	if r := meta.FindStatusCondition(o.Status.Conditions, v1.Ready); r == nil || r.Status != metav1.ConditionFalse {
		t.Errorf("a refused object is not Ready=False: %v", o.Status.Conditions)
	}
	if o.Status.Owner != "" {
		t.Errorf("owner %q on an object whose resource was never written", o.Status.Owner)
	}
	p.reconcile(t, "web") // refused again, the same way: no second Event
	if ev := p.events.events(); len(ev) != 1 || ev[0] != "Refused: bad thing" {
		t.Errorf("events %q, want one Refused", ev)
	}
	p.api.answer(http.MethodPost, "/projects", http.StatusBadRequest, `{"message":"another thing"}`)
	p.reconcile(t, "web")
	if ev := p.events.events(); len(ev) != 2 || ev[1] != "Refused: another thing" {
		t.Errorf("events %q, want a second Refused for a new message", ev)
	}
}

func TestReconcileReturnsServerErrorsForBackoff(t *testing.T) {
	p := newProjects(t, &v1.Project{ObjectMeta: metav1.ObjectMeta{Name: "web"}})
	p.api.answer(http.MethodPost, "/projects", http.StatusServiceUnavailable, `{"message":"store down"}`)
	if _, err := p.g.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Name: "web"}}); err == nil {
		t.Fatal("a 503 was swallowed")
	}
	if ev := p.events.events(); len(ev) != 0 {
		t.Errorf("events %v for a transient error", ev)
	}
}

func TestReconcileDeletesTheResourceThenTheFinalizer(t *testing.T) {
	p := newProjects(t, &v1.Project{ObjectMeta: metav1.ObjectMeta{Name: "web"}})
	p.reconcile(t, "web")
	if err := p.kube.Delete(context.Background(), p.get(t, "web")); err != nil {
		t.Fatal(err)
	}
	if o := p.get(t, "web"); o.DeletionTimestamp.IsZero() { // the finalizer holds it
		t.Fatal("no deletionTimestamp")
	}
	p.api.reset()
	if res := p.reconcile(t, "web"); res.RequeueAfter != 0 {
		t.Errorf("result %+v", res)
	}
	w := p.api.writes()
	wantCalls(t, w, "DELETE /projects/web")
	if w[0].Owner != "hub:Project/web" {
		t.Errorf("owner %q", w[0].Owner)
	}
	if _, ok := p.api.item("/projects/web"); ok {
		t.Error("/projects/web is still in temco")
	}
	err := p.kube.Get(context.Background(), types.NamespacedName{Name: "web"}, &v1.Project{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("the object is still there (err %v): the finalizer was not removed", err)
	}
}

func TestReconcileKeepsTheFinalizerWhileTheDeleteIsRefused(t *testing.T) {
	p := newProjects(t, &v1.Project{ObjectMeta: metav1.ObjectMeta{Name: "web"}})
	p.reconcile(t, "web")
	if err := p.kube.Delete(context.Background(), p.get(t, "web")); err != nil {
		t.Fatal(err)
	}
	p.api.answer(http.MethodDelete, "/projects/web", http.StatusConflict, `{"message":"the project has composite apps"}`)
	if res := p.reconcile(t, "web"); res.RequeueAfter != retryRefused {
		t.Errorf("result %+v", res)
	}
	o := p.get(t, "web")
	if !controllerutil.ContainsFinalizer(o, Finalizer) {
		t.Error("finalizer removed though temco kept the project")
	}
	if c := condition(t, o, v1.Ready); c.Reason != "DeleteRefused" || c.Message != "the project has composite apps" {
		t.Errorf("Ready = %+v", c)
	}
}

// An object whose temco name apply refused wrote nothing: deleting it sends nothing and
// does not wait for temco.
func TestReconcileDeletesAnObjectWhoseNameWasRefused(t *testing.T) {
	p := newProjects(t, &v1.Project{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: v1.ProjectSpec{Named: v1.Named{Name: ".."}}})
	p.reconcile(t, "web")
	if c := condition(t, p.get(t, "web"), v1.Accepted); c.Status != metav1.ConditionFalse {
		t.Fatalf("Accepted = %+v", c)
	}
	if err := p.kube.Delete(context.Background(), p.get(t, "web")); err != nil {
		t.Fatal(err)
	}
	p.reconcile(t, "web")
	wantCalls(t, p.api.writes())
	if err := p.kube.Get(context.Background(), types.NamespacedName{Name: "web"}, &v1.Project{}); !apierrors.IsNotFound(err) {
		t.Errorf("the object is still there (err %v)", err)
	}
}

// A DIG with a bad name, its own or an intent's: deleting it sends nothing to a bad path
// (no status read, no terminate there) and removes the finalizer.
func TestReconcileDeletesADIGWithARefusedName(t *testing.T) {
	for _, c := range []struct{ name, intent string }{{"prod", "../../../logical-clouds/x"}, {"..", "gac"}, {"a/b", "gac"}} {
		t.Run(c.name+" "+c.intent, func(t *testing.T) {
			o := dig()
			o.Finalizers = []string{Finalizer}
			o.Spec.Name = c.name
			o.Spec.ActionIntents = []v1.ActionIntent{{Controller: "genericK8sIntent", Resource: "generic-k8s-intents", Name: c.intent}}
			o.Status.Conditions = []metav1.Condition{{Type: v1.Accepted, Status: metav1.ConditionFalse, Reason: "Refused", Message: "bad name", LastTransitionTime: metav1.Now()}}
			api := newFakeAPI(t)
			kube := newKube(t, o)
			g := &generic[*v1.DeploymentIntentGroup]{&Reconciler{Kube: kube, API: api.client(), Events: &fakeEvents{}}, kindOps[*v1.DeploymentIntentGroup]{kind: "DeploymentIntentGroup",
				new: func() *v1.DeploymentIntentGroup { return &v1.DeploymentIntentGroup{} },
				build: func(ctx context.Context, r *Reconciler, o *v1.DeploymentIntentGroup, project string) (*node, error) {
					return digNode(ctx, r.filesFor(o), project, o)
				},
				after: digAfter, finalize: digFinalize}}
			ctx := context.Background()
			if err := kube.Delete(ctx, o); err != nil {
				t.Fatal(err)
			}
			key := types.NamespacedName{Namespace: o.Namespace, Name: o.Name}
			if _, err := g.Reconcile(ctx, ctrl.Request{NamespacedName: key}); err != nil {
				t.Fatal(err)
			}
			for _, call := range api.all() {
				if err := checkPath(strings.TrimSuffix(call.Path, "/status")); err != nil {
					t.Errorf("%s sent to a refused path", call)
				}
			}
			if err := kube.Get(ctx, key, &v1.DeploymentIntentGroup{}); !apierrors.IsNotFound(err) {
				t.Errorf("the DIG is still there (err %v): the finalizer stuck", err)
			}
		})
	}
}

// An object refused because REST holds its name never owned anything: deleting it
// removes the finalizer without touching REST's resource.
func TestReconcileDeletesAnObjectWhoseNameRESTHoldsWithoutTouchingIt(t *testing.T) {
	p := newProjects(t, &v1.Project{ObjectMeta: metav1.ObjectMeta{Name: "web"}})
	p.api.seed("/projects/web", "", map[string]any{"metadata": map[string]any{"name": "web"}, "spec": map[string]any{}})
	p.reconcile(t, "web")
	if c := condition(t, p.get(t, "web"), v1.Accepted); c.Status != metav1.ConditionFalse {
		t.Fatalf("Accepted = %+v, want False (REST owns /projects/web)", c)
	}
	if err := p.kube.Delete(context.Background(), p.get(t, "web")); err != nil {
		t.Fatal(err)
	}
	p.api.reset()
	p.reconcile(t, "web")
	if w := p.api.writes(); len(w) != 0 {
		t.Errorf("writes %v to a resource REST owns", w)
	}
	if _, ok := p.api.item("/projects/web"); !ok {
		t.Error("REST's /projects/web was deleted")
	}
	if err := p.kube.Get(context.Background(), types.NamespacedName{Name: "web"}, &v1.Project{}); !apierrors.IsNotFound(err) {
		t.Errorf("the object is still there (err %v)", err)
	}
}

// Each object's acceptance goes to temco's diagnostics when it changes, and is withdrawn
// when the object goes.
func TestReconcileReportsToDiagnostics(t *testing.T) {
	p := newProjects(t, &v1.Project{ObjectMeta: metav1.ObjectMeta{Name: "web", Generation: 2}})
	p.api.answer(http.MethodPost, "/projects", http.StatusBadRequest, `{"message":"bad thing"}`)
	p.reconcile(t, "web")
	p.reconcile(t, "web") // the same refusal: not sent again
	r := p.api.reports()
	if len(r) != 1 || r[0].Method != http.MethodPut || r[0].Path != "/diagnostics/declarations" || r[0].Owner != "hub:Project/web" {
		t.Fatalf("reports %v", r)
	}
	b := r[0].Body
	if b["object"] != "Project/web" || b["kind"] != "Project" || b["project"] != "web" || b["accepted"] != false ||
		b["message"] != "bad thing" || b["generation"] != float64(2) {
		t.Errorf("report %v", b)
	}
	p.api.reset()
	p.api.answer(http.MethodPost, "/projects", 0, "") // accepted now
	p.reconcile(t, "web")
	if r := p.api.reports(); len(r) != 1 || r[0].Body["accepted"] != true || r[0].Body["path"] != "/v2/projects/web" {
		t.Errorf("reports after the acceptance %v", r)
	}
	if err := p.kube.Delete(context.Background(), p.get(t, "web")); err != nil {
		t.Fatal(err)
	}
	p.api.reset()
	p.reconcile(t, "web")
	if r := p.api.reports(); len(r) != 1 || r[0].Method != http.MethodDelete || r[0].Query != "object=Project%2Fweb" {
		t.Errorf("reports after the delete %v", r)
	}
}

// An operation the API refuses (a logical cloud's instantiate) is reported as a refusal
// of the object: not Accepted, not Ready, why, and an Event once.
func TestReconcileReportsARefusedOperation(t *testing.T) {
	api := newFakeAPI(t)
	o := &v1.LogicalCloud{ObjectMeta: metav1.ObjectMeta{Name: "p1-default"},
		Spec: v1.LogicalCloudSpec{Named: v1.Named{Name: "default"}, Project: "p1", Level: "0", Clusters: []v1.ClusterReference{{Provider: "local", Cluster: "c1"}}}}
	kube := newKube(t, o)
	ev := &fakeEvents{}
	g := &generic[*v1.LogicalCloud]{&Reconciler{Kube: kube, API: api.client(), Events: ev, Namespace: "temco-system"}, cloudOps}
	api.setStatus("/projects/p1/logical-clouds/default", map[string]any{})
	api.answer(http.MethodPost, "/projects/p1/logical-clouds/default/instantiate", http.StatusConflict, `{"message":"cluster c1 is unreachable"}`)
	for range 2 {
		if _, err := g.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Name: "p1-default"}}); err != nil {
			t.Fatal(err)
		}
	}
	var got v1.LogicalCloud
	if err := kube.Get(context.Background(), types.NamespacedName{Name: "p1-default"}, &got); err != nil {
		t.Fatal(err)
	}
	acc, rdy := meta.FindStatusCondition(got.Status.Conditions, v1.Accepted), meta.FindStatusCondition(got.Status.Conditions, v1.Ready)
	if acc == nil || acc.Status != metav1.ConditionFalse || acc.Message != "cluster c1 is unreachable" || rdy == nil || rdy.Status != metav1.ConditionFalse {
		t.Errorf("conditions %+v", got.Status.Conditions)
	}
	if got.Status.Owner != v1.OwnerHub {
		t.Errorf("owner %q: the cloud was written, its delete must remove it", got.Status.Owner)
	}
	if e := ev.events(); len(e) != 1 || e[0] != "Refused: cluster c1 is unreachable" {
		t.Errorf("events %q", e)
	}
	if r := api.reports(); len(r) != 1 || r[0].Body["project"] != "p1" || r[0].Body["accepted"] != false {
		t.Errorf("reports %v: the cloud's project not named", r)
	}
}

// The status records what the reconcile did (the operation it started): a change of the
// object by another writer between the hub's read and its status write must not lose it.
func TestReconcileWritesItsStatusOverAnotherWritersChange(t *testing.T) {
	p := newProjects(t)
	base := newKube(t, &v1.Project{ObjectMeta: metav1.ObjectMeta{Name: "web", Generation: 1}})
	changed := 0
	p.kube = interceptor.NewClient(base, interceptor.Funcs{
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			if changed == 0 { // someone annotates the object just before the hub's write
				var cur v1.Project
				if err := c.Get(ctx, client.ObjectKeyFromObject(obj), &cur); err != nil {
					return err
				}
				cur.Annotations = map[string]string{"team": "web"}
				if err := c.Update(ctx, &cur); err != nil {
					return err
				}
			}
			changed++
			return c.SubResource(sub).Update(ctx, obj, opts...)
		}})
	p.g.Kube = p.kube
	p.reconcile(t, "web")
	o := p.get(t, "web")
	if changed != 2 {
		t.Errorf("%d status writes, want a conflict and a second write", changed)
	}
	if o.Annotations["team"] != "web" || o.Status.AppliedHash == "" || condition(t, o, v1.Accepted).Status != metav1.ConditionTrue {
		t.Errorf("annotations %v, status %+v", o.Annotations, o.Status)
	}
}
