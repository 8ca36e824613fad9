// Package apitest drives hpa's REST resources through temco's API against a real FerretDB,
// then runs both controllers on what was stored.
package apitest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/temco/temco/contract"
	"github.com/temco/temco/contract/contracttest"
	"github.com/temco/temco/controllers"
	"github.com/temco/temco/controllers/apiharness"
	"github.com/temco/temco/controllers/hpa"
)

func TestMain(m *testing.M) { apiharness.Main(m) }

var body = apiharness.Body

const (
	dig       = apiharness.DIG
	intent    = dig + "/hpa-intents/i1"
	consumer  = intent + "/hpa-resource-consumers/c1"
	resources = consumer + "/resource-requirements"
)

func newServer(t *testing.T) *apiharness.Server {
	t.Helper()
	return apiharness.ServeDIG(t, hpa.Placement, hpa.Action)
}

func TestResourcesValidateAsEMCOAndMore(t *testing.T) {
	s := newServer(t)
	s.Want("POST", dig+"/hpa-intents", body("i1", map[string]any{"app": "-web"}), 400)
	s.Want("POST", dig+"/hpa-intents", body("i1", map[string]any{"app": "web"}), 201)
	s.Want("POST", dig+"/hpa-intents", body("i1", map[string]any{"app": "web"}), 409)
	s.Want("POST", intent+"/hpa-resource-consumers", body("c1", map[string]any{"kind": "Deployment"}), 400)
	s.Want("POST", intent+"/hpa-resource-consumers", body("c1", map[string]any{"name": "web", "kind": "Deployment", "apiVersion": "apps/v1"}), 201)
	s.Want("POST", dig+"/hpa-intents/nope/hpa-resource-consumers/c1/resource-requirements", body("r", nil), 404)

	cpu := map[string]any{"allocatable": true, "resource": map[string]any{"name": "cpu", "requests": 2, "limits": 4}}
	msg := s.Want("POST", resources, body("cpu", cpu), 400)
	if !strings.Contains(msg, "has no spec.container") {
		t.Fatalf("allocatable requirement of a consumer without container: %s", msg)
	}
	s.Want("PUT", consumer, body("c1", map[string]any{"name": "web", "container": "app", "replicas": 2}), 200)
	s.Want("POST", resources, body("cpu", cpu), 201)
	s.Want("POST", resources, body("cpu2", cpu), 409) // a second cpu request for the container
	s.Want("POST", resources, body("zero", map[string]any{"allocatable": true, "resource": map[string]any{"name": "gpu.example.com/v", "requests": 0}}), 400)
	s.Want("POST", resources, body("over", map[string]any{"allocatable": true, "resource": map[string]any{"name": "memory", "requests": 5, "limits": 4}}), 400)
	s.Want("POST", resources, body("qat", map[string]any{"allocatable": false, "resource": map[string]any{"key": "qat", "value": "true"}}), 201)
	s.Want("PUT", consumer, body("c1", map[string]any{"name": "web"}), 409) // cpu needs the container

	got := s.Want("GET", resources+"/qat", nil, 200)
	if !strings.Contains(got, `"resource":{"key":"qat","value":"true"}`) {
		t.Fatalf("stored non-allocatable requirement = %s, want EMCO's flat resource with key and value only", got)
	}
	list := s.Want("GET", resources, nil, 200)
	if strings.Count(list, `"metadata"`) != 2 {
		t.Fatalf("list = %s, want cpu and qat", list)
	}
}

func TestControllersReadWhatTheAPIStored(t *testing.T) {
	s := newServer(t)
	s.Want("POST", dig+"/hpa-intents", body("i1", map[string]any{"app": "web"}), 201)
	s.Want("POST", intent+"/hpa-resource-consumers", body("c1", map[string]any{"name": "web", "container": "app", "replicas": 3}), 201)
	s.Want("POST", resources, body("mem", map[string]any{"allocatable": true, "resource": map[string]any{"name": "memory", "requests": 256, "units": "MB"}}), 201)

	in := contract.Input{Project: "p", CompositeApp: "ca", CompositeAppVersion: "v1", DeploymentIntentGroup: "dig",
		Intent: "whatever-the-dig-says", Operation: contract.OpInstantiate}
	dep := `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"},"spec":{"template":{"spec":{"containers":[{"name":"app"}]}}}}`
	f := &contracttest.Fake{In: in, AppList: []contract.App{{Name: "web", Clusters: []string{"p+c1"}, Groups: [][]string{{"p+c1", "p+c2"}}}},
		Objects: map[string][]contract.Resource{"web": {{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", Manifest: json.RawMessage(dep)}}}}
	deps := controllers.Deps{Store: s.Store, Admin: func(_ context.Context, cluster string) (*rest.Config, error) {
		return nil, fmt.Errorf("no kubeconfig for %s", cluster)
	}}

	if err := hpa.Action.New(deps).Run(context.Background(), f); err != nil {
		t.Fatal(err)
	}
	want := `{"spec":{"replicas":3,"template":{"spec":{"containers":[{"name":"app","resources":{"requests":{"memory":"256M"}}}]}}}}`
	if len(f.Edits) != 1 || string(f.Edits[0].Data) != want {
		t.Fatalf("edits = %+v, want one patch %s", f.Edits, want)
	}

	err := hpa.Placement.New(deps).Run(context.Background(), f)
	var refusal *contract.Refusal
	if err == nil || errors.As(err, &refusal) || !strings.Contains(err.Error(), "no kubeconfig for p+c1") {
		t.Fatalf("placement err = %v, want the (retryable) error reaching p+c1", err)
	}
}
