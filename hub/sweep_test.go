package hub

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/temco/temco/api"
	"github.com/temco/temco/controllers"
	"github.com/temco/temco/controllers/cacerts"
	"github.com/temco/temco/controllers/ncm"
	"github.com/temco/temco/controllers/registry"
	"github.com/temco/temco/controllers/workflowmgr"
	feature "github.com/temco/temco/features"
	features "github.com/temco/temco/features/registry"
	v1 "github.com/temco/temco/hubapi/v1alpha1"
)

// The hub's escape sweep, beside the REST one (api/sweep_test.go, which proves that a
// request narrowed to project A is refused on B's routes and admin-only ones exactly as
// A's tenant is). Here: whatever a namespaced object of every hub kind names — B's
// project, names that try to climb out of A's paths, an intent in any collection a DIG has
// in the API's route table — every request the hub makes for it carries A's authority
// and stays below /projects/A/, or nothing is sent at all.

const digRoute = "/v2/projects/:project/composite-apps/:compositeApp/:version/deployment-intent-groups/:deploymentIntentGroup/"

// digCollections are the collections under a DIG that take a POST, from the route table
// of the API as cmd/temco wires it: the action intents' (and the DIG's own) resources.
func digCollections(t *testing.T) []string {
	workflows := &workflowmgr.Temporal{}
	srv := &api.Server{Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Controllers: controllers.API(registry.All, controllers.APIDeps{Workflows: workflows}),
		Kinds:       slices.Concat(ncm.Kinds, cacerts.Kinds, workflowmgr.Kinds(workflows))}
	for _, f := range features.All { // the features' resources too (capacity placements, policy intents)
		if f.API != nil {
			srv.Extensions = append(srv.Extensions, f.API(feature.Mounting{}))
		}
	}
	var out []string
	for _, r := range srv.Handler().Routes() {
		coll, ok := strings.CutPrefix(r.Path, digRoute)
		if ok && r.Method == http.MethodPost && !strings.Contains(coll, "/") {
			out = append(out, coll)
		}
	}
	slices.Sort(out)
	out = slices.Compact(out)
	if len(out) < 20 {
		t.Fatalf("the route table has %d collections under a DIG: the enumeration is broken (%v)", len(out), out)
	}
	return out
}

// hostile are the names an object of namespace team-a (bound to project pa) gives
// whatever it names: B's project itself, and climbs out of A's paths.
var hostile = []string{"pb", "../pb", "..", "pb/../../pb", "%2e%2e", "pb%2Fx"}

func TestSweepEveryHubObjectActsAsItsNamespacesProject(t *testing.T) {
	collections := digCollections(t)
	type kind struct {
		name      string
		objects   []client.Object
		reconcile func(r *Reconciler, key types.NamespacedName) error
	}
	var digs, apps []client.Object
	objectName := strings.NewReplacer("/", "-", ".", "-", "%", "-").Replace
	for i, bad := range hostile {
		// What the DIG itself names.
		d := dig()
		d.Namespace, d.Name = "team-a", "d-"+objectName(bad)
		d.Spec.Name, d.Spec.CompositeApp, d.Spec.LogicalCloud, d.Spec.CompositeProfile = bad, bad, bad, bad
		digs = append(digs, d)
		// What its intents name, in every collection of a DIG (its composite app is there).
		for _, coll := range collections {
			d := dig()
			d.Namespace, d.Name = "team-a", "i-"+strconv.Itoa(i)+"-"+coll
			d.Spec.CompositeApp, d.Spec.CompositeAppVersion = "shop", "v1"
			d.Spec.ActionIntents = []v1.ActionIntent{{Controller: bad, Resource: coll, Name: bad,
				Spec:      js(t, map[string]any{"project": "pb", "clusterProvider": bad, "taskQueue": "pb"}),
				Resources: []v1.IntentResource{{Resource: "resources", Name: bad, Spec: js(t, map[string]any{"project": "pb"})}}}}
			digs = append(digs, d)
		}
		apps = append(apps, &v1.CompositeApp{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "a-" + objectName(bad)},
			Spec: v1.CompositeAppSpec{Named: v1.Named{Name: bad}, Version: bad,
				Apps: []v1.App{{Name: bad, ChartFrom: &v1.KeyRef{Name: "files", Key: "web.tgz"}}},
				Profiles: []v1.CompositeProfile{{Name: bad, Profiles: []v1.AppProfile{{Name: bad, App: bad,
					Archive: &v1.ChartSource{URL: "https://x/p.tgz"}}}}}}})
	}
	// The intents' DIG path is one of names: only the intents' own names are hostile there.
	for _, bad := range hostile[:1] {
		d := dig()
		d.Namespace, d.Name = "team-a", "valid-"+bad
		d.Spec.CompositeApp, d.Spec.CompositeAppVersion = "shop", "v1"
		digs = append(digs, d)
	}
	for _, k := range []kind{
		{"DeploymentIntentGroup", digs, func(r *Reconciler, key types.NamespacedName) error {
			_, err := (&generic[*v1.DeploymentIntentGroup]{r, digOps}).Reconcile(context.Background(), ctrl.Request{NamespacedName: key})
			return err
		}},
		{"CompositeApp", apps, func(r *Reconciler, key types.NamespacedName) error {
			_, err := (&generic[*v1.CompositeApp]{r, compositeAppOps}).Reconcile(context.Background(), ctrl.Request{NamespacedName: key})
			return err
		}},
	} {
		t.Run(k.name, func(t *testing.T) {
			sent := 0
			for _, o := range k.objects {
				api := newFakeAPI(t)
				api.seed("/projects/pa/composite-apps/shop/v1", "", map[string]any{"metadata": map[string]any{"name": "shop"}, "spec": map[string]any{"compositeAppVersion": "v1"}})
				files := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "files"}, BinaryData: map[string][]byte{"web.tgz": []byte("chart")}}
				objs := []client.Object{o, binding("pa", "team-a"), binding("pb", "team-b"), files}
				r := &Reconciler{Kube: newKube(t, objs...), API: api.client(), Events: &fakeEvents{}}
				if err := k.reconcile(r, client.ObjectKeyFromObject(o)); err != nil {
					t.Fatalf("%s: %v", o.GetName(), err)
				}
				for _, c := range api.all() {
					if strings.HasPrefix(c.Path, "/diagnostics/") {
						continue // the hub's own report
					}
					sent++
					if c.ActAs != "project:pa" || !strings.HasPrefix(c.Path, "/projects/pa/") || strings.Contains(c.Path, "..") {
						t.Errorf("%s: %s acting as %q", o.GetName(), c, c.ActAs)
					}
				}
			}
			if sent == 0 {
				t.Error("no request sent at all: the sweep proves nothing")
			}
			t.Logf("%d objects, %d requests", len(k.objects), sent)
		})
	}
}
