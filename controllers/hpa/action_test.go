package hpa

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"

	"github.com/temco/temco/contract"
	"github.com/temco/temco/contract/contracttest"
)

const webDeployment = `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"},
 "spec":{"replicas":1,"template":{"spec":{
  "nodeSelector":{"kubernetes.io/os":"linux"},
  "containers":[
   {"name":"sidecar","image":"proxy","resources":{"requests":{"cpu":"100m"}}},
   {"name":"app","image":"web","resources":{"requests":{"ephemeral-storage":"1Gi"},"limits":{"cpu":"8","ephemeral-storage":"2Gi"}}}]}}}}`

func runAction(t *testing.T, manifest string, intents ...intent) (*contracttest.Fake, error) {
	t.Helper()
	f := &contracttest.Fake{In: contract.Input{Operation: contract.OpInstantiate},
		AppList: []contract.App{{Name: "web", Clusters: []string{"p+c1"}}, {Name: "idle"}},
		Objects: map[string][]contract.Resource{"web": {
			{APIVersion: "v1", Kind: "Service", Name: "web", Manifest: json.RawMessage(`{"kind":"Service"}`)},
			{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", Manifest: json.RawMessage(manifest)}}}}
	a := &action{intents: fixedIntents(intents)}
	return f, a.Run(context.Background(), f)
}

// patched applies the edits to the Deployment as temco does.
func patched(t *testing.T, edits []contract.Edit) *appsv1.Deployment {
	t.Helper()
	doc := []byte(webDeployment)
	for _, e := range edits {
		if e.Op != contract.EditPatch || e.Kind != "Deployment" || e.Name != "web" || e.App != "web" || e.Type != contract.PatchStrategic {
			t.Fatalf("edit = %+v, want a strategic patch of Deployment web", e)
		}
		var err error
		if doc, err = strategicpatch.StrategicMergePatch(doc, e.Data, &appsv1.Deployment{}); err != nil {
			t.Fatalf("apply %s: %v", e.Data, err)
		}
	}
	d := &appsv1.Deployment{}
	if err := json.Unmarshal(doc, d); err != nil {
		t.Fatal(err)
	}
	return d
}

func TestActionPatchesTheConsumersDeployment(t *testing.T) {
	it := intent{Name: "hpa1", App: "web", Consumers: []consumer{{Name: "c",
		Spec: ConsumerSpec{Name: "web", Container: "app", Replicas: 3},
		Requirements: []requirement{
			{Name: "cpu", Spec: alloc("cpu", 2, 4)},
			{Name: "mem", Spec: alloc("memory", 512, 0)},
			{Name: "qat", Spec: label("feature.node.kubernetes.io/intel_qat", "true")},
		}}}}
	f, err := runAction(t, webDeployment, it)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Edits) != 1 {
		t.Fatalf("edits = %+v, want one patch", f.Edits)
	}
	d := patched(t, f.Edits)
	if *d.Spec.Replicas != 3 {
		t.Errorf("replicas = %d, want 3", *d.Spec.Replicas)
	}
	sel := d.Spec.Template.Spec.NodeSelector
	if sel["feature.node.kubernetes.io/intel_qat"] != "true" || sel["kubernetes.io/os"] != "linux" {
		t.Errorf("nodeSelector = %v, want the label added to the existing one", sel)
	}
	cs := d.Spec.Template.Spec.Containers
	if len(cs) != 2 || cs[0].Name != "sidecar" || cs[0].Resources.Requests.Cpu().String() != "100m" {
		t.Fatalf("containers = %+v, want sidecar untouched", cs)
	}
	want := map[string]string{
		"requests cpu": "2", "requests memory": "512M", "requests ephemeral-storage": "1Gi",
		"limits cpu": "4", "limits ephemeral-storage": "2Gi",
	}
	got := map[string]string{}
	for r, q := range cs[1].Resources.Requests {
		got["requests "+string(r)] = q.String()
	}
	for r, q := range cs[1].Resources.Limits {
		got["limits "+string(r)] = q.String()
	}
	if len(got) != len(want) {
		t.Errorf("app resources = %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("app %s = %q, want %q", k, got[k], v)
		}
	}
}

func TestActionLeavesReplicasAloneWhenNotGiven(t *testing.T) {
	it := webIntent(requirement{Name: "qat", Spec: label("qat", "true")})
	it.Consumers[0].Spec.Replicas = 0
	f, err := runAction(t, webDeployment, it)
	if err != nil {
		t.Fatal(err)
	}
	if d := patched(t, f.Edits); *d.Spec.Replicas != 1 || d.Spec.Template.Spec.NodeSelector["qat"] != "true" {
		t.Fatalf("deployment spec = %+v", d.Spec)
	}
	if strings.Contains(string(f.Edits[0].Data), "replicas") || strings.Contains(string(f.Edits[0].Data), "containers") {
		t.Fatalf("patch %s touches more than the node selector", f.Edits[0].Data)
	}
}

func TestActionSetsReplicasOfAConsumerWithoutRequirements(t *testing.T) {
	f, err := runAction(t, webDeployment, intent{Name: "hpa1", App: "web", Consumers: []consumer{{Name: "c", Spec: ConsumerSpec{Name: "web", Replicas: 4}}}})
	if err != nil {
		t.Fatal(err)
	}
	if d := patched(t, f.Edits); *d.Spec.Replicas != 4 {
		t.Fatalf("replicas = %d, want 4", *d.Spec.Replicas)
	}
}

func TestActionRefusesWhatItCannotPatch(t *testing.T) {
	cases := []struct {
		name     string
		consumer ConsumerSpec
		req      RequirementSpec
		want     string
	}{
		{"missing container", ConsumerSpec{Name: "web", Container: "ap"}, alloc("cpu", 1, 0),
			`hpa consumer "c" of intent "hpa1": Deployment "web" has no container "ap" (its containers: [sidecar app])`},
		{"missing deployment", ConsumerSpec{Name: "api", Container: "app"}, alloc("cpu", 1, 0), `app "web" has no Deployment "api"`},
		{"request above the container's limit", ConsumerSpec{Name: "web", Container: "app"}, alloc("cpu", 9, 0),
			`container "app" limits cpu to 8, below the requested 9`},
		{"extended resource without limits", ConsumerSpec{Name: "web", Container: "app"}, alloc("example.com/gpu", 1, 0),
			`resource requirement "r" requests 1 example.com/gpu without limits, which Kubernetes requires of a resource it does not overcommit: give it limits 1`},
		{"extended resource below its limits", ConsumerSpec{Name: "web", Container: "app"}, alloc("example.com/gpu", 1, 2),
			`resource requirement "r" requests 1 example.com/gpu with limits 2; Kubernetes does not overcommit example.com/gpu`},
		{"hugepages without limits", ConsumerSpec{Name: "web", Container: "app"}, alloc("hugepages-2Mi", 2, 0),
			`requests 2 hugepages-2Mi without limits`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			it := intent{Name: "hpa1", App: "web", Consumers: []consumer{{Name: "c", Spec: c.consumer, Requirements: []requirement{{Name: "r", Spec: c.req}}}}}
			f, err := runAction(t, webDeployment, it)
			var refusal *contract.Refusal
			if !errors.As(err, &refusal) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want a refusal saying %q", err, c.want)
			}
			if len(f.Edits) != 0 {
				t.Fatalf("edits = %+v, want none", f.Edits)
			}
		})
	}
}

func TestActionSkipsAppsWithoutClusters(t *testing.T) {
	it := webIntent(requirement{Name: "cpu", Spec: alloc("cpu", 1, 0)})
	it.App = "idle" // no clusters and no objects: nothing to patch, nothing to fail
	f, err := runAction(t, webDeployment, it)
	if err != nil || len(f.Edits) != 0 {
		t.Fatalf("edits = %+v, err = %v", f.Edits, err)
	}
}

// A limit the requirement gives replaces the container's, even a lower one; the
// container's other resources stay.
func TestActionRequirementLimitsReplaceTheContainers(t *testing.T) {
	f, err := runAction(t, webDeployment, webIntent(requirement{Name: "cpu", Spec: alloc("cpu", 1, 2)}))
	if err != nil {
		t.Fatal(err)
	}
	app := patched(t, f.Edits).Spec.Template.Spec.Containers[1]
	if app.Resources.Limits.Cpu().String() != "2" || app.Resources.Requests.Cpu().String() != "1" ||
		app.Resources.Limits.StorageEphemeral().String() != "2Gi" {
		t.Fatalf("app resources = %+v", app.Resources)
	}
}

// Kubernetes takes a resource it does not overcommit only at its limit: the requirement's,
// or the one the container keeps. Native resources may stay below theirs.
func TestActionRequestsUncommittableResourcesAtTheirLimits(t *testing.T) {
	withGPULimit := strings.Replace(webDeployment, `"limits":{"cpu":"8",`, `"limits":{"example.com/gpu":"1","cpu":"8",`, 1)
	cases := []struct {
		name     string
		req      RequirementSpec
		want     string // a part of the refusal; "" when it patches
		requests string // the container's example.com/gpu after the patch
	}{
		{"at the container's limit", alloc("example.com/gpu", 1, 0), "", "1"},
		{"above the container's limit", alloc("example.com/gpu", 2, 0), `resource requirement "r" requests 2 example.com/gpu, but container "app" limits it to 1`, ""},
		{"with its own limits", alloc("example.com/gpu", 2, 2), "", "2"},
		{"native resource below the container's limit", alloc("cpu", 2, 0), "", ""},
		{"kubernetes.io resource without limits", alloc("kubernetes.io/batteries", 1, 0), "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, err := runAction(t, withGPULimit, webIntent(requirement{Name: "r", Spec: c.req}))
			if c.want != "" {
				if err == nil || !strings.Contains(err.Error(), c.want) || len(f.Edits) != 0 {
					t.Fatalf("err = %v, edits = %+v; want a refusal saying %q", err, f.Edits, c.want)
				}
				return
			}
			if err != nil || len(f.Edits) != 1 {
				t.Fatalf("err = %v, edits = %+v; want one patch", err, f.Edits)
			}
			if c.requests == "" {
				return
			}
			doc, err := strategicpatch.StrategicMergePatch([]byte(withGPULimit), f.Edits[0].Data, &appsv1.Deployment{})
			if err != nil {
				t.Fatal(err)
			}
			d := &appsv1.Deployment{}
			if err := json.Unmarshal(doc, d); err != nil {
				t.Fatal(err)
			}
			res := d.Spec.Template.Spec.Containers[1].Resources
			req, lim := res.Requests["example.com/gpu"], res.Limits["example.com/gpu"]
			if req.String() != c.requests || lim.String() != c.requests {
				t.Fatalf("example.com/gpu requests %s, limits %s; want both %s", req.String(), lim.String(), c.requests)
			}
		})
	}
}
