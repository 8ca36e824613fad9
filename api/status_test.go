package api

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/digstate"
	"github.com/temco/temco/internal/core/lifecycle"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden files of the status tests")

// liveReads stands in for the live read of clusters: it records what each placement
// "showed", as the read activity does.
type liveReads struct {
	operations
	contexts *appctx.Store
	live     map[string][]appctx.Live  // app/provider+cluster -> per resource
	details  map[string]map[string]any // Kind/name -> the object read
	reads    int
}

func (o *liveReads) ReadClusters(ctx context.Context, _ lifecycle.Target, in lifecycle.ReadInput) error {
	o.reads++
	ps, err := o.contexts.Placements(ctx, in.ContextID, appctx.Filter{Clusters: in.Clusters})
	if err != nil {
		return err
	}
	for _, p := range ps {
		p.Live, p.LiveAt = append([]appctx.Live(nil), o.live[p.App+"/"+p.Cluster]...), time.Now().UTC()
		for i, r := range p.Resources {
			if obj := o.details[r.Kind+"/"+r.Name]; in.Detail && obj != nil && i < len(p.Live) && p.Live[i].State == appctx.LivePresent {
				p.Live[i].Detail = appctx.DetailOf(obj)
			}
		}
	}
	return o.contexts.SaveClusters(ctx, in.ContextID, ps)
}

func manifest(apiVersion, kind, name string, extra map[string]any) string {
	obj := map[string]any{"apiVersion": apiVersion, "kind": kind,
		"metadata": map[string]any{"name": name, "managedFields": []any{map[string]any{"manager": "temco"}}}}
	for k, v := range extra {
		obj[k] = v
	}
	b, _ := json.Marshal(obj)
	return string(b)
}

// instantiated gives a DIG or logical cloud the history and context of an instantiate:
// apps objects placed on clusters with statuses, and what a live read will show.
func instantiated(t testing.TB, c *client, reads *liveReads, target, ctxID string, apps map[string][]appctx.Object,
	placed []*appctx.ClusterApp) {
	t.Helper()
	ctx := context.Background()
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	if _, err := digstate.Change(ctx, c.store, target, func(lifecycle.StateInfo) ([]lifecycle.Action, error) {
		return []lifecycle.Action{{State: lifecycle.StateApproved, TimeStamp: at},
			{State: lifecycle.StateInstantiated, ContextID: ctxID, Revision: 1, TimeStamp: at.Add(time.Second)}}, nil
	}); err != nil {
		t.Fatal(err)
	}
	putContext(t, reads, target, ctxID, apps, placed)
}

// putContext stores a context of target, Instantiated, with apps placed as given.
func putContext(t testing.TB, reads *liveReads, target, ctxID string, apps map[string][]appctx.Object, placed []*appctx.ClusterApp) {
	t.Helper()
	ctx := context.Background()
	var names []string
	var rendered []*appctx.App
	for name, objs := range apps {
		names = append(names, name)
		rendered = append(rendered, &appctx.App{Name: name, Objects: objs})
	}
	if err := reads.contexts.Create(ctx, &appctx.Context{ID: ctxID, DIG: target, Instance: ctxID, Revision: 1,
		Status: lifecycle.StatusInstantiated, Apps: names}); err != nil {
		t.Fatal(err)
	}
	if err := reads.contexts.PutApps(ctx, ctxID, rendered); err != nil {
		t.Fatal(err)
	}
	if err := reads.contexts.PutPlacement(ctx, ctxID, placed, map[string]int{}); err != nil {
		t.Fatal(err)
	}
}

func res3(status ...string) []appctx.ResourceStatus {
	refs := []appctx.Ref{{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "default", Name: "web"},
		{Version: "v1", Kind: "Service", Namespace: "default", Name: "web"},
		{Version: "v1", Kind: "ConfigMap", Namespace: "default", Name: "web-cfg"}}
	out := make([]appctx.ResourceStatus, len(status))
	for i, s := range status {
		out[i] = appctx.ResourceStatus{Ref: refs[i], Status: s}
	}
	return out
}

var timeRE = regexp.MustCompile(`"time": "[^"]*"`)

