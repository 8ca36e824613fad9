package api

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/temco/temco/internal/core/agent"
	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/model"
	"github.com/temco/temco/internal/core/store"
)

// completer records the activities the api completes.
type completer struct {
	mu     sync.Mutex
	tokens []string
	res    []lifecycle.ClusterResult
}

func (c *completer) CompleteActivity(_ context.Context, token []byte, result any, _ error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tokens = append(c.tokens, string(token))
	c.res = append(c.res, result.(lifecycle.ClusterResult))
	return nil
}

// agentCluster registers cluster cp+name in agent mode and joins its agent: the agent's
// credential.
func (c *client) agentCluster(t *testing.T, name string) string {
	t.Helper()
	c.multipart("POST", "/cluster-providers/cp/clusters", res(name, map[string]any{"access": "agent"}), nil).must(t, 201)
	var tok struct {
		Token string `json:"token"`
	}
	c.do("POST", "/cluster-providers/cp/clusters/"+name+"/agent-token", nil).must(t, 201).json(t, &tok)
	var j struct {
		Cluster, Credential string
	}
	c.do("POST", "/agent/join", nil, "Authorization", "Bearer "+tok.Token).must(t, 200).json(t, &j)
	if j.Cluster != "cp+"+name || !agent.IsCredential(j.Credential) {
		t.Fatalf("join answered %+v", j)
	}
	return j.Credential
}

// Registration: an agent cluster takes no kubeconfig, and every cluster's answer says how
// it is reached; join tokens are an agent cluster's only, used once.
func TestAgentClusterRegistrationAndJoin(t *testing.T) {
	c := newClient(t)
	c.do("POST", "/cluster-providers", res("cp", nil)).must(t, 201)
	c.multipart("POST", "/cluster-providers/cp/clusters", res("kube", nil), []byte(TestKubeconfig)).must(t, 201)
	if r := c.do("GET", "/cluster-providers/cp/clusters/kube", nil).must(t, 200); !strings.Contains(string(r.body), `"access":"kubernetes"`) {
		t.Errorf("a kubeconfig cluster's answer: %s", r.body)
	}
	for _, bad := range []struct {
		spec map[string]any
		file []byte
		want string
	}{
		{map[string]any{"access": "agent"}, []byte(TestKubeconfig), "kubeconfig stays in the cluster"},
		{map[string]any{"access": "ssh"}, nil, `spec.access "ssh" is none of`},
		{map[string]any{"access": "agent", "gitOps": map[string]any{"gitOpsType": "fluxcd"}}, nil, "exclude each other"},
	} {
		if r := c.multipart("POST", "/cluster-providers/cp/clusters", res("bad", bad.spec), bad.file).must(t, 400); !strings.Contains(r.message(t), bad.want) {
			t.Errorf("%v: %s, want %q", bad.spec, r.body, bad.want)
		}
	}
	if r := c.do("POST", "/cluster-providers/cp/clusters/kube/agent-token", nil).must(t, 409); !strings.Contains(r.message(t), "not reached by an agent") {
		t.Errorf("a join token for a kubeconfig cluster: %s", r.body)
	}

	c.multipart("POST", "/cluster-providers/cp/clusters", res("edge", map[string]any{"access": "agent"}), nil).must(t, 201)
	if r := c.do("GET", "/cluster-providers/cp/clusters/edge", nil).must(t, 200); !strings.Contains(string(r.body), `"access":"agent"`) {
		t.Errorf("an agent cluster's answer: %s", r.body)
	}
	var st agent.Status
	c.do("GET", "/cluster-providers/cp/clusters/edge/agent", nil).must(t, 200).json(t, &st)
	if st.State != agent.StateNoToken {
		t.Errorf("before a token: %+v", st)
	}
	var tok joinToken
	r := c.do("POST", "/cluster-providers/cp/clusters/edge/agent-token", nil).must(t, 201)
	r.json(t, &tok)
	if r.hdr.Get("Cache-Control") != "no-store" || !strings.HasPrefix(tok.Token, agent.JoinPrefix) {
		t.Errorf("join token answer %s (Cache-Control %q)", r.body, r.hdr.Get("Cache-Control"))
	}
	c.do("POST", "/agent/join", nil).must(t, 401)
	c.do("POST", "/agent/join", nil, "Authorization", "Bearer "+tok.Token+"x").must(t, 401)
	var j agent.Joined
	c.do("POST", "/agent/join", nil, "Authorization", "Bearer "+tok.Token).must(t, 200).json(t, &j)
	if r := c.do("POST", "/agent/join", nil, "Authorization", "Bearer "+tok.Token).must(t, 401); !strings.Contains(r.message(t), "used already") &&
		!strings.Contains(r.message(t), "current token") {
		t.Errorf("a second join: %s", r.body)
	}
	c.do("GET", "/cluster-providers/cp/clusters/edge/agent", nil).must(t, 200).json(t, &st)
	if st.State != agent.StateJoined || st.LastSeen == nil {
		t.Errorf("after the join: %+v", st)
	}
	a := c.as(j.Credential)
	a.do("GET", "/agent/work", nil).must(t, 200)

	// The credential reaches the agent's routes alone; nobody else reaches those.
	if r := a.do("GET", "/projects", nil).must(t, 403); !strings.Contains(r.message(t), "refused to an agent") {
		t.Errorf("an agent listing projects: %s", r.body)
	}
	a.do("POST", "/cluster-providers/cp/clusters/edge/agent-token", nil).must(t, 403)
	if r := c.do("GET", "/agent/work", nil).must(t, 403); !strings.Contains(r.message(t), "requires an agent's credential") {
		t.Errorf("an admin (authentication off) reading an agent's work: %s", r.body)
	}

	// Revoked: refused at once on this api (its cache forgets the cluster).
	c.do("DELETE", "/cluster-providers/cp/clusters/edge/agent-token", nil).must(t, 204)
	if r := a.do("GET", "/agent/work", nil).must(t, 401); !strings.Contains(r.message(t), "revoked") {
		t.Errorf("a revoked credential: %s", r.body)
	}
}

