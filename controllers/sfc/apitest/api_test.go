// Package apitest drives sfc's REST resources through temco's API against a real
// FerretDB, then runs the controller on what was stored.
package apitest

import (
	"cmp"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/temco/temco/contract"
	"github.com/temco/temco/contract/contracttest"
	"github.com/temco/temco/controllers"
	"github.com/temco/temco/controllers/apiharness"
	"github.com/temco/temco/controllers/sfc"
	"github.com/temco/temco/internal/core/store"
)

func TestMain(m *testing.M) { apiharness.Main(m) }

var body = apiharness.Body

const (
	ca    = "/projects/p/composite-apps/ca/v1"
	dig   = ca + "/deployment-intent-groups/dig"
	chain = dig + "/network-chains/ch"
)

// newServer serves sfc's resources over a store holding project p, composite app ca with
// apps slb and ngfw, and DIG dig.
func newServer(t *testing.T) *apiharness.Server {
	t.Helper()
	ctx := context.Background()
	s := apiharness.Serve(t, sfc.Controller)
	st := s.Store
	s.Want("POST", "/projects", body("p", nil), 201)
	s.Want("POST", "/projects/p/composite-apps", body("ca", map[string]any{"compositeAppVersion": "v1"}), 201)
	for _, app := range []string{"slb", "ngfw"} { // apps come with charts: stored directly
		if err := st.Create(ctx, &store.Doc{ID: ca + "/apps/" + app, Parent: ca, Kind: "app", Name: app, Body: `{"metadata":{"name":"` + app + `"}}`}); err != nil {
			t.Fatal(err)
		}
	}
	s.Want("POST", ca+"/deployment-intent-groups", body("dig", map[string]any{"compositeProfile": "cp", "version": "r1", "logicalCloud": "lc"}), 201)
	return s
}

func linkSpec(left, right, app string) map[string]any {
	return map[string]any{"leftNet": left, "rightNet": right, "linkLabel": "sfc-link=" + app, "app": app,
		"workloadResource": app, "resourceType": "Deployment"}
}

func selectorSpec(end, label string) map[string]any {
	return map[string]any{"chainEnd": end, "podSelector": map[string]any{"matchLabels": map[string]string{"sfc": label}},
		"namespaceSelector": map[string]any{"matchLabels": map[string]string{"sfc": label}}}
}

// EMCO's paths, bodies and validation, answered with what is wrong.
func TestResourcesValidateAsEMCO(t *testing.T) {
	s := newServer(t)
	s.Refused("POST", dig+"/network-chains", body("ch", map[string]any{"namespace": "default"}), `spec.chainType must be "Routing"`)
	s.Refused("POST", dig+"/network-chains", body("ch", map[string]any{"chainType": "Routing", "namespace": "Not_A_Namespace"}), "is not a namespace name")
	s.Want("POST", dig+"/network-chains", body("ch", map[string]any{"chainType": "Routing", "namespace": "default"}), 201)
	s.Want("POST", dig+"/network-chains", body("ch", map[string]any{"chainType": "Routing", "namespace": "default"}), 409)

	s.Refused("POST", chain+"/links", body("l1", map[string]any{"leftNet": "a", "rightNet": "b", "linkLabel": "slb", "app": "slb",
		"workloadResource": "slb", "resourceType": "Deployment"}), `spec.linkLabel "slb" is not a label key=value`)
	bad := linkSpec("a", "b", "slb")
	bad["resourceType"] = "Service"
	s.Refused("POST", chain+"/links", body("l1", bad), `spec.resourceType "Service" is not a kind of workload`)
	s.Want("POST", dig+"/network-chains/nope/links", body("l1", linkSpec("a", "b", "slb")), 404)
	s.Want("POST", chain+"/links", body("l1", linkSpec("left-net", "dyn1", "slb")), 201)

	s.Refused("POST", chain+"/client-selectors", body("s1", map[string]any{"chainEnd": "left",
		"podSelector": map[string]any{}, "namespaceSelector": map[string]any{"matchLabels": map[string]string{"sfc": "head"}}}),
		"spec.podSelector.matchLabels is required")
	s.Refused("POST", chain+"/client-selectors", body("s1", selectorSpec("up", "head")), `spec.chainEnd must be "left" or "right"`)
	s.Want("POST", chain+"/client-selectors", body("s1", selectorSpec("left", "head")), 201)

	s.Refused("POST", chain+"/provider-networks", body("pn", map[string]any{"chainEnd": "right", "providerNetwork": "pnet", "gatewayIp": "172.30.20"}),
		`spec.gatewayIp "172.30.20" is not an IPv4 address`)
	s.Want("POST", chain+"/provider-networks", body("pn", map[string]any{"chainEnd": "right", "providerNetwork": "pnet", "gatewayIp": "172.30.20.2"}), 201)

	got := s.Want("GET", chain+"/provider-networks/pn", nil, 200)
	if !strings.Contains(got, `"spec":{"chainEnd":"right","providerNetwork":"pnet","gatewayIp":"172.30.20.2","subnet":""}`) {
		t.Errorf("stored provider network = %s, want EMCO's fields", got)
	}
	if list := s.Want("GET", chain+"/links", nil, 200); strings.Count(list, `"metadata"`) != 1 {
		t.Errorf("links = %s, want l1", list)
	}
	// A link names its app, which cannot go while the link is there (as in EMCO).
	s.Want("DELETE", ca+"/apps/slb", nil, 409)
	s.Want("DELETE", chain+"/links/l1", nil, 204)
}

