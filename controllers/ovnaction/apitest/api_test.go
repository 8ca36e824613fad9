// Package apitest drives ovnaction's REST resources through temco's API against a real
// FerretDB, then runs the controller on what was stored, reading the cluster's kv-pairs
// and networks from the same store.
package apitest

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/temco/temco/contract"
	"github.com/temco/temco/contract/contracttest"
	"github.com/temco/temco/controllers"
	"github.com/temco/temco/controllers/apiharness"
	"github.com/temco/temco/controllers/ncm"
	"github.com/temco/temco/controllers/ovnaction"
	"github.com/temco/temco/internal/core/digstate"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/model"
	"github.com/temco/temco/internal/core/store"
)

func TestMain(m *testing.M) { apiharness.Main(m) }

var body = apiharness.Body

const (
	dig      = apiharness.DIG
	nci      = dig + "/network-controller-intent/nci"
	workload = nci + "/workload-intents/web"
	cluster  = "/cluster-providers/local/clusters/c1"
)

func newServer(t *testing.T) *apiharness.Server {
	t.Helper()
	return apiharness.ServeDIG(t, ovnaction.Controller)
}

// EMCO's paths and bodies; bad bodies are refused with the reason and store nothing.
func TestResourcesAsEMCOServesThem(t *testing.T) {
	s := newServer(t)
	s.Want("POST", dig+"/network-controller-intent", body("nci", nil), 201)
	s.Want("POST", dig+"/network-controller-intent", body("nci", nil), 409)

	wl := map[string]any{"app": "web", "workloadResource": "r1-web", "type": "Deployment"}
	s.Refused("POST", nci+"/workload-intents", body("web", map[string]any{"app": "web", "type": "Deployment"}), "spec.workloadResource is required")
	s.Refused("POST", nci+"/workload-intents", body("web", map[string]any{"app": "web", "workloadResource": "r1-web"}), "spec.type is required")
	s.Refused("POST", nci+"/workload-intents", body("web", map[string]any{"app": "-web", "workloadResource": "w", "type": "Deployment"}), `spec.app "-web" is invalid`)
	s.Want("POST", nci+"/workload-intents", body("web", wl), 201)
	s.Want("GET", dig+"/network-controller-intent/nope/workload-intents", nil, 404)

	ifs := workload + "/interfaces"
	s.Refused("POST", ifs, body("eth1", map[string]any{"name": "net1"}), "spec.interface is required")
	s.Refused("POST", ifs, body("eth1", map[string]any{"interface": "eth1"}), "spec.name is required")
	s.Refused("POST", ifs, body("eth1", map[string]any{"interface": "eth1", "name": "net1", "ipAddress": "10.0.0.300"}), `spec.ipAddress "10.0.0.300" is not an IP address`)
	s.Refused("POST", ifs, body("eth1", map[string]any{"interface": "eth1", "name": "net1", "macAddress": "0a:58"}), `spec.macAddress "0a:58" is not a MAC address`)
	s.Refused("POST", ifs, body("eth1", map[string]any{"interface": "eth1", "name": "net1", "defaultGateway": false}), `field "spec.defaultGateway" must be string`)
	s.Want("GET", ifs+"/eth1", nil, 404)

	// defaultGateway is stored as EMCO stores it: "false" unless given.
	got := s.Want("POST", ifs, body("eth1", map[string]any{"interface": "eth1", "name": "net1", "ipAddress": "172.16.33.5"}), 201)
	if !strings.Contains(got, `"spec":{"interface":"eth1","name":"net1","defaultGateway":"false","ipAddress":"172.16.33.5"}`) {
		t.Errorf("created interface = %s, want defaultGateway \"false\" and the IP address", got)
	}
	s.Refused("PUT", ifs+"/eth1", body("eth1", map[string]any{"interface": "eth1", "name": "net1", "macAddress": "nope"}), "spec.macAddress")
	got = s.Want("PUT", ifs+"/eth1", body("eth1", map[string]any{"interface": "eth1", "name": "net1", "defaultGateway": "true",
		"macAddress": "0a:58:ac:10:21:05"}), 200)
	if !strings.Contains(got, `"defaultGateway":"true","macAddress":"0a:58:ac:10:21:05"`) {
		t.Errorf("replaced interface = %s", got)
	}
	if list := s.Want("GET", ifs, nil, 200); strings.Count(list, `"metadata"`) != 1 {
		t.Errorf("interfaces = %s, want eth1 only", list)
	}
	// What a workload intent names blocks its deletion; the intent goes after its children.
	s.Want("DELETE", nci, nil, 409)
	s.Want("DELETE", ifs+"/eth1", nil, 204)
	s.Want("DELETE", workload, nil, 204)
	s.Want("DELETE", nci, nil, 204)
}

