// Package apitest drives sfcclient's REST resources, and the sfc chain they name, through
// temco's API against a real FerretDB, then runs the controller on what was stored.
package apitest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/temco/temco/api"
	"github.com/temco/temco/contract"
	"github.com/temco/temco/contract/contracttest"
	"github.com/temco/temco/controllers"
	"github.com/temco/temco/controllers/sfc"
	"github.com/temco/temco/controllers/sfcclient"
	"github.com/temco/temco/internal/appctx"
	"github.com/temco/temco/internal/devstack"
	"github.com/temco/temco/internal/store"
	"github.com/temco/temco/internal/testenv"
)

var ferret *devstack.FerretDB

func TestMain(m *testing.M) { testenv.MainWithFerretDB(m, &ferret) }

const (
	chainCA   = "/projects/p/composite-apps/chain/v1"
	chain     = chainCA + "/deployment-intent-groups/d/network-chains/ch"
	clientCA  = "/projects/p/composite-apps/client/v1"
	clientDIG = clientCA + "/deployment-intent-groups/cd"
)

type server struct {
	t     *testing.T
	h     http.Handler
	store *store.Store
}

// newServer serves sfc's and sfcclient's resources over project p holding logical cloud
// "left" (labels sfc=head), composite app "chain" whose DIG d has chain ch with left
// selectors "other" (namespace label sfc=other) then "head" (sfc=head), and composite app
// "client" with app web and DIG cd in cloud "left".
func newServer(t *testing.T) *server {
	t.Helper()
	ctx := context.Background()
	db := testenv.Database(t, ferret, strings.ToLower(t.Name()))
	st, err := store.New(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	contexts, err := appctx.New(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	srv := &api.Server{Store: st, Contexts: contexts, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Controllers: controllers.API([]controllers.Builtin{sfc.Controller, sfcclient.Controller})}
	s := &server{t: t, h: srv.Handler(), store: st}
	s.want("POST", "/projects", body("p", nil), 201)
	s.want("POST", "/projects/p/logical-clouds", body("left", map[string]any{"level": "0", "labels": map[string]string{"sfc": "head"}}), 201)
	for _, ca := range []string{"chain", "client"} {
		s.want("POST", "/projects/p/composite-apps", body(ca, map[string]any{"compositeAppVersion": "v1"}), 201)
	}
	if err := st.Create(ctx, &store.Doc{ID: clientCA + "/apps/web", Parent: clientCA, Kind: "app", Name: "web", Body: `{"metadata":{"name":"web"}}`}); err != nil {
		t.Fatal(err) // apps come with charts: stored directly
	}
	s.want("POST", chainCA+"/deployment-intent-groups", body("d", map[string]any{"compositeProfile": "cp", "version": "r1", "logicalCloud": "lc"}), 201)
	s.want("POST", clientCA+"/deployment-intent-groups", body("cd", map[string]any{"compositeProfile": "cp", "version": "r1", "logicalCloud": "left"}), 201)
	s.want("POST", chainCA+"/deployment-intent-groups/d/network-chains", body("ch", map[string]any{"chainType": "Routing", "namespace": "default"}), 201)
	for _, sel := range []string{"other", "head"} {
		s.want("POST", chain+"/client-selectors", body(sel, map[string]any{"chainEnd": "left",
			"podSelector":       map[string]any{"matchLabels": map[string]string{"sfc": sel, "role": "client"}},
			"namespaceSelector": map[string]any{"matchLabels": map[string]string{"sfc": sel}}}), 201)
	}
	return s
}

// want sends a request and checks its status; it returns the body.
func (s *server) want(method, path string, v any, code int) string {
	s.t.Helper()
	var rd io.Reader
	if v != nil {
		data, _ := json.Marshal(v)
		rd = bytes.NewReader(data)
	}
	req := httptest.NewRequest(method, "/v2"+path, rd)
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	s.h.ServeHTTP(rec, req)
	if rec.Code != code {
		s.t.Fatalf("%s %s: status %d, want %d: %s", method, path, rec.Code, code, rec.Body)
	}
	return rec.Body.String()
}

func body(name string, spec any) map[string]any {
	return map[string]any{"metadata": map[string]any{"name": name}, "spec": spec}
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
		if got := s.want("POST", clientDIG+"/sfc-clients", body("web", sp), 400); !strings.Contains(got, msg) {
			t.Errorf("client without %s: %s, want it to say %q", field, got, msg)
		}
	}
	s.want("POST", clientDIG+"/sfc-clients", body("web", clientSpec()), 201)
	if got := s.want("GET", clientDIG+"/sfc-clients/web", nil, 200); !strings.Contains(got, `"sfcIntent":"ch","compositeApp":"chain"`) {
		t.Errorf("stored client = %s, want EMCO's fields", got)
	}
	// The client names the chain and its app: neither goes while the client is there.
	s.want("DELETE", chain+"/client-selectors/other", nil, 204)
	s.want("DELETE", chain+"/client-selectors/head", nil, 204)
	s.want("DELETE", chain, nil, 409)
	s.want("DELETE", clientCA+"/apps/web", nil, 409)
	s.want("DELETE", clientDIG+"/sfc-clients/web", nil, 204)
	s.want("DELETE", chain, nil, 204)
}

func TestControllerReadsWhatTheAPIStored(t *testing.T) {
	s := newServer(t)
	s.want("POST", clientDIG+"/sfc-clients", body("web", clientSpec()), 201)
	f := &contracttest.Fake{In: contract.Input{Project: "p", CompositeApp: "client", CompositeAppVersion: "v1", DeploymentIntentGroup: "cd",
		Controller: "sfcclient", Intent: "whatever-the-dig-says", Operation: contract.OpInstantiate},
		AppList: []contract.App{{Name: "web", Clusters: []string{"p+c1", "p+c2"}}},
		Objects: map[string][]contract.Resource{"web": {{APIVersion: "apps/v1", Kind: "Deployment", Name: "web",
			Manifest: json.RawMessage(`{"spec":{"selector":{"matchLabels":{"app":"web"}}}}`)}}}}
	if err := sfcclient.Controller.New(controllers.Deps{Store: s.store}).Run(context.Background(), f); err != nil {
		t.Fatal(err)
	}
	want := `{"spec":{"template":{"metadata":{"labels":{"role":"client","sfc":"head"}}}}}`
	if len(f.Edits) != 1 || f.Edits[0].App != "web" || f.Edits[0].Clusters != nil || string(f.Edits[0].Data) != want {
		t.Fatalf("edits = %+v, want one patch of web on all its clusters: %s", f.Edits, want)
	}
}