// An agent reads the revisions its work names, as placed on its own cluster, and writes
// their statuses alone; its report completes the activity waiting for it. Another
// cluster's agent reaches none of it.
func TestAgentWorkRevisionsStatusesReport(t *testing.T) {
	done := &completer{}
	c := newClient(t, func(s *Server) { s.Activities = done })
	ctx := context.Background()
	c.do("POST", "/cluster-providers", res("cp", nil)).must(t, 201)
	edge, other := c.agentCluster(t, "edge"), c.agentCluster(t, "other")

	contexts, err := appctx.New(ctx, c.store.Database())
	if err != nil {
		t.Fatal(err)
	}
	obj := func(kind, name string) appctx.Object {
		return appctx.Object{Ref: appctx.Ref{Version: "v1", Kind: kind, Name: name}, Manifest: `{"apiVersion":"v1","kind":"` + kind + `","metadata":{"name":"` + name + `"}}`, Hash: name}
	}
	if err := contexts.Create(ctx, &appctx.Context{ID: "ctx1", DIG: "/projects/secret-project/composite-apps/ca/v1/deployment-intent-groups/dig",
		Instance: "ctx1", Namespace: "default", Apps: []string{"web"}}); err != nil {
		t.Fatal(err)
	}
	if err := contexts.PutApps(ctx, "ctx1", []*appctx.App{{Name: "web", Objects: []appctx.Object{obj("ConfigMap", "a"), obj("Secret", "s")}}}); err != nil {
		t.Fatal(err)
	}
	if err := contexts.PutPlacement(ctx, "ctx1", []*appctx.ClusterApp{{App: "web", Cluster: "cp+edge", Unlisted: true}}, map[string]int{"cp+edge": 0}); err != nil {
		t.Fatal(err)
	}
	agents := agent.Open(c.store.Database())
	gen, err := agents.Publish(ctx, agent.Item{Cluster: "cp+edge", Instance: "ctx1", Context: "ctx1"})
	if err != nil {
		t.Fatal(err)
	}
	sealed, _ := c.keys.Seal([]byte("task-token"), []byte(agent.ItemID("cp+edge", "ctx1")))
	if ok, err := agents.Wait(ctx, agent.ItemID("cp+edge", "ctx1"), gen, sealed); !ok || err != nil {
		t.Fatal(ok, err)
	}

	a, o := c.as(edge), c.as(other)
	var w agent.Work
	a.do("GET", "/agent/work", nil).must(t, 200).json(t, &w)
	if w.Cluster != "cp+edge" || len(w.Items) != 1 || w.Items[0].Gen != gen || w.Items[0].Context != "ctx1" {
		t.Fatalf("work: %+v", w)
	}
	if strings.Contains(string(a.do("GET", "/agent/work", nil).body), "token") {
		t.Error("the work shows the waiting activity's token")
	}
	var rev agent.Revision
	a.do("GET", "/agent/revisions/ctx1", nil).must(t, 200).json(t, &rev)
	if rev.Header.ID != "ctx1" || len(rev.Placements) != 1 || len(rev.Placements[0].Resources) != 2 || len(rev.Apps["web"].Objects) != 2 {
		t.Fatalf("revision: %+v", rev)
	}
	if r := a.do("GET", "/agent/revisions/ctx1", nil); strings.Contains(string(r.body), "secret-project") {
		t.Errorf("the revision shows the agent its DIG: %s", r.body)
	}
	if !strings.Contains(rev.Apps["web"].Objects[1].Manifest, `"Secret"`) {
		t.Errorf("the agent is not given the Secret it applies: %+v", rev.Apps["web"].Objects[1])
	}
	o.do("GET", "/agent/revisions/ctx1", nil).must(t, 404)
	a.do("GET", "/agent/revisions/nosuch", nil).must(t, 404)

	// Statuses: stored for the placed objects alone; what else is sent is dropped.
	sent := rev.Placements
	sent[0].Resources[0].Status, sent[0].Resources[1].Status = lifecycle.ResApplied, lifecycle.ResFailed
	sent[0].Resources[1].Error = "refused"
	sent[0].Objects = []appctx.Object{obj("ClusterRole", "admin")}
	sent = append(sent, &appctx.ClusterApp{App: "injected", Resources: []appctx.ResourceStatus{{Ref: appctx.Ref{Kind: "Pod", Name: "x"}, Status: "Applied"}}})
	a.do("POST", "/agent/revisions/ctx1/statuses", sent).must(t, 204)
	o.do("POST", "/agent/revisions/ctx1/statuses", sent).must(t, 404)
	stored, err := contexts.ClusterApps(ctx, "ctx1", "cp+edge")
	if err != nil {
		t.Fatal(err)
	}
	if len(stored) != 1 || stored[0].Objects != nil || stored[0].Resources[0].Status != lifecycle.ResApplied ||
		stored[0].Resources[1].Status != lifecycle.ResFailed || stored[0].Resources[1].Error != "refused" {
		t.Errorf("stored statuses: %+v", stored)
	}
	bad := rev.Placements[:1]
	bad[0].Resources[0].Status = "Owned"
	if r := a.do("POST", "/agent/revisions/ctx1/statuses", bad).must(t, 400); !strings.Contains(r.message(t), "no object status") {
		t.Errorf("a made-up status: %s", r.body)
	}

	// What the cluster shows: kept for the placed objects, checked.
	live := []agent.LiveApp{{App: "web", Objects: []appctx.Live{{State: appctx.LivePresent, Ready: true}, {State: appctx.LiveNotPresent, Ready: true}}}}
	a.do("POST", "/agent/revisions/ctx1/live", live).must(t, 204)
	o.do("POST", "/agent/revisions/ctx1/live", live).must(t, 404)
	a.do("POST", "/agent/revisions/ctx1/live", []agent.LiveApp{{App: "web", Objects: live[0].Objects[:1]}}).must(t, 400)
	a.do("POST", "/agent/revisions/ctx1/live", []agent.LiveApp{{App: "db", Objects: live[0].Objects}}).must(t, 400)
	a.do("POST", "/agent/revisions/ctx1/live", []agent.LiveApp{{App: "web", Objects: []appctx.Live{{State: "Gone"}, {}}}}).must(t, 400)
	stored, err = contexts.ClusterApps(ctx, "ctx1", "cp+edge")
	if err != nil {
		t.Fatal(err)
	}
	if l := stored[0].Live; len(l) != 2 || !l[0].Ready || l[1].State != appctx.LiveNotPresent || l[1].Ready || stored[0].LiveAt.IsZero() {
		t.Errorf("stored live state (an absent object is never ready): %+v", l)
	}
	if stored[0].Resources[0].Status != lifecycle.ResApplied {
		t.Errorf("the live report changed the statuses: %+v", stored[0].Resources)
	}

	// The report: refused for another cluster's instance or an unpublished gen; stored,
	// and the waiting activity completed with it.
	o.do("POST", "/agent/work/ctx1/report", agent.Outcome{Gen: gen}).must(t, 404)
	a.do("POST", "/agent/work/ctx1/report", agent.Outcome{Gen: gen + 1}).must(t, 400)
	a.do("POST", "/agent/work/ctx1/report", agent.Outcome{Gen: gen, Applied: "elsewhere"}).must(t, 400)
	a.do("POST", "/agent/work/ctx1/report", agent.Outcome{Gen: gen, Applied: "ctx1",
		Result: lifecycle.ClusterResult{Done: 1, Failed: 1, NotReady: -5, Awaiting: &lifecycle.AgentWait{Item: "x"}}}).must(t, 204)
	if len(done.tokens) != 1 || done.tokens[0] != "task-token" || done.res[0] != (lifecycle.ClusterResult{Done: 1, Failed: 1}) {
		t.Errorf("completed %v with %+v", done.tokens, done.res)
	}
	a.do("GET", "/agent/work", nil).must(t, 200).json(t, &w)
	if w.Items[0].Reported == nil || w.Items[0].Reported.Gen != gen || w.Items[0].Reported.Applied != "ctx1" {
		t.Errorf("the work after the report: %+v", w.Items[0])
	}
}