// golden compares an answer with testdata/status/name.json (times masked).
func golden(t *testing.T, name string, body []byte) {
	t.Helper()
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("%s: %v: %s", name, err, body)
	}
	got, _ := json.MarshalIndent(v, "", "  ")
	got = append(timeRE.ReplaceAll(got, []byte(`"time": "<time>"`)), '\n')
	file := filepath.Join("testdata", "status", name+".json")
	if *updateGolden {
		if err := os.WriteFile(file, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (run go test ./api -run Status -update to write it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from %s:\n%s", name, file, got)
	}
}

// Every status query of EMCO 22.06+ (modes, output levels, filters, flags) answers in
// EMCO's shape; the golden files are the specification, reviewed by hand.
func TestStatusAnswersAsEMCO(t *testing.T) {
	reads := &liveReads{}
	c := newClient(t, func(s *Server) { reads.contexts = s.Contexts; s.Ops = reads })
	tree(t, c)

	// Before any instantiate: identity and history only.
	golden(t, "never-instantiated", c.do("GET", pDIG+"/status", nil).must(t, 200).body)

	secret := manifest("v1", "Secret", "creds", map[string]any{"data": map[string]any{"password": "c2VjcmV0"}})
	instantiated(t, c, reads, pDIG, "ctx-1", map[string][]appctx.Object{
		"app1": {{Ref: res3("")[0].Ref, Manifest: manifest("apps/v1", "Deployment", "web", map[string]any{"spec": map[string]any{"replicas": 2}})},
			{Ref: res3("", "")[1].Ref, Manifest: manifest("v1", "Service", "web", nil)},
			{Ref: res3("", "", "")[2].Ref, Manifest: manifest("v1", "ConfigMap", "web-cfg", map[string]any{"data": map[string]any{"k": "v"}})}},
		"app2": {{Ref: appctx.Ref{Version: "v1", Kind: "Secret", Namespace: "default", Name: "creds"}, Manifest: secret}},
	}, []*appctx.ClusterApp{
		{App: "app1", Cluster: "cp1+c1", Resources: res3("Applied", "Applied", "Applied")},
		{App: "app1", Cluster: "cp1+c2", Resources: func() []appctx.ResourceStatus {
			r := res3("Applied", "Retrying", "Pending")
			r[1].Attempts, r[1].Error = 3, "dial tcp 10.0.0.2:6443: connect: connection refused"
			return r
		}()},
		{App: "app2", Cluster: "cp1+c1", Resources: []appctx.ResourceStatus{{Ref: appctx.Ref{Version: "v1", Kind: "Secret", Namespace: "default", Name: "creds"}, Status: "Applied"}}},
	})
	present := appctx.Live{State: appctx.LivePresent, Ready: true}
	reads.live = map[string][]appctx.Live{
		"app1/cp1+c1": {present, present, present},
		"app1/cp1+c2": {{State: appctx.LivePresent, Reason: "Available False: MinimumReplicasUnavailable: Deployment does not have minimum availability."},
			{State: appctx.LiveUnknown, Error: "connection refused"}, {State: appctx.LiveNotPresent}},
		"app2/cp1+c1": {present},
	}
	reads.details = map[string]map[string]any{
		"Secret/creds":   {"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "creds"}, "data": map[string]any{"password": "c2VjcmV0"}},
		"Deployment/web": {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "web"}, "status": map[string]any{"readyReplicas": 2}},
	}

	for name, query := range map[string]string{
		"legacy-rsync-all":     "",
		"legacy-rsync-summary": "?type=rsync&output=summary",
		"legacy-cluster-all":   "?type=cluster",
		"deployed-summary":     "?status=deployed&output=summary",
		"deployed-all":         "?status=deployed",
		"deployed-detail":      "?status=deployed&output=detail",
		"ready-summary":        "?status=ready&output=summary",
		"ready-all":            "?type=rsync&status=ready", // status wins over type
		"ready-detail":         "?status=ready&output=detail",
		"filtered":             "?status=deployed&app=app1&cluster=cp1%2Bc2&resource=web-cfg",
		"filtered-summary":     "?status=ready&output=summary&cluster=cp1+c1",
		"apps-flag":            "?apps&status=ready",
		"clusters-flag":        "?clusters=false&app=app1",
		"resources-flag":       "?resources&cluster=cp1%2Bc1",
	} {
		body := c.do("GET", pDIG+"/status"+query, nil).must(t, 200).body
		if bytes.Contains(body, []byte("c2VjcmV0")) || bytes.Contains(body, []byte("managedFields")) {
			t.Errorf("%s shows a Secret's data or managed fields: %s", name, body)
		}
		golden(t, name, body)
	}
	if reads.reads != 5 { // only the ready and cluster queries read the clusters
		t.Errorf("clusters read %d times, want 5 (one per ready-mode status query)", reads.reads)
	}

	for query, want := range map[string]string{
		"?type=bogus&status=ready": `type="bogus" is invalid`,
		"?status=up":               `status="up" is invalid`,
		"?output=full":             `output="full" is invalid`,
		"?instance=":               "instance is empty",
		"?instance=ctx-9":          `instance "ctx-9" is not a context`,
		"?app=app9":                `no app "app9"`,
		"?app=-x":                  "app filter",
		"?cluster=c1":              `cluster="c1" is invalid`,
		"?resource=a/b":            "resource filter",
	} {
		if m := c.do("GET", pDIG+"/status"+query, nil).must(t, http.StatusBadRequest).message(t); !strings.Contains(m, want) {
			t.Errorf("%s: message %q, want %q", query, m, want)
		}
	}
	golden(t, "instance", c.do("GET", pDIG+"/status?instance=ctx-1&output=summary", nil).must(t, 200).body)
}

// A logical cloud answers as dcm does: status=ready by default, no type, app filter or
// apps flag, and its one app's clusters at the top level.
func TestLogicalCloudStatusAnswersAsDCM(t *testing.T) {
	reads := &liveReads{}
	c := newClient(t, func(s *Server) { reads.contexts = s.Contexts; s.Ops = reads })
	tree(t, c)
	lc := pP + "/logical-clouds/lc2"
	ns := appctx.Ref{Version: "v1", Kind: "Namespace", Name: "team-b"}
	instantiated(t, c, reads, lc, "ctx-lc", map[string][]appctx.Object{
		"logical-cloud": {{Ref: ns, Manifest: manifest("v1", "Namespace", "team-b", nil)}},
	}, []*appctx.ClusterApp{{App: "logical-cloud", Cluster: "cp1+c1", Resources: []appctx.ResourceStatus{{Ref: ns, Status: "Applied"}}}})
	reads.live = map[string][]appctx.Live{"logical-cloud/cp1+c1": {{State: appctx.LivePresent, Ready: true}}}
	for name, query := range map[string]string{
		"lc-default":          "?type=bogus&app=x", // neither is a dcm parameter
		"lc-deployed-summary": "?status=deployed&output=summary",
		"lc-clusters-flag":    "?clusters&apps",
		"lc-resources-flag":   "?resources",
	} {
		golden(t, name, c.do("GET", lc+"/status"+query, nil).must(t, 200).body)
	}
}

// A cluster's network intents answer as ncm does: DIG-style parameters (legacy rsync by
// default), the name "provider+cluster", and the one app's one cluster under "cluster".
func TestClusterNetworkStatusAnswersAsNCM(t *testing.T) {
	reads := &liveReads{}
	c := newClient(t, func(s *Server) { reads.contexts = s.Contexts; s.Ops = reads })
	tree(t, c)
	cluster := "/cluster-providers/cp1/clusters/c1"
	golden(t, "ncm-never-applied", c.do("GET", cluster+"/status", nil).must(t, 200).body)
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	if _, err := digstate.Change(context.Background(), c.store, cluster, func(lifecycle.StateInfo) ([]lifecycle.Action, error) {
		return []lifecycle.Action{{State: lifecycle.StateApplied, ContextID: "ctx-net", TimeStamp: at}}, nil
	}); err != nil {
		t.Fatal(err)
	}
	net := appctx.Ref{Group: "k8s.plugin.opnfv.org", Version: "v1alpha1", Kind: "Network", Namespace: "default", Name: "blue"}
	putContext(t, reads, cluster, "ctx-net", map[string][]appctx.Object{
		"network-intents": {{Ref: net, Manifest: manifest("k8s.plugin.opnfv.org/v1alpha1", "Network", "blue", nil)}},
	}, []*appctx.ClusterApp{{App: "network-intents", Cluster: "cp1+c1", Resources: []appctx.ResourceStatus{{Ref: net, Status: "Applied"}}}})
	reads.live = map[string][]appctx.Live{"network-intents/cp1+c1": {{State: appctx.LivePresent, Ready: true}}}
	for name, query := range map[string]string{
		"ncm-default":          "",
		"ncm-deployed-summary": "?status=deployed&output=summary",
		"ncm-ready-all":        "?status=ready",
		"ncm-deployed-detail":  "?status=deployed&output=detail",
	} {
		golden(t, name, c.do("GET", cluster+"/status"+query, nil).must(t, 200).body)
	}
	if m := c.do("GET", cluster+"/status?type=bogus", nil).must(t, http.StatusBadRequest).message(t); !strings.Contains(m, `type="bogus" is invalid`) {
		t.Errorf("bad type: %q", m)
	}
}

// A status answer's clusters go under their apps (DIGs), in one list (logical clouds) or
// alone (a cluster's network intents).
func TestShapeStatusByLayout(t *testing.T) {
	apps := func() []appStatus {
		return []appStatus{{Name: "a", Clusters: []clusterStatus{{Cluster: "c1"}, {Cluster: "c2"}}}, {Name: "b", Clusters: []clusterStatus{{Cluster: "c3"}}}}
	}
	byApp := &statusResult{Apps: apps()}
	shapeStatus(byApp, lifecycle.ByApp)
	if len(byApp.Apps) != 2 || byApp.Clusters != nil || byApp.Cluster != nil {
		t.Errorf("by app: %+v", byApp)
	}
	byCluster := &statusResult{Apps: apps()}
	shapeStatus(byCluster, lifecycle.ByCluster)
	if byCluster.Apps != nil || len(byCluster.Clusters) != 3 || byCluster.Clusters[2].Cluster != "c3" {
		t.Errorf("by cluster: %+v", byCluster)
	}
	one := &statusResult{Apps: apps()}
	shapeStatus(one, lifecycle.OneCluster)
	if one.Apps != nil || one.Cluster == nil || one.Cluster.Cluster != "c1" {
		t.Errorf("one cluster: %+v", one)
	}
	none := &statusResult{}
	if shapeStatus(none, lifecycle.OneCluster); none.Cluster != nil {
		t.Errorf("one cluster, none placed: %+v", none)
	}
}
