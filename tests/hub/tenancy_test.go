package hub

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/temco/temco/hubapi/v1alpha1"
	"github.com/temco/temco/internal/dev/testenv"
)

func rawJSON(t *testing.T, v any) *apiextensionsv1.JSON {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return &apiextensionsv1.JSON{Raw: b}
}

// refusedWith waits for o to be refused with a message holding want.
func refusedWith(t *testing.T, o client.Object, want string) {
	t.Helper()
	eventually(t, 2*time.Minute, fmt.Sprintf("%s refused", o.GetName()), func() error {
		if err := hub.Get(context.Background(), client.ObjectKeyFromObject(o), o); err != nil {
			return err
		}
		c := meta.FindStatusCondition(o.(interface{ StatusCommon() *v1.CommonStatus }).StatusCommon().Conditions, v1.Accepted)
		if c == nil || c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, want) {
			return fmt.Errorf("Accepted %+v, want False saying %q", c, want)
		}
		return nil
	})
}

// The hub acts with the project an admin bound the namespace to, never as the admin its
// token is: a namespace's writer gets exactly the tenant's rules. A DIG in team-a's
// namespace whose workflow intent (with a policy intent on it) or tac hook would run on
// team-b's task queue is refused with the API's tenant refusal and starts nothing; objects
// in a namespace named after project team-b, but bound to none, are refused and write
// nothing; team-a's bound namespace, named otherwise, writes into team-a.
func TestHubObjectsActAsTheirNamespacesProjectAlone(t *testing.T) {
	fleet(t)
	ctx := context.Background()
	create(t, &v1.Project{ObjectMeta: objMeta("", "team-a"), Spec: v1.ProjectSpec{Namespaces: []string{"team-a-apps"}}},
		&v1.Project{ObjectMeta: objMeta("", "team-b")})
	namespace(t, "team-a-apps")
	namespace(t, "team-b")
	for _, name := range []string{"team-a", "team-b"} {
		eventually(t, 2*time.Minute, name+" ready", func() error {
			var p v1.Project
			if err := hub.Get(ctx, client.ObjectKey{Name: name}, &p); err != nil {
				return err
			}
			return ready(&p.Status)
		})
	}
	app := func(ns string) *v1.CompositeApp {
		return &v1.CompositeApp{ObjectMeta: objMeta(ns, "shop-v1"), Spec: v1.CompositeAppSpec{Named: v1.Named{Name: "shop"}, Version: "v1",
			Apps:     []v1.App{{Name: "web", ChartFrom: &v1.KeyRef{Name: "files", Key: "web.tgz"}}},
			Profiles: []v1.CompositeProfile{{Name: "prof", Profiles: []v1.AppProfile{{Name: "web-profile", App: "web", ArchiveFrom: &v1.KeyRef{Name: "files", Key: "profile.tgz"}}}}}}}
	}
	files := func(ns string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: objMeta(ns, "files"),
			BinaryData: map[string][]byte{"web.tgz": webChart(), "profile.tgz": testenv.Profile("message: tenant\n")}}
	}

	// A bound namespace, not named after its project, writes into that project.
	aApp := app("team-a-apps")
	create(t, files("team-a-apps"), aApp)
	eventually(t, 2*time.Minute, "team-a's composite app accepted", func() error {
		if err := hub.Get(ctx, client.ObjectKeyFromObject(aApp), aApp); err != nil {
			return err
		}
		if aApp.Status.Path != "/v2/projects/team-a/composite-apps/shop/v1" {
			return fmt.Errorf("path %q", aApp.Status.Path)
		}
		return ready(&aApp.Status)
	})

	// A namespace named after project team-b, bound to no project: nothing is written.
	bApp := app("team-b")
	create(t, files("team-b"), bApp)
	refusedWith(t, bApp, "namespace team-b is bound to no temco project")
	if c := restStatus(t, "/v2/projects/team-b/composite-apps/shop/v1"); c != http.StatusNotFound {
		t.Errorf("team-b's composite app over REST: %d, want 404", c)
	}

	// team-a's DIGs naming team-b's task queue.
	start := func(name string) map[string]any {
		return map[string]any{"workflowClient": map[string]any{}, "temporal": map[string]any{
			"workflowClientName":   "Greet",
			"workflowStartOptions": map[string]any{"ID": name, "TaskQueue": "team-b", "WorkflowExecutionTimeout": int64(time.Minute)}}}
	}
	hook := start("hook")
	hook["hookType"] = "pre-install"
	dig := func(name string, intents ...v1.ActionIntent) *v1.DeploymentIntentGroup {
		return &v1.DeploymentIntentGroup{ObjectMeta: objMeta("team-a-apps", name), Spec: v1.DeploymentIntentGroupSpec{
			CompositeApp: "shop", CompositeAppVersion: "v1", CompositeProfile: "prof", Version: "r1", LogicalCloud: "default",
			Placement:     []v1.AppPlacement{{App: "web", AllOf: []v1.AllOf{{ClusterMatch: v1.ClusterMatch{ClusterProvider: "local", ClusterLabel: "edge"}}}}},
			ActionIntents: intents, State: v1.StateInstantiated}}
	}
	policy := map[string]any{"policy": map[string]any{"policyName": "data"}, "actor": "temporal",
		"actorArg": map[string]any{"workFlowName": "to-b"}, "event": map[string]any{"id": "memory_usage_bytes"}}
	toB := dig("to-b",
		v1.ActionIntent{Controller: "workflow", Resource: "temporal-workflow-intents", Name: "to-b", Spec: rawJSON(t, start("to-b"))},
		v1.ActionIntent{Controller: "policy", Resource: "policy-intents", Name: "on-memory", Spec: rawJSON(t, policy)})
	hooked := dig("hooked", v1.ActionIntent{Controller: "tac", Resource: "temporal-action-controller", Name: "hook", Spec: rawJSON(t, hook)})
	create(t, toB, hooked)
	for _, d := range []*v1.DeploymentIntentGroup{toB, hooked} {
		refusedWith(t, d, "workflowStartOptions.TaskQueue")
		path := "/v2/projects/team-a/composite-apps/shop/v1/deployment-intent-groups/" + d.Name
		var st struct {
			States struct {
				Actions []struct{ State string } `json:"actions"`
			} `json:"states"`
		}
		if c := restJSON(t, http.MethodGet, path+"/status", nil, &st); c != http.StatusOK {
			t.Fatalf("%s status: %d", d.Name, c)
		}
		for _, a := range st.States.Actions {
			if a.State != "Created" {
				t.Errorf("%s was %s: nothing may start", d.Name, a.State)
			}
		}
	}
	for _, p := range []string{"temporal-workflow-intents/to-b", "policy-intents/on-memory"} {
		if c := restStatus(t, "/v2/projects/team-a/composite-apps/shop/v1/deployment-intent-groups/to-b/"+p); c != http.StatusNotFound {
			t.Errorf("%s over REST: %d, want 404", p, c)
		}
	}
	if c := restStatus(t, "/v2/projects/team-a/composite-apps/shop/v1/deployment-intent-groups/hooked/temporal-action-controller/hook"); c != http.StatusNotFound {
		t.Errorf("the hook over REST: %d, want 404", c)
	}

	// Bound afterwards, team-b's namespace writes into team-b (the Project's change wakes it).
	var pb v1.Project
	if err := hub.Get(ctx, client.ObjectKey{Name: "team-b"}, &pb); err != nil {
		t.Fatal(err)
	}
	pb.Spec.Namespaces = []string{"team-b"}
	if err := hub.Update(ctx, &pb); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "team-b's composite app accepted once bound", func() error {
		if err := hub.Get(ctx, client.ObjectKeyFromObject(bApp), bApp); err != nil {
			return err
		}
		return ready(&bApp.Status)
	})
	for _, o := range []client.Object{toB, hooked, aApp, bApp} {
		if err := hub.Delete(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
}