// The controller reads the intent the API stored and the cluster's kv-pairs and
// networks: it refuses an interface while the cluster's network intents are not applied,
// and once they are, annotates the Deployment without Multus, as the kv-pairs say.
func TestControllerReadsWhatTheAPIStored(t *testing.T) {
	s := newServer(t)
	ctx := context.Background()
	for _, d := range []*store.Doc{
		{ID: "/cluster-providers/local", Kind: model.KindClusterProvider, Name: "local", Body: `{"metadata":{"name":"local"}}`},
		{ID: cluster, Parent: "/cluster-providers/local", Kind: model.KindCluster, Name: "c1", Body: `{"metadata":{"name":"c1"}}`},
		{ID: cluster + "/networks/net1", Parent: cluster, Kind: ncm.KindNetwork, Name: "net1",
			Body: `{"metadata":{"name":"net1"},"spec":{"cniType":"ovn4nfv","ipv4Subnets":[{"name":"s","subnet":"172.16.33.0/24"}]}}`},
	} {
		if err := s.Store.Create(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	s.Want("POST", cluster+"/kv-pairs", body("cni", map[string]any{"kv": []any{
		map[string]any{"CNI-Networking-Nodus-CNI-For-all-interfaces": "true"}}}), 201)
	s.Want("POST", dig+"/network-controller-intent", body("nci", nil), 201)
	s.Want("POST", nci+"/workload-intents", body("web", map[string]any{"app": "web", "workloadResource": "web", "type": "Deployment"}), 201)
	s.Want("POST", workload+"/interfaces", body("eth1", map[string]any{"interface": "eth1", "name": "net1"}), 201)

	dep := `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"},"spec":{"template":{"spec":{"containers":[{"name":"app"}]}}}}`
	f := func() *contracttest.Fake {
		return &contracttest.Fake{In: contract.Input{Project: "p", CompositeApp: "ca", CompositeAppVersion: "v1", DeploymentIntentGroup: "dig",
			Intent: "nci", Operation: contract.OpInstantiate},
			AppList: []contract.App{{Name: "web", Clusters: []string{"local+c1"}}},
			Objects: map[string][]contract.Resource{"web": {{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", Manifest: json.RawMessage(dep)}}}}
	}
	ctrl := ovnaction.Controller.New(controllers.Deps{Store: s.Store})

	err := ctrl.Run(ctx, f())
	var refusal *contract.Refusal
	if !errors.As(err, &refusal) || !strings.Contains(err.Error(), `interface "eth1"`) || !strings.Contains(err.Error(), "are Created, not applied") {
		t.Fatalf("before the networks are applied: err = %v, want a refusal naming the interface and the state", err)
	}

	if _, err := digstate.Change(ctx, s.Store, cluster, func(lifecycle.StateInfo) ([]lifecycle.Action, error) {
		return []lifecycle.Action{{State: lifecycle.StateApplied}}, nil
	}); err != nil {
		t.Fatal(err)
	}
	applied := f()
	if err := ctrl.Run(ctx, applied); err != nil {
		t.Fatal(err)
	}
	want := `{"spec":{"template":{"metadata":{"annotations":{"k8s.plugin.opnfv.org/nfn-network":` +
		`"{\"type\":\"ovn4nfv\",\"interface\":[{\"interface\":\"eth1\",\"name\":\"net1\",\"defaultGateway\":\"false\"}]}"}}}}}`
	if len(applied.Edits) != 1 || string(applied.Edits[0].Data) != want || applied.Edits[0].Type != contract.PatchMerge {
		t.Fatalf("edits = %+v, want one merge patch %s", applied.Edits, want)
	}
}
