// Package apitest drives sfcclient's REST resources, and the sfc chain they name, through
// temco's API against a real FerretDB, then runs the controller on what was stored.
package apitest

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/temco/temco/contract"
	"github.com/temco/temco/contract/contracttest"
	"github.com/temco/temco/controllers"
	"github.com/temco/temco/controllers/apiharness"
	"github.com/temco/temco/controllers/sfc"
	"github.com/temco/temco/controllers/sfcclient"
	"github.com/temco/temco/internal/core/store"
)

func TestMain(m *testing.M) { apiharness.Main(m) }

var body = apiharness.Body

const (
	chainCA   = "/projects/p/composite-apps/chain/v1"
	chain     = chainCA + "/deployment-intent-groups/d/network-chains/ch"
	clientCA  = "/projects/p/composite-apps/client/v1"
	clientDIG = clientCA + "/deployment-intent-groups/cd"
)

// newServer serves sfc's and sfcclient's resources over project p holding logical cloud
// "left" (labels sfc=head), composite app "chain" whose DIG d has chain ch with left
// selectors "other" (namespace label sfc=other) then "head" (sfc=head), and composite app
// "client" with app web and DIG cd in cloud "left".
func newServer(t *testing.T) *apiharness.Server {
	t.Helper()
	ctx := context.Background()
	s := apiharness.Serve(t, sfc.Controller, sfcclient.Controller)
	st := s.Store
	s.Want("POST", "/projects", body("p", nil), 201)
	s.Want("POST", "/projects/p/logical-clouds", body("left", map[string]any{"level": "0", "labels": map[string]string{"sfc": "head"}}), 201)
	for _, ca := range []string{"chain", "client"} {
		s.Want("POST", "/projects/p/composite-apps", body(ca, map[string]any{"compositeAppVersion": "v1"}), 201)
	}
	if err := st.Create(ctx, &store.Doc{ID: clientCA + "/apps/web", Parent: clientCA, Kind: "app", Name: "web", Body: `{"metadata":{"name":"web"}}`}); err != nil {
		t.Fatal(err) // apps come with charts: stored directly
	}
	s.Want("POST", chainCA+"/deployment-intent-groups", body("d", map[string]any{"compositeProfile": "cp", "version": "r1", "logicalCloud": "lc"}), 201)
	s.Want("POST", clientCA+"/deployment-intent-groups", body("cd", map[string]any{"compositeProfile": "cp", "version": "r1", "logicalCloud": "left"}), 201)
	s.Want("POST", chainCA+"/deployment-intent-groups/d/network-chains", body("ch", map[string]any{"chainType": "Routing", "namespace": "default"}), 201)
	for _, sel := range []string{"other", "head"} {
		s.Want("POST", chain+"/client-selectors", body(sel, map[string]any{"chainEnd": "left",
			"podSelector":       map[string]any{"matchLabels": map[string]string{"sfc": sel, "role": "client"}},
			"namespaceSelector": map[string]any{"matchLabels": map[string]string{"sfc": sel}}}), 201)
	}
	return s
}

func clientSpec() map[string]any {
	return map[string]any{"chainEnd": "left", "sfcIntent": "ch", "compositeApp": "chain", "compositeAppVersion": "v1",
		"deploymentIntentGroup": "d", "app": "web", "workloadResource": "web", "resourceType": "Deployment"}
}

func TestClientsValidateAndHoldTheirChain(t *testing.T) {
	s := newServer(t)
	for field, msg := range map[string]string{
		"chainEnd":            `spec.chainEnd must be \"left\" or \"right\", not \"\"`,
		"compositeAppVersion": "spec.compositeAppVersion is required",
		"resourceType":        `spec.resourceType \"\" is not a kind of workload`,
	} {
		sp := clientSpec()
		delete(sp, field)
		if got := s.Want("POST", clientDIG+"/sfc-clients", body("web", sp), 400); !strings.Contains(got, msg) {
			t.Errorf("client without %s: %s, want it to say %q", field, got, msg)
		}
	}
	s.Want("POST", clientDIG+"/sfc-clients", body("web", clientSpec()), 201)
	if got := s.Want("GET", clientDIG+"/sfc-clients/web", nil, 200); !strings.Contains(got, `"sfcIntent":"ch","compositeApp":"chain"`) {
		t.Errorf("stored client = %s, want EMCO's fields", got)
	}
	// The client names the chain and its app: neither goes while the client is there.
	s.Want("DELETE", chain+"/client-selectors/other", nil, 204)
	s.Want("DELETE", chain+"/client-selectors/head", nil, 204)
	s.Want("DELETE", chain, nil, 409)
	s.Want("DELETE", clientCA+"/apps/web", nil, 409)
	s.Want("DELETE", clientDIG+"/sfc-clients/web", nil, 204)
	s.Want("DELETE", chain, nil, 204)
}

func TestControllerReadsWhatTheAPIStored(t *testing.T) {
	s := newServer(t)
	s.Want("POST", clientDIG+"/sfc-clients", body("web", clientSpec()), 201)
	f := &contracttest.Fake{In: contract.Input{Project: "p", CompositeApp: "client", CompositeAppVersion: "v1", DeploymentIntentGroup: "cd",
		Controller: "sfcclient", Intent: "whatever-the-dig-says", Operation: contract.OpInstantiate},
		AppList: []contract.App{{Name: "web", Clusters: []string{"p+c1", "p+c2"}}},
		Objects: map[string][]contract.Resource{"web": {{APIVersion: "apps/v1", Kind: "Deployment", Name: "web",
			Manifest: json.RawMessage(`{"spec":{"selector":{"matchLabels":{"app":"web"}}}}`)}}}}
	if err := sfcclient.Controller.New(controllers.Deps{Store: s.Store}).Run(context.Background(), f); err != nil {
		t.Fatal(err)
	}
	want := `{"spec":{"template":{"metadata":{"labels":{"role":"client","sfc":"head"}}}}}`
	if len(f.Edits) != 1 || f.Edits[0].App != "web" || f.Edits[0].Clusters != nil || string(f.Edits[0].Data) != want {
		t.Fatalf("edits = %+v, want one patch of web on all its clusters: %s", f.Edits, want)
	}
}