func TestControllerReadsWhatTheAPIStored(t *testing.T) {
	s := newServer(t)
	s.Want("POST", dig+"/network-chains", body("ch", map[string]any{"chainType": "Routing", "namespace": "default"}), 201)
	s.Want("POST", chain+"/links", body("b-ngfw", linkSpec("dyn1", "right-net", "ngfw")), 201)
	s.Want("POST", chain+"/links", body("a-slb", linkSpec("left-net", "dyn1", "slb")), 201)
	s.Want("POST", chain+"/client-selectors", body("z-head", selectorSpec("left", "head")), 201)
	s.Want("POST", chain+"/client-selectors", body("a-head2", selectorSpec("left", "head2")), 201)
	s.Want("POST", chain+"/provider-networks", body("pn", map[string]any{"chainEnd": "right", "providerNetwork": "pnet",
		"gatewayIp": "172.30.20.2", "subnet": "172.30.20.0/24"}), 201)

	dep := func(name string) []contract.Resource {
		return []contract.Resource{{APIVersion: "apps/v1", Kind: "Deployment", Name: name,
			Manifest: json.RawMessage(`{"spec":{"selector":{"matchLabels":{"app":"` + name + `"}}}}`)}}
	}
	f := &contracttest.Fake{In: contract.Input{Project: "p", CompositeApp: "ca", CompositeAppVersion: "v1", DeploymentIntentGroup: "dig",
		Controller: "sfc", Intent: "whatever-the-dig-says", Operation: contract.OpInstantiate},
		AppList: []contract.App{{Name: "slb", Clusters: []string{"p+c1"}}, {Name: "ngfw", Clusters: []string{"p+c1"}}},
		Objects: map[string][]contract.Resource{"slb": dep("slb"), "ngfw": dep("ngfw")}}
	if err := sfc.Controller.New(controllers.Deps{Store: s.Store}).Run(context.Background(), f); err != nil {
		t.Fatal(err)
	}
	if len(f.Edits) != 4 || f.Edits[0].Op != contract.EditAddApp || f.Edits[1].Op != contract.EditAddResource || f.Edits[1].App != sfc.ChainingApp {
		t.Fatalf("edits = %+v, want the app %s added with the NetworkChaining, and two label patches", f.Edits, sfc.ChainingApp)
	}
	// The selectors in the order they were created, whatever their names (by name when
	// created within the same millisecond); the provider network on the right.
	first, second := "head", "head2"
	if sels := createdOrder(s, chain, sfc.KindClientSelector); sels[0] != "z-head" {
		first, second = second, first
	}
	want := `{"apiVersion":"k8s.plugin.opnfv.org/v1alpha1","kind":"NetworkChaining","metadata":{"name":"ch"},"spec":{"chainType":"Routing",
		"routingSpec":{"namespace":"default","networkChain":"net=left-net,sfc-link=slb,net=dyn1,sfc-link=ngfw,net=right-net",
		"left":[{"networkName":"","gatewayIp":"","subnet":"","podSelector":{"matchLabels":{"sfc":"` + first + `"}},"namespaceSelector":{"matchLabels":{"sfc":"` + first + `"}}},
		        {"networkName":"","gatewayIp":"","subnet":"","podSelector":{"matchLabels":{"sfc":"` + second + `"}},"namespaceSelector":{"matchLabels":{"sfc":"` + second + `"}}}],
		"right":[{"networkName":"pnet","gatewayIp":"172.30.20.2","subnet":"172.30.20.0/24","podSelector":{},"namespaceSelector":{}}]}}}`
	var got, exp any
	_ = json.Unmarshal(f.Edits[1].Data, &got)
	_ = json.Unmarshal([]byte(want), &exp)
	if g, e := mustJSON(got), mustJSON(exp); g != e {
		t.Errorf("NetworkChaining =\n%s\nwant\n%s", g, e)
	}
	for i, app := range []string{"slb", "ngfw"} {
		e := f.Edits[i+2]
		if e.Op != contract.EditPatch || e.App != app || e.Name != app || string(e.Data) != `{"spec":{"template":{"metadata":{"labels":{"sfc-link":"`+app+`"}}}}}` {
			t.Errorf("edit %d = %+v %s, want the pod label patch of %s", i+2, e, e.Data, app)
		}
	}
}

// createdOrder lists the names of a parent's children of kind by creation time as
// stored, then by name.
func createdOrder(s *apiharness.Server, parent, kind string) []string {
	s.T.Helper()
	docs, err := s.Store.List(context.Background(), store.Query{Parent: parent, Kind: kind})
	if err != nil {
		s.T.Fatal(err)
	}
	slices.SortStableFunc(docs, func(a, b *store.Doc) int {
		return cmp.Or(a.Created.Compare(b.Created), strings.Compare(a.Name, b.Name))
	})
	if len(docs) == 0 || docs[0].Created.IsZero() {
		s.T.Fatalf("%s's %ss listed without their creation time: %v", parent, kind, docs)
	}
	if len(docs) > 1 && docs[0].Created.Equal(docs[1].Created) {
		s.T.Logf("%s and %s were created in the same millisecond", docs[0].Name, docs[1].Name)
	}
	names := make([]string, len(docs))
	for i, d := range docs {
		names[i] = d.Name
	}
	return names
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
