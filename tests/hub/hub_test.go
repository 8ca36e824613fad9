package hub

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	apiclient "github.com/temco/temco/client"
	v1 "github.com/temco/temco/hubapi/v1alpha1"
	"github.com/temco/temco/internal/dev/devstack"
	"github.com/temco/temco/internal/dev/testenv"
)

func objMeta(ns, name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: ns, Name: name} }

// webChart is a chart with a ConfigMap whose message is a value, and a Deployment.
func webChart() []byte {
	return testenv.Chart("web", "replicas: 1\nmessage: default\n", map[string]string{"all.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: web-config
data:
  message: {{ .Values.message | quote }}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: {{ .Values.replicas }}
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: main, image: registry.local/web:1}]
`})
}

var fleetDeclared bool

// fleet declares (once for the package's tests) provider "local" with the stack's clusters (label edge), project
// "shopping" bound to its namespace and an admin logical cloud "default" over both clusters,
// and composite app shop v1 (chart and profile from ConfigMaps).
func fleet(t *testing.T) {
	if fleetDeclared {
		return
	}
	fleetDeclared = true
	ctx := context.Background()
	create(t, &v1.ClusterProvider{ObjectMeta: objMeta("", "local")})
	var refs []v1.ClusterReference
	for _, c := range stack.Clusters {
		kc, err := os.ReadFile(c.Kubeconfig())
		if err != nil {
			t.Fatal(err)
		}
		create(t, &corev1.Secret{ObjectMeta: objMeta(devstack.HubNamespace, c.Name+"-kubeconfig"), Data: map[string][]byte{"kubeconfig": kc}},
			&v1.Cluster{ObjectMeta: objMeta("", "local-"+c.Name), Spec: v1.ClusterSpec{Named: v1.Named{Name: c.Name}, Provider: "local",
				Kubeconfig: v1.KeyRef{Kind: "Secret", Name: c.Name + "-kubeconfig", Key: "kubeconfig"}, Labels: []string{"edge"}}})
		refs = append(refs, v1.ClusterReference{Provider: "local", Cluster: c.Name})
	}
	create(t, &v1.Project{ObjectMeta: objMeta("", "shopping"), Spec: v1.ProjectSpec{Namespaces: []string{"shopping"}}})
	namespace(t, "shopping")
	create(t, &v1.LogicalCloud{ObjectMeta: objMeta("", "shopping-default"),
		Spec: v1.LogicalCloudSpec{Named: v1.Named{Name: "default"}, Project: "shopping", Level: "0", Clusters: refs}},
		&corev1.ConfigMap{ObjectMeta: objMeta("shopping", "shop-files"),
			BinaryData: map[string][]byte{"web.tgz": webChart(), "web-profile.tgz": testenv.Profile("message: profile\n")}},
		&v1.CompositeApp{ObjectMeta: objMeta("shopping", "shop-v1"), Spec: v1.CompositeAppSpec{Named: v1.Named{Name: "shop"}, Version: "v1",
			Apps: []v1.App{{Name: "web", ChartFrom: &v1.KeyRef{Name: "shop-files", Key: "web.tgz"}}},
			Profiles: []v1.CompositeProfile{{Name: "prof", Profiles: []v1.AppProfile{{Name: "web-profile", App: "web",
				ArchiveFrom: &v1.KeyRef{Name: "shop-files", Key: "web-profile.tgz"}}}}}}})
	for _, name := range []string{"local", "local-cluster1", "local-cluster2", "shopping", "shopping-default"} {
		var o client.Object
		switch {
		case name == "local":
			o = &v1.ClusterProvider{}
		case strings.HasPrefix(name, "local-"):
			o = &v1.Cluster{}
		case name == "shopping":
			o = &v1.Project{}
		default:
			o = &v1.LogicalCloud{}
		}
		eventually(t, 2*time.Minute, name+" ready", func() error {
			if err := hub.Get(ctx, client.ObjectKey{Name: name}, o); err != nil {
				return err
			}
			return ready(o.(interface{ StatusCommon() *v1.CommonStatus }).StatusCommon())
		})
	}
}

// ready is nil once the status says Accepted and Ready.
func ready(st *v1.CommonStatus) error {
	for _, c := range []string{v1.Accepted, v1.Ready} {
		if !meta.IsStatusConditionTrue(st.Conditions, c) {
			return fmt.Errorf("not %s: %+v", c, st.Conditions)
		}
	}
	return nil
}

// deployed is nil once DIG d (read into d) is Ready at revision with web-config's
// message on both clusters.
func deployed(t *testing.T, d *v1.DeploymentIntentGroup, revision int, message string) func() error {
	return func() error {
		if err := hub.Get(context.Background(), client.ObjectKeyFromObject(d), d); err != nil {
			return err
		}
		if err := ready(&d.Status.CommonStatus); err != nil {
			return err
		}
		if d.Status.Revision != revision {
			return fmt.Errorf("revision %d", d.Status.Revision)
		}
		if got := strings.Join(messages(t), ","); got != message+","+message {
			return fmt.Errorf("messages %s", got)
		}
		return nil
	}
}

func dig(name, profile, message string) *v1.DeploymentIntentGroup {
	return &v1.DeploymentIntentGroup{ObjectMeta: objMeta("shopping", name), Spec: v1.DeploymentIntentGroupSpec{
		CompositeApp: "shop", CompositeAppVersion: "v1", CompositeProfile: profile, Version: "r1", LogicalCloud: "default",
		OverrideValues: []v1.OverrideValues{{App: "web", Values: map[string]string{"message": message}}},
		Placement:      []v1.AppPlacement{{App: "web", AllOf: []v1.AllOf{{ClusterMatch: v1.ClusterMatch{ClusterProvider: "local", ClusterLabel: "edge"}}}}},
		State:          v1.StateInstantiated}}
}

// messages reads web-config's message on every cluster ("" where it is not).
func messages(t *testing.T) []string {
	var out []string
	for _, c := range stack.Clusters {
		cs, err := c.Clientset()
		if err != nil {
			t.Fatal(err)
		}
		cm, err := cs.CoreV1().ConfigMaps("default").Get(context.Background(), "web-config", metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			out = append(out, "")
		case err != nil:
			t.Fatal(err)
		default:
			out = append(out, cm.Data["message"])
		}
	}
	return out
}

// rest is the REST API through the client module, as a client of its own (no owner
// header).
func rest() *apiclient.Client {
	return &apiclient.Client{Base: strings.TrimSuffix(stack.API, "/v2"), Name: "hub-tests"}
}

// restJSON sends a request to the REST API as a client of its own and decodes a 2xx
// answer into out; path is below /v2, with /v2 as the hub's status shows it, or without.
func restJSON(t *testing.T, method, path string, body, out any) int {
	t.Helper()
	resp, err := rest().Send(context.Background(), apiclient.Request{Method: method, Path: strings.TrimPrefix(path, "/v2"), Body: body})
	if err != nil {
		t.Fatal(err)
	}
	if out != nil && resp.OK() {
		if err := json.Unmarshal(resp.Body, out); err != nil {
			t.Fatal(err)
		}
	}
	return resp.Code
}

// restStatus is the status code of a GET of path.
func restStatus(t *testing.T, path string) int {
	t.Helper()
	return restJSON(t, http.MethodGet, path, nil, nil)
}

// A whole deployment declared as objects on the hub: the fleet, a composite app whose
// chart and profile come from a ConfigMap, and a DIG asking to be Instantiated reach the
// clusters; a broken DIG beside it is reported and skipped; a change of the DIG's values
// is an update; deleting the DIG terminates it first.
func TestDeclaredDeploymentUpdatesAndTerminates(t *testing.T) {
	ctx := context.Background()
	fleet(t)
	create(t, dig("dig", "prof", "one"), dig("broken", "nope", "one"))

	var d v1.DeploymentIntentGroup
	getDIG := func(name string) error { return hub.Get(ctx, client.ObjectKey{Namespace: "shopping", Name: name}, &d) }
	eventually(t, 3*time.Minute, "dig instantiated", func() error {
		if err := getDIG("dig"); err != nil {
			return err
		}
		if err := ready(&d.Status.CommonStatus); err != nil {
			return err
		}
		if d.Status.State != "Instantiated" || d.Status.Revision < 1 {
			return fmt.Errorf("state %q revision %d", d.Status.State, d.Status.Revision)
		}
		return nil
	})
	if got := messages(t); strings.Join(got, ",") != "one,one" {
		t.Fatalf("web-config messages %v, want one on both clusters", got)
	}
	st := d.Status
	if st.ObservedGeneration != d.Generation || st.Owner != v1.OwnerHub || st.ContextID == "" || st.WorkflowID == "" ||
		st.Path != "/v2/projects/shopping/composite-apps/shop/v1/deployment-intent-groups/dig" {
		t.Errorf("status %+v", st)
	}
	if want := "[{web {2 2 0 0 0}}]"; st.Apps != 1 || st.Clusters != (v1.Counts{Total: 2, Deployed: 2}) || fmt.Sprint(st.AppClusters) != want {
		t.Errorf("apps %d clusters %+v by app %v, want %s", st.Apps, st.Clusters, st.AppClusters, want)
	}
	if c := restStatus(t, st.Path); c != http.StatusOK {
		t.Errorf("GET %s: %d", st.Path, c)
	}

	eventually(t, time.Minute, "broken refused", func() error {
		if err := getDIG("broken"); err != nil {
			return err
		}
		c := meta.FindStatusCondition(d.Status.Conditions, v1.Accepted)
		if c == nil || c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, "nope") {
			return fmt.Errorf("accepted %+v", c)
		}
		var evs eventsv1.EventList
		if err := hub.List(ctx, &evs, client.InNamespace("shopping")); err != nil {
			return err
		}
		for _, e := range evs.Items {
			if e.Regarding.Name == "broken" && e.Reason == "Refused" && strings.Contains(e.Note, "nope") {
				return nil
			}
		}
		return fmt.Errorf("no Refused event for broken among %d", len(evs.Items))
	})

	// Diagnostics list the refused DIG with why, beside the accepted one, both the hub's.
	eventually(t, time.Minute, "diagnostics", func() error {
		var diag struct {
			Resources []struct {
				Path, Source, Object string
				Accepted             bool
				Errors               []string
			} `json:"resources"`
		}
		if code := restJSON(t, http.MethodGet, "/v2/diagnostics?project=shopping", nil, &diag); code != http.StatusOK {
			return fmt.Errorf("GET /v2/diagnostics: %d", code)
		}
		var broken, good bool
		for _, r := range diag.Resources {
			switch r.Object {
			case "DeploymentIntentGroup/shopping/broken":
				broken = r.Source == "hub" && !r.Accepted && len(r.Errors) == 1 && strings.Contains(r.Errors[0], "nope")
			case "DeploymentIntentGroup/shopping/dig":
				good = r.Source == "hub" && r.Accepted && r.Path == st.Path
			}
		}
		if !broken || !good {
			return fmt.Errorf("broken listed %v, dig listed %v: %+v", broken, good, diag.Resources)
		}
		return nil
	})

	// A change of the configuration is an update: revision 2 on the clusters.
	if err := getDIG("dig"); err != nil {
		t.Fatal(err)
	}
	d.Spec.OverrideValues[0].Values["message"] = "two"
	if err := hub.Update(ctx, &d); err != nil {
		t.Fatal(err)
	}
	eventually(t, 3*time.Minute, "dig updated", func() error {
		if err := getDIG("dig"); err != nil {
			return err
		}
		if err := ready(&d.Status.CommonStatus); err != nil {
			return err
		}
		if d.Status.Revision != 2 || d.Status.ObservedGeneration != d.Generation {
			return fmt.Errorf("revision %d observed %d of %d", d.Status.Revision, d.Status.ObservedGeneration, d.Generation)
		}
		if got := messages(t); strings.Join(got, ",") != "two,two" {
			return fmt.Errorf("messages %v", got)
		}
		return nil
	})

	second := d.Status.Snapshot
	if second == "" || st.Snapshot == "" || second == st.Snapshot {
		t.Errorf("snapshots: revision 1 %q, revision 2 %q: want two ids", st.Snapshot, second)
	}

	// REST shows the hub as the DIG's owner and may not change it.
	var rest struct {
		Owner string `json:"owner"`
	}
	if code := restJSON(t, http.MethodGet, st.Path, nil, &rest); code != http.StatusOK || rest.Owner != "hub:DeploymentIntentGroup/shopping/dig" {
		t.Errorf("GET %s: %d, owner %q", st.Path, code, rest.Owner)
	}
	if code := restJSON(t, http.MethodPost, st.Path+"/terminate", nil, nil); code != http.StatusConflict {
		t.Errorf("a REST terminate of the hub's DIG: %d, want 409", code)
	}

	// A rollback asked for by annotation, naming revision 1's snapshot: revision 3 deploys
	// revision 1's objects again.
	d.Annotations = map[string]string{v1.AnnotationRollback: st.Snapshot}
	if err := hub.Update(ctx, &d); err != nil {
		t.Fatal(err)
	}
	eventually(t, 3*time.Minute, "dig rolled back", func() error {
		if err := getDIG("dig"); err != nil {
			return err
		}
		if err := ready(&d.Status.CommonStatus); err != nil {
			return err
		}
		if d.Status.Revision != 3 || d.Status.Snapshot != st.Snapshot || d.Status.RollbackRequest != st.Snapshot {
			return fmt.Errorf("revision %d snapshot %q rollback %q", d.Status.Revision, d.Status.Snapshot, d.Status.RollbackRequest)
		}
		if got := messages(t); strings.Join(got, ",") != "one,one" {
			return fmt.Errorf("messages %v", got)
		}
		return nil
	})

	// Deleting the object terminates the DIG, then deletes it from temco.
	if err := hub.Delete(ctx, &d); err != nil {
		t.Fatal(err)
	}
	eventually(t, 3*time.Minute, "dig terminated and gone", func() error {
		if err := getDIG("dig"); !apierrors.IsNotFound(err) {
			return fmt.Errorf("object still there (%v): %+v", err, d.Status.Conditions)
		}
		if got := messages(t); strings.Join(got, ",") != "," {
			return fmt.Errorf("messages %v", got)
		}
		return nil
	})
	if c := restStatus(t, st.Path); c != http.StatusNotFound {
		t.Errorf("GET %s after the delete: %d, want 404", st.Path, c)
	}
}
