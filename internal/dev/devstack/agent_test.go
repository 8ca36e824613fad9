package devstack

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
)

// The agent cluster takes the range of ten ports after the plain clusters' and the
// GitOps cluster's, and is started and stopped with the plain ones.
func TestAgentClusterFollowsTheOthers(t *testing.T) {
	for _, tc := range []struct {
		gitOps bool
		name   string
		base   int
	}{{true, "cluster4", 20030}, {false, "cluster3", 20020}} {
		s := &Stack{cfg: Config{DataDir: "/d", ClusterBasePort: 20000, Clusters: 2, GitOps: tc.gitOps, Agent: true}}
		if tc.gitOps {
			s.configureGitOps()
		}
		s.configureAgent()
		c := s.AgentCluster
		if c.Name != tc.name || c.BasePort != tc.base || c.APIPort() != tc.base+2 || c.Dir != "/d/clusters/"+tc.name {
			t.Errorf("GitOps %v: agent cluster %s on %d (api %d) in %s, want %s on %d", tc.gitOps, c.Name, c.BasePort, c.APIPort(), c.Dir, tc.name, tc.base)
		}
		if plain := s.plainClusters(); len(plain) != 1 || plain[0] != c {
			t.Errorf("GitOps %v: plain clusters %v", tc.gitOps, plain)
		}
	}
}

// fakeAgentAPI answers the routes the stack registers the agent cluster with, as temco
// api does, and records what it was sent.
type fakeAgentAPI struct {
	mu        sync.Mutex
	providers map[string]bool
	clusters  map[string]bool
	state     string
	tokens    int
	bad       []string // what the api would refuse
}

func (f *fakeAgentAPI) setState(state string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.state = state
}

func (f *fakeAgentAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	created := func(set map[string]bool, name string) {
		if set[name] {
			w.WriteHeader(http.StatusConflict)
			return
		}
		set[name] = true
		w.WriteHeader(http.StatusCreated)
	}
	switch r.Method + " " + r.URL.Path {
	case "POST /v2/cluster-providers":
		var body struct{ Metadata struct{ Name string } }
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil || r.Header.Get("Content-Type") != "application/json" {
			f.bad = append(f.bad, "provider body")
		}
		created(f.providers, body.Metadata.Name)
	case "POST /v2/cluster-providers/agents/clusters":
		if err := r.ParseMultipartForm(1 << 20); err != nil || len(r.MultipartForm.File) > 0 || len(r.MultipartForm.Value) != 1 {
			f.bad = append(f.bad, "cluster form")
		}
		var meta struct {
			Metadata struct{ Name string }
			Spec     struct{ Access string }
		}
		if err := json.Unmarshal([]byte(r.FormValue("metadata")), &meta); err != nil || meta.Spec.Access != "agent" {
			f.bad = append(f.bad, "cluster metadata "+r.FormValue("metadata"))
		}
		created(f.clusters, meta.Metadata.Name)
	case "POST /v2/cluster-providers/agents/clusters/edge1/agent-token":
		f.tokens++
		f.state = "waiting for join"
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"cluster":"agents+edge1","token":"temco-join.` + strconv.Itoa(f.tokens) + `"}`))
	case "GET /v2/cluster-providers/agents/clusters/edge1/agent":
		_, _ = w.Write([]byte(`{"state":"` + f.state + `"}`))
	default:
		http.NotFound(w, r)
	}
}

// A second registration finds the first (409 is fine); a join token is issued only when
// the credential file holds none or temco no longer takes it, and a stale one is dropped.
func TestAgentRegistersAndJoinsOnce(t *testing.T) {
	api := &fakeAgentAPI{providers: map[string]bool{}, clusters: map[string]bool{}, state: "no token"}
	srv := httptest.NewServer(api)
	defer srv.Close()
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	s := &Stack{cfg: Config{DataDir: t.TempDir(), APIPort: port}}
	ctx := t.Context()
	for range 2 {
		if err := s.registerAgentCluster(ctx); err != nil {
			t.Fatal(err)
		}
	}
	api.mu.Lock()
	ok := api.providers["agents"] && api.clusters["edge1"] && len(api.bad) == 0
	got := fmt.Sprintf("providers %v, clusters %v, refused: %v", api.providers, api.clusters, api.bad)
	api.mu.Unlock()
	if !ok {
		t.Fatal(got)
	}

	token, err := s.agentJoinToken(ctx)
	if err != nil || token != "temco-join.1" {
		t.Fatalf("first start: token %q, %v", token, err)
	}
	file := s.agentCredentialFile()
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte("temco-agent.x\n"), 0o600); err != nil { // as the agent does
		t.Fatal(err)
	}
	for _, state := range []string{"joined", "offline"} { // offline: not calling while the stack was down
		api.setState(state)
		if token, err := s.agentJoinToken(ctx); err != nil || token != "" {
			t.Fatalf("a %s agent's restart: token %q, %v", state, token, err)
		}
	}

	api.setState("revoked")
	if token, err := s.agentJoinToken(ctx); err != nil || token != "temco-join.2" {
		t.Fatalf("after a revocation: token %q, %v", token, err)
	}
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Errorf("the revoked credential is kept: %v", err)
	}
	if filepath.Dir(file) != filepath.Join(s.cfg.DataDir, "agent") {
		t.Errorf("credential file %s", file)
	}
}
