package api

import (
	"context"
	"encoding/base64"
	"math"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/temco/temco/internal/core/agent"
	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/drift"
	"github.com/temco/temco/internal/core/lifecycle"
)

// An agent's drift report is stored for the revision and cluster it names, checked: only
// the objects the revision placed on the agent's own cluster, each once, within bounds,
// and a Secret's values never, whatever the agent sends. A refused report changes
// nothing; another cluster's agent reaches none of it.
func TestAgentDriftReportIsCheckedAndStored(t *testing.T) {
	c := newClient(t)
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
	if err := contexts.Create(ctx, &appctx.Context{ID: "ctx1", Instance: "ctx1", Namespace: "default", Apps: []string{"web"}}); err != nil {
		t.Fatal(err)
	}
	if err := contexts.PutApps(ctx, "ctx1", []*appctx.App{{Name: "web", Objects: []appctx.Object{obj("ConfigMap", "a"), obj("Secret", "s")}}}); err != nil {
		t.Fatal(err)
	}
	if err := contexts.PutPlacement(ctx, "ctx1", []*appctx.ClusterApp{{App: "web", Cluster: "cp+edge", Unlisted: true}}, map[string]int{"cp+edge": 0}); err != nil {
		t.Fatal(err)
	}
	if _, err := agent.Open(c.store.Database()).Publish(ctx, agent.Item{Cluster: "cp+edge", Instance: "ctx1", Context: "ctx1"}); err != nil {
		t.Fatal(err)
	}
	a, o := c.as(edge), c.as(other)
	// The agent applied both objects into "default", as its statuses say.
	var rev agent.Revision
	a.do("GET", "/agent/revisions/ctx1", nil).must(t, 200).json(t, &rev)
	for i := range rev.Placements[0].Resources {
		r := &rev.Placements[0].Resources[i]
		r.Status, r.Namespace = lifecycle.ResApplied, "default"
	}
	a.do("POST", "/agent/revisions/ctx1/statuses", rev.Placements).must(t, 204)
	cm := appctx.Ref{Version: "v1", Kind: "ConfigMap", Namespace: "default", Name: "a"}
	sec := appctx.Ref{Version: "v1", Kind: "Secret", Namespace: "default", Name: "s"}

	const secretValue = "hunter2-agent-drift-never-stored"
	good := agent.Drift{Objects: []agent.DriftObject{
		{App: "web", Ref: cm, Fields: []drift.Field{{Path: "data.k", Live: `"x"`, Desired: `"v"`}}},
		// An agent that failed to redact a Secret's value: the api does it.
		{App: "web", Ref: sec, Fields: []drift.Field{{Path: "data.password", Live: `"` + base64.StdEncoding.EncodeToString([]byte(secretValue)) + `"`,
			Desired: `"` + secretValue + `"`}, {Path: "metadata.labels.tier", Live: `"` + secretValue + `"`, Desired: `"b"`}}},
	}}
	before := time.Now().UTC().Truncate(time.Millisecond) // as the store keeps times
	a.do("POST", "/agent/revisions/ctx1/drift", good).must(t, 204)
	o.do("POST", "/agent/revisions/ctx1/drift", good).must(t, 404)
	a.do("POST", "/agent/revisions/nosuch/drift", good).must(t, 404)
	rec, err := contexts.AgentDrift(ctx, "ctx1", "cp+edge")
	if err != nil || rec == nil {
		t.Fatalf("the stored report: %+v, %v", rec, err)
	}
	if rec.Check != appctx.AgentDriftCheck || rec.Cluster != "cp+edge" || rec.Context != "ctx1" || rec.Checked.Before(before) ||
		rec.InSync != 0 || len(rec.Objects) != 2 {
		t.Fatalf("the stored report: %+v", rec)
	}
	if f := rec.Objects[0].Fields; rec.Objects[0].Ref != cm || len(f) != 1 || f[0] != (drift.Field{Path: "data.k", Live: `"x"`, Desired: `"v"`}) {
		t.Errorf("the ConfigMap's drift: %+v", rec.Objects[0])
	}
	for _, f := range rec.Objects[1].Fields {
		if !f.Redacted || f.Live != "" || f.Desired != "" {
			t.Errorf("a Secret's field stored with its values: %+v", f)
		}
	}
	if other, err := contexts.AgentDrift(ctx, "ctx1", "cp+other"); other != nil || err != nil {
		t.Errorf("another cluster's report: %+v, %v", other, err)
	}
	// Nothing of the Secret's value is stored, in clear or in base64.
	cur, err := c.store.Database().Collection("ctxdrift").Find(ctx, bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	docs := 0
	for cur.Next(ctx) {
		docs++
		for _, v := range []string{secretValue, base64.StdEncoding.EncodeToString([]byte(secretValue))} {
			if strings.Contains(cur.Current.String(), v) {
				t.Errorf("stored: %s", cur.Current)
			}
		}
	}
	if docs != 1 {
		t.Errorf("%d drift documents, want the report alone", docs)
	}

	long := strings.Repeat("x", agent.MaxDriftPath+1)
	many := make([]drift.Field, agent.MaxDriftFields+1)
	for i := range many {
		many[i] = drift.Field{Path: "data.k" + strings.Repeat("x", i), Desired: `"v"`}
	}
	field := []drift.Field{{Path: "data.k", Desired: `"v"`}}
	for _, bad := range []struct {
		name string
		body any
		want string
	}{
		{"not placed", agent.Drift{Objects: []agent.DriftObject{{App: "db", Ref: cm, Fields: field}}}, `app "db" is not placed`},
		{"not the app's", agent.Drift{Objects: []agent.DriftObject{{App: "web", Ref: appctx.Ref{Version: "v1", Kind: "ClusterRole", Name: "admin"}, Fields: field}}}, "is no object of app"},
		{"another namespace", agent.Drift{Objects: []agent.DriftObject{{App: "web", Ref: appctx.Ref{Version: "v1", Kind: "ConfigMap", Namespace: "kube-system", Name: "a"}, Missing: true}}}, "is no object of app"},
		{"twice", agent.Drift{Objects: []agent.DriftObject{{App: "web", Ref: cm, Missing: true}, {App: "web", Ref: cm, Missing: true}}}, "reported twice"},
		{"negative", agent.Drift{InSync: -1}, "negative"},
		{"overflowing", agent.Drift{InSync: math.MaxInt, Objects: []agent.DriftObject{{App: "web", Ref: cm, Missing: true}}}, "placed 2 objects"},
		{"more than placed", agent.Drift{InSync: 2, Objects: []agent.DriftObject{{App: "web", Ref: cm, Missing: true}}}, "placed 2 objects"},
		{"an error and objects", agent.Drift{Error: "unreachable", InSync: 1}, "could not be compared"},
		{"missing with fields", agent.Drift{Objects: []agent.DriftObject{{App: "web", Ref: cm, Missing: true, Fields: field}}}, "missing from the cluster has no fields"},
		{"says nothing", agent.Drift{Objects: []agent.DriftObject{{App: "web", Ref: cm}}}, "counted in inSync"},
		{"too many fields", agent.Drift{Objects: []agent.DriftObject{{App: "web", Ref: cm, Fields: many}}}, "at most"},
		{"a long path", agent.Drift{Objects: []agent.DriftObject{{App: "web", Ref: cm, Fields: []drift.Field{{Path: long}}}}}, "path: 1 to"},
		{"no path", agent.Drift{Objects: []agent.DriftObject{{App: "web", Ref: cm, Fields: []drift.Field{{Desired: `"v"`}}}}}, "path: 1 to"},
		{"a long value", agent.Drift{Objects: []agent.DriftObject{{App: "web", Ref: cm, Fields: []drift.Field{{Path: "data.k", Live: strings.Repeat("x", agent.MaxDriftValue+1)}}}}}, "a value over"},
		{"not JSON", `{"inSync":`, "not valid JSON"},
		{"unknown shape", `[]`, "not valid JSON"},
	} {
		if r := a.do("POST", "/agent/revisions/ctx1/drift", bad.body).must(t, 400); !strings.Contains(r.message(t), bad.want) {
			t.Errorf("%s: %s, want %q", bad.name, r.body, bad.want)
		}
	}
	if after, err := contexts.AgentDrift(ctx, "ctx1", "cp+edge"); err != nil || after == nil || len(after.Objects) != 2 || !after.Checked.Equal(rec.Checked) {
		t.Errorf("the refused reports changed the stored one: %+v, %v", after, err)
	}

	// In sync now: the next report replaces the last; an error alone is a finding too.
	a.do("POST", "/agent/revisions/ctx1/drift", agent.Drift{InSync: 2}).must(t, 204)
	if rec, err := contexts.AgentDrift(ctx, "ctx1", "cp+edge"); err != nil || rec.InSync != 2 || len(rec.Objects) != 0 || rec.Error != "" {
		t.Errorf("the in-sync report: %+v, %v", rec, err)
	}
	a.do("POST", "/agent/revisions/ctx1/drift", agent.Drift{Error: strings.Repeat("e", 10_000)}).must(t, 204)
	if rec, err := contexts.AgentDrift(ctx, "ctx1", "cp+edge"); err != nil || len(rec.Error) != 4096 || rec.InSync != 0 {
		t.Errorf("the error report (clipped): %d bytes, %v", len(rec.Error), err)
	}
}