// The manifest names this temco and runs one agent keeping its credential in a Secret; it
// holds no token; it is an agent cluster's only, and its parameters are checked.
func TestAgentManifest(t *testing.T) {
	c := newClient(t)
	c.do("POST", "/cluster-providers", res("cp", nil)).must(t, 201)
	c.multipart("POST", "/cluster-providers/cp/clusters", res("edge", map[string]any{"access": "agent"}), nil).must(t, 201)
	c.multipart("POST", "/cluster-providers/cp/clusters", res("kube", nil), []byte(TestKubeconfig)).must(t, 201)
	c.do("POST", "/cluster-providers/cp/clusters/edge/agent-token", nil).must(t, 201)
	r := c.do("GET", "/cluster-providers/cp/clusters/edge/agent-manifest?api=https://temco.example.com&namespace=edge-agent", nil).must(t, 200)
	body := string(r.body)
	for _, want := range []string{"kind: Deployment", "- --api\n        - https://temco.example.com", "- --credential-secret\n        - edge-agent/temco-agent-credential",
		"namespace: edge-agent", "name: cluster-admin", "type: Recreate", "name: temco-agent-join", "image: " + DefaultAgentImage} {
		if !strings.Contains(body, want) {
			t.Errorf("the manifest lacks %q:\n%s", want, body)
		}
	}
	if strings.Contains(body, agent.JoinPrefix) || strings.Contains(body, agent.CredentialPrefix) {
		t.Errorf("the manifest holds a token:\n%s", body)
	}
	if got := strings.Count(body, "---\n"); got != 6 {
		t.Errorf("%d objects, want 6", got)
	}
	c.do("GET", "/cluster-providers/cp/clusters/kube/agent-manifest", nil).must(t, 409)
	for _, q := range []string{"api=ftp://x", "api=https://u:p@x", "namespace=Bad_NS", "image=x;rm", "clusterRole=a%20b"} {
		c.do("GET", "/cluster-providers/cp/clusters/edge/agent-manifest?"+q, nil).must(t, 400)
	}
}

// A registration stored before spec.access was answers with it all the same, derived as
// the worker derives it.
func TestClusterStoredBeforeAccessAnswersIt(t *testing.T) {
	c := newClient(t)
	ctx := context.Background()
	c.do("POST", "/cluster-providers", res("cp", nil)).must(t, 201)
	for name, spec := range map[string]string{"old-kube": `{"gitOps":{"gitOpsType":"","gitOpsReferenceObject":"","gitOpsResourceObject":""}}`,
		"old-git": `{"gitOps":{"gitOpsType":"fluxcd","gitOpsReferenceObject":"r","gitOpsResourceObject":""}}`} {
		d := &store.Doc{ID: "/cluster-providers/cp/clusters/" + name, Parent: "/cluster-providers/cp", Scope: "/cluster-providers/cp",
			Kind: model.KindCluster, Name: name, Body: `{"metadata":{"name":"` + name + `"},"spec":` + spec + `}`}
		if err := c.store.Create(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	for name, want := range map[string]string{"old-kube": `"access":"kubernetes"`, "old-git": `"access":"gitops"`} {
		if r := c.do("GET", "/cluster-providers/cp/clusters/"+name, nil).must(t, 200); !strings.Contains(string(r.body), want) {
			t.Errorf("%s: %s, want %s", name, r.body, want)
		}
	}
	if r := c.do("GET", "/cluster-providers/cp/clusters", nil).must(t, 200); strings.Count(string(r.body), `"access"`) != 2 {
		t.Errorf("the list: %s", r.body)
	}
}

// secondAPI is another api over c's store, as a second replica behind a load balancer.
func (c *client) secondAPI(t *testing.T) *client {
	t.Helper()
	contexts, err := appctx.New(context.Background(), c.store.Database())
	if err != nil {
		t.Fatal(err)
	}
	srv := &Server{Store: c.store, Contexts: contexts, Keys: c.keys, Log: slog.New(slog.NewJSONHandler(c.logs, nil)), Hosts: []string{testHost}}
	cp := *c
	cp.h = srv.Handler()
	return &cp
}

// A poll whose work is current is held until the work changes (304 when the wait ends
// first); the agents' calls are recorded; a credential revoked on another api is refused
// on this one as soon as its watch reads the change, and wakes the poll it holds.
func TestAgentPollsAreHeldUntilTheirWorkChanges(t *testing.T) {
	ctx := context.Background()
	c := newClient(t)
	c.do("POST", "/cluster-providers", res("cp", nil)).must(t, 201)
	a := c.as(c.agentCluster(t, "edge"))
	var w agent.Work
	a.do("GET", "/agent/work", nil).must(t, 200).json(t, &w)
	if w.Version == "" || w.Hold == 0 || len(w.Items) != 0 {
		t.Fatalf("first answer %+v", w)
	}
	a.do("GET", "/agent/work?known="+w.Version+"&wait=1", nil).must(t, 304)
	if r := a.do("GET", "/agent/work?known="+w.Version+"&wait=soon", nil).must(t, 400); !strings.Contains(r.message(t), "not a number of seconds") {
		t.Errorf("a bad wait: %s", r.body)
	}

	held := make(chan response, 1)
	go func() { held <- a.do("GET", "/agent/work?known="+w.Version+"&wait=25", nil) }()
	gen, err := agent.Open(c.store.Database()).Publish(ctx, agent.Item{Cluster: "cp+edge", Instance: "i1", Context: "c1"})
	if err != nil {
		t.Fatal(err)
	}
	var w2 agent.Work
	(<-held).must(t, 200).json(t, &w2) // a 304 after the wait: the publication did not wake it
	if len(w2.Items) != 1 || w2.Items[0].Gen != gen || w2.Version == w.Version {
		t.Errorf("the work after a publication: %+v (before: %s)", w2, w.Version)
	}

	deadline := time.Now().Add(time.Minute)
	for seen, _ := agent.Open(c.store.Database()).LastSeen(ctx, "cp+edge"); seen == nil; seen, _ = agent.Open(c.store.Database()).LastSeen(ctx, "cp+edge") {
		if time.Now().After(deadline) {
			t.Fatal("the agent's calls were never recorded")
		}
		time.Sleep(200 * time.Millisecond) // polling the store for the flush
	}

	go func() { held <- a.do("GET", "/agent/work?known="+w2.Version+"&wait=25", nil) }()
	c.secondAPI(t).do("DELETE", "/cluster-providers/cp/clusters/edge/agent-token", nil).must(t, 204)
	if r := <-held; r.code != 200 && r.code != 401 {
		t.Errorf("the poll held across the revocation answered %d %s", r.code, r.body)
	}
	if r := a.do("GET", "/agent/work", nil).must(t, 401); !strings.Contains(r.message(t), "revoked") {
		t.Errorf("a credential revoked on another api: %s", r.body)
	}
}
