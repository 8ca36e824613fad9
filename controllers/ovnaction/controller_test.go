package ovnaction

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/temco/temco/contract"
	"github.com/temco/temco/contract/contracttest"
	"github.com/temco/temco/controllers/ncm"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/model"
	"github.com/temco/temco/internal/core/store"
)

const (
	testDIG    = "/projects/p/composite-apps/ca/v1/deployment-intent-groups/d"
	testIntent = testDIG + "/network-controller-intent/nci"
)

// memStore is an in-memory controllers.Docs; failing makes List of a kind fail.
type memStore struct {
	docs    map[string]*store.Doc
	failing map[string]error
}

func (m *memStore) Get(_ context.Context, id string) (*store.Doc, error) {
	if d, ok := m.docs[id]; ok {
		return d, nil
	}
	return nil, &store.Error{Code: store.ErrNotFound, ID: id}
}

func (m *memStore) List(_ context.Context, q store.Query) ([]*store.Doc, error) {
	if err := m.failing[q.Kind]; err != nil {
		return nil, err
	}
	var out []*store.Doc
	for _, d := range m.docs {
		if d.Parent == q.Parent && d.Kind == q.Kind {
			out = append(out, d)
		}
	}
	slices.SortFunc(out, func(a, b *store.Doc) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// put stores a resource as the API does: its id is the collection's path and its name,
// its parent the collection's owner.
func (m *memStore) put(t *testing.T, coll, kind, name string, spec any) string {
	t.Helper()
	body, err := json.Marshal(model.Resource[any]{Metadata: model.Metadata{Name: name}, Spec: spec})
	require.NoError(t, err)
	id := coll + "/" + name
	m.docs[id] = &store.Doc{ID: id, Parent: coll[:strings.LastIndex(coll, "/")], Kind: kind, Name: name, Body: string(body)}
	return id
}

// intent starts a store holding the network-controller-intent "nci".
func intent(t *testing.T) *memStore {
	m := &memStore{docs: map[string]*store.Doc{}, failing: map[string]error{}}
	m.put(t, testDIG+"/network-controller-intent", KindIntent, "nci", model.Empty{})
	return m
}

// workload adds a workload intent with interfaces to the store.
func (m *memStore) workload(t *testing.T, name string, sp WorkloadIntentSpec, ifs ...InterfaceSpec) {
	id := m.put(t, testIntent+"/workload-intents", KindWorkloadIntent, name, sp)
	for i, s := range ifs {
		m.put(t, id+"/interfaces", KindInterface, fmt.Sprintf("if%d", i), s)
	}
}

// kv stores a cluster kv-pair resource.
func (m *memStore) kv(t *testing.T, cluster, name string, pairs ...map[string]any) {
	p, c := lifecycle.SplitClusterKey(cluster)
	m.put(t, "/cluster-providers/"+p+"/clusters/"+c+"/kv-pairs", model.KindClusterKV, name, model.KVSpec{KV: pairs})
}

func deploymentOf(name string) WorkloadIntentSpec {
	return WorkloadIntentSpec{App: "web", WorkloadResource: name, Type: "Deployment"}
}

func iface(name, network string) InterfaceSpec {
	return InterfaceSpec{Interface: name, Network: network, DefaultGateway: "false"}
}

// object is a contract resource of a manifest.
func object(t *testing.T, manifest string) contract.Resource {
	t.Helper()
	var m struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct{ Name string }
	}
	require.NoError(t, json.Unmarshal([]byte(manifest), &m))
	return contract.Resource{APIVersion: m.APIVersion, Kind: m.Kind, Name: m.Metadata.Name, Manifest: json.RawMessage(manifest)}
}

const deployment = `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"},"spec":{"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"app"}]}}}}`

// perCluster is a context whose app "web" has its own objects on some clusters.
type perCluster struct {
	*contracttest.Fake
	on map[string][]contract.Resource
}

func (f *perCluster) Resources(ctx context.Context, app, cluster string) ([]contract.Resource, error) {
	if objs, ok := f.on[cluster]; ok {
		return objs, nil
	}
	return f.Fake.Resources(ctx, app, cluster)
}

// fake is a context with app "web" on clusters p1+c1 and p1+c2, every one with objects.
func fake(objects ...contract.Resource) *perCluster {
	return &perCluster{Fake: &contracttest.Fake{
		In: contract.Input{Project: "p", CompositeApp: "ca", CompositeAppVersion: "v1", DeploymentIntentGroup: "d",
			Controller: "ovnaction", Type: contract.TypeAction, Intent: "nci", Operation: contract.OpInstantiate},
		AppList: []contract.App{{Name: "web", Clusters: []string{"p1+c2", "p1+c1"}}},
		Objects: map[string][]contract.Resource{"web": objects},
	}, on: map[string][]contract.Resource{}}
}

// applied is ncm's view of clusters whose applied network intents offer nets.
func applied(nets ...string) func(context.Context, string) (ncm.ClusterNetworks, error) {
	return func(context.Context, string) (ncm.ClusterNetworks, error) {
		out := ncm.ClusterNetworks{Applied: true, State: lifecycle.StateApplied, Networks: map[string]string{}}
		for _, n := range nets {
			out.Networks[n] = ncm.CRNetwork
		}
		return out, nil
	}
}

func run(st *memStore, f contract.Context, nets func(context.Context, string) (ncm.ClusterNetworks, error)) error {
	return (&controller{store: st, networks: nets}).Run(context.Background(), f)
}

// annotationsOf applies the edits of one cluster to a manifest and returns the pod
// template's annotations at path.
func annotationsOf(t *testing.T, edits []contract.Edit, cluster string, manifest string, path ...string) map[string]string {
	t.Helper()
	doc := map[string]any{}
	require.NoError(t, json.Unmarshal([]byte(manifest), &doc))
	for _, e := range edits {
		if len(e.Clusters) > 0 && !slices.Contains(e.Clusters, cluster) {
			continue
		}
		require.Equal(t, contract.EditPatch, e.Op)
		require.Equal(t, contract.PatchMerge, e.Type)
		var patch map[string]any
		require.NoError(t, json.Unmarshal(e.Data, &patch))
		mergeInto(doc, patch)
	}
	cur := doc
	for _, k := range append(path, "metadata") {
		next, _ := cur[k].(map[string]any)
		cur = next
	}
	out := map[string]string{}
	for k, v := range cur["annotations"].(map[string]any) {
		out[k] = v.(string)
	}
	return out
}

// mergeInto is RFC 7386 without deletions, enough for these patches.
func mergeInto(doc, patch map[string]any) {
	for k, v := range patch {
		if pm, ok := v.(map[string]any); ok {
			dm, _ := doc[k].(map[string]any)
			if dm == nil {
				dm = map[string]any{}
				doc[k] = dm
			}
			mergeInto(dm, pm)
			continue
		}
		doc[k] = v
	}
}

func refusal(t *testing.T, err error) string {
	t.Helper()
	var r *contract.Refusal
	require.True(t, errors.As(err, &r), "want a refusal, got %v", err)
	return r.Message
}

// The chart's own annotations are kept: an interface already there (same network and
// name) takes the intent's values in place, new ones are appended in name order, and
// ovn-networkobj joins the Multus networks, EMCO's defaults (no kv-pairs) using Multus.
func TestAnnotationsMergeWithTheWorkloads(t *testing.T) {
	st := intent(t)
	eth1 := InterfaceSpec{Interface: "eth1", Network: "net1", DefaultGateway: "true", IPAddress: "172.16.33.5"}
	eth2 := InterfaceSpec{Interface: "eth2", Network: "net2", DefaultGateway: "false", MACAddress: "0a:58:ac:10:21:05"}
	st.workload(t, "w", deploymentOf("web"), eth1, eth2)
	own := `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"},"spec":{"template":{"metadata":{"annotations":{` +
		`"k8s.plugin.opnfv.org/nfn-network":"{\"type\":\"ovn4nfv\",\"interface\":[{\"interface\":\"eth0\",\"name\":\"net0\",\"defaultGateway\":\"false\"},{\"interface\":\"eth1\",\"name\":\"net1\",\"defaultGateway\":\"false\",\"ipAddress\":\"172.16.33.9\"}]}",` +
		`"k8s.v1.cni.cncf.io/networks":"[{\"name\":\"sriov\",\"interface\":\"net9\"}]","keep":"me"}}}}}`
	f := fake(object(t, own))
	require.NoError(t, run(st, f, applied("net0", "net1", "net2")))

	require.Len(t, f.Edits, 1, "one patch for every cluster: %+v", f.Edits)
	e := f.Edits[0]
	assert.Equal(t, "Deployment", e.Kind)
	assert.Equal(t, "web", e.Name)
	assert.Empty(t, e.Clusters)
	got := annotationsOf(t, f.Edits, "p1+c1", own, "spec", "template")
	assert.Equal(t, `{"type":"ovn4nfv","interface":[{"interface":"eth0","name":"net0","defaultGateway":"false"},`+
		`{"interface":"eth1","name":"net1","defaultGateway":"true","ipAddress":"172.16.33.5"},`+
		`{"interface":"eth2","name":"net2","defaultGateway":"false","macAddress":"0a:58:ac:10:21:05"}]}`, got[nfnKey])
	assert.Equal(t, `[{"name":"sriov","interface":"net9"},{"name":"ovn-networkobj","namespace":"default"}]`, got[networksKey])
	assert.Equal(t, "me", got["keep"])
}

// Two workload intents on one workload make one patch holding both, as EMCO's
// successive edits of the context do.
func TestWorkloadIntentsOnOneWorkloadMerge(t *testing.T) {
	st := intent(t)
	st.workload(t, "a", deploymentOf("web"), iface("eth1", "net1"))
	st.workload(t, "b", deploymentOf("web"), iface("eth2", "net2"), iface("eth1", "net1"))
	f := fake(object(t, deployment))
	require.NoError(t, run(st, f, applied("net1", "net2")))
	require.Len(t, f.Edits, 1)
	got := annotationsOf(t, f.Edits, "p1+c1", deployment, "spec", "template")
	assert.Equal(t, `{"type":"ovn4nfv","interface":[{"interface":"eth1","name":"net1","defaultGateway":"false"},`+
		`{"interface":"eth2","name":"net2","defaultGateway":"false"}]}`, got[nfnKey])
	assert.Equal(t, `[{"name":"ovn-networkobj","namespace":"default"}]`, got[networksKey])
}

// Multus is chosen per cluster from its kv-pairs: a cluster where Nodus serves every
// interface gets no Multus annotation.
func TestMultusFollowsEachClustersKVPairs(t *testing.T) {
	st := intent(t)
	st.workload(t, "w", deploymentOf("web"), iface("eth1", "net1"))
	st.kv(t, "p1+c2", "cni", map[string]any{kvNodusForAll: "true"})
	f := fake(object(t, deployment))
	require.NoError(t, run(st, f, applied("net1")))

	require.Len(t, f.Edits, 2, "the clusters' patches differ: %+v", f.Edits)
	c1 := annotationsOf(t, f.Edits, "p1+c1", deployment, "spec", "template")
	c2 := annotationsOf(t, f.Edits, "p1+c2", deployment, "spec", "template")
	assert.Equal(t, `[{"name":"ovn-networkobj","namespace":"default"}]`, c1[networksKey])
	assert.NotContains(t, c2, networksKey)
	assert.Equal(t, c1[nfnKey], c2[nfnKey])
	assert.Equal(t, []string{"p1+c1"}, f.Edits[0].Clusters)
	assert.Equal(t, []string{"p1+c2"}, f.Edits[1].Clusters)
}

func TestMultusFrom(t *testing.T) {
	kv := func(pairs ...map[string]any) model.KVSpec { return model.KVSpec{KV: pairs} }
	for _, tc := range []struct {
		name string
		kvs  []model.KVSpec
		want bool
	}{
		{"no kv-pairs: Multus", nil, true},
		{"Nodus for all interfaces", []model.KVSpec{kv(map[string]any{kvNodusForAll: "true"})}, false},
		{"Nodus for all, as a JSON boolean", []model.KVSpec{kv(map[string]any{kvNodusForAll: true})}, false},
		{"Nodus for all, strconv's spelling", []model.KVSpec{kv(map[string]any{kvNodusForAll: "T"})}, false},
		{"Nodus not for all", []model.KVSpec{kv(map[string]any{kvNodusForAll: "false", kvCNIWrapper: "none"})}, true},
		{"another wrapper", []model.KVSpec{kv(map[string]any{kvCNIWrapper: "danm"})}, false},
		{"multus in any case", []model.KVSpec{kv(map[string]any{kvCNIWrapper: "Multus"})}, true},
		{"Nodus for all wins over the wrapper", []model.KVSpec{kv(map[string]any{kvCNIWrapper: "multus", kvNodusForAll: "true"})}, false},
		{"a resource is read up to its first key", []model.KVSpec{kv(map[string]any{kvCNIWrapper: "multus"}, map[string]any{kvNodusForAll: "true"})}, true},
		{"a later resource overrides", []model.KVSpec{kv(map[string]any{kvCNIWrapper: "danm"}), kv(map[string]any{kvCNIWrapper: "multus"})}, true},
		{"other keys are ignored", []model.KVSpec{kv(map[string]any{"istioIngressGatewayAddress": "1.2.3.4"})}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, multusFrom(tc.kvs))
		})
	}
}

// Each workload kind keeps its pods' annotations in its own place.
func TestPodTemplatesOfEveryKind(t *testing.T) {
	const spec = `"spec":{"template":{"spec":{"containers":[{"name":"c"}]}}}`
	for _, tc := range []struct {
		kind, manifest string
		path           []string
	}{
		{"Pod", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"w"},"spec":{"containers":[{"name":"c"}]}}`, nil},
		{"CronJob", `{"apiVersion":"batch/v1","kind":"CronJob","metadata":{"name":"w"},"spec":{"schedule":"* * * * *","jobTemplate":{` + spec + `}}}`,
			[]string{"spec", "jobTemplate", "spec", "template"}},
		{"Job", `{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"w"},` + spec + `}`, []string{"spec", "template"}},
		{"DaemonSet", `{"apiVersion":"apps/v1","kind":"DaemonSet","metadata":{"name":"w"},` + spec + `}`, []string{"spec", "template"}},
		{"StatefulSet", `{"apiVersion":"apps/v1","kind":"StatefulSet","metadata":{"name":"w"},` + spec + `}`, []string{"spec", "template"}},
		{"ReplicaSet", `{"apiVersion":"apps/v1","kind":"ReplicaSet","metadata":{"name":"w"},` + spec + `}`, []string{"spec", "template"}},
		{"ReplicationController", `{"apiVersion":"v1","kind":"ReplicationController","metadata":{"name":"w"},` + spec + `}`, []string{"spec", "template"}},
		{"VirtualMachine", `{"apiVersion":"kubevirt.io/v1","kind":"VirtualMachine","metadata":{"name":"w"},"spec":{"template":{"spec":{}}}}`, []string{"spec", "template"}},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			st := intent(t)
			st.workload(t, "w", WorkloadIntentSpec{App: "web", WorkloadResource: "w", Type: tc.kind}, iface("eth1", "net1"))
			st.kv(t, "p1+c1", "cni", map[string]any{kvCNIWrapper: "none"})
			st.kv(t, "p1+c2", "cni", map[string]any{kvCNIWrapper: "none"})
			f := fake(object(t, tc.manifest))
			require.NoError(t, run(st, f, applied("net1")))
			require.Len(t, f.Edits, 1)
			assert.Equal(t, tc.kind, f.Edits[0].Kind)
			got := annotationsOf(t, f.Edits, "p1+c1", tc.manifest, tc.path...)
			assert.Equal(t, map[string]string{nfnKey: `{"type":"ovn4nfv","interface":[{"interface":"eth1","name":"net1","defaultGateway":"false"}]}`}, got)
		})
	}
}

// Every run starts from the rendered workloads: an update whose intent lost an interface
// annotates without it.
func TestAnUpdateRecomputesTheAnnotations(t *testing.T) {
	st := intent(t)
	st.workload(t, "w", deploymentOf("web"), iface("eth1", "net1"), iface("eth2", "net2"))
	f := fake(object(t, deployment))
	require.NoError(t, run(st, f, applied("net1", "net2")))
	assert.Contains(t, annotationsOf(t, f.Edits, "p1+c1", deployment, "spec", "template")[nfnKey], `"eth2"`)

	delete(st.docs, testIntent+"/workload-intents/w/interfaces/if1")
	upd := fake(object(t, deployment))
	upd.In.Operation, upd.In.PreviousContextID = contract.OpUpdate, "ctx1"
	require.NoError(t, run(st, upd, applied("net1", "net2")))
	assert.Equal(t, `{"type":"ovn4nfv","interface":[{"interface":"eth1","name":"net1","defaultGateway":"false"}]}`,
		annotationsOf(t, upd.Edits, "p1+c1", deployment, "spec", "template")[nfnKey])
}

// A cluster without the workload is skipped, as in EMCO; the workload must be on one of
// them at least.
func TestAClusterWithoutTheWorkloadIsSkipped(t *testing.T) {
	st := intent(t)
	st.workload(t, "w", deploymentOf("web"), iface("eth1", "net1"))
	f := fake(object(t, deployment))
	f.on["p1+c2"] = nil
	require.NoError(t, run(st, f, applied("net1")))
	require.Len(t, f.Edits, 1)
	assert.Equal(t, []string{"p1+c1"}, f.Edits[0].Clusters)
}

func TestRefusals(t *testing.T) {
	svc := object(t, `{"apiVersion":"v1","kind":"Service","metadata":{"name":"web"},"spec":{"ports":[{"port":80}]}}`)
	withAnnotation := func(key, value string) contract.Resource {
		v, _ := json.Marshal(value)
		return object(t, `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"},"spec":{"template":{"metadata":{"annotations":{"`+
			key+`":`+string(v)+`}}}}}`)
	}
	notApplied := func(context.Context, string) (ncm.ClusterNetworks, error) {
		return ncm.ClusterNetworks{State: lifecycle.StateCreated, Networks: map[string]string{"net1": ncm.CRNetwork}}, nil
	}
	for _, tc := range []struct {
		name    string
		spec    WorkloadIntentSpec
		network string
		objects []contract.Resource
		nets    func(context.Context, string) (ncm.ClusterNetworks, error)
		want    []string
	}{
		{"a workload on no cluster", deploymentOf("api"), "net1", []contract.Resource{object(t, deployment)}, applied("net1"),
			[]string{`workload intent "w"`, `app "web" has no Deployment "api" on any of its clusters [p1+c1 p1+c2]`}},
		{"a kind in another case", WorkloadIntentSpec{App: "web", WorkloadResource: "web", Type: "deployment"}, "net1",
			[]contract.Resource{object(t, deployment)}, applied("net1"), []string{`no deployment "web"`, "it has a Deployment of that name"}},
		{"an app the deployment lacks", WorkloadIntentSpec{App: "db", WorkloadResource: "web", Type: "Deployment"}, "net1",
			[]contract.Resource{object(t, deployment)}, applied("net1"), []string{`workload intent "w"`, `the deployment has no app "db"`}},
		{"an unknown network", deploymentOf("web"), "net9", []contract.Resource{object(t, deployment)}, applied("net1", "pnet"),
			[]string{`interface "if0"`, `network "net9" is not a network or provider network of cluster p1+c1 (it has net1, pnet)`}},
		{"networks not applied", deploymentOf("web"), "net1", []contract.Resource{object(t, deployment)}, notApplied,
			[]string{`interface "if0"`, `network "net1"`, "cluster p1+c1", "are Created, not applied", "POST /v2/cluster-providers/p1/clusters/c1/apply"}},
		{"a kind without pod template", WorkloadIntentSpec{App: "web", WorkloadResource: "web", Type: "Service"}, "net1",
			[]contract.Resource{svc}, applied("net1"), []string{`Service "web" of app "web" has no pod template`}},
		{"an nfn annotation that is not JSON", deploymentOf("web"), "net1", []contract.Resource{withAnnotation(nfnKey, "eth1")},
			applied("net1"), []string{"k8s.plugin.opnfv.org/nfn-network", "not the JSON Nodus reads"}},
		{"a Multus annotation Multus cannot read", deploymentOf("web"), "net1", []contract.Resource{withAnnotation(networksKey, "ns/a/b")},
			applied("net1"), []string{"k8s.v1.cni.cncf.io/networks", "Multus cannot read", "more than one '/'"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := intent(t)
			st.workload(t, "w", tc.spec, iface("eth1", tc.network))
			f := fake(tc.objects...)
			msg := refusal(t, run(st, f, tc.nets))
			assert.Contains(t, msg, `network-controller-intent "nci"`)
			for _, part := range tc.want {
				assert.Contains(t, msg, part)
			}
			assert.Empty(t, f.Edits)
		})
	}
}

func TestAMissingIntentIsRefusedAndAnEmptyOneDoesNothing(t *testing.T) {
	st := intent(t)
	f := fake(object(t, deployment))
	f.In.Intent = "other"
	assert.Contains(t, refusal(t, run(st, f, applied())), `no network-controller-intent "other"`)

	// A workload intent without interfaces changes nothing, even naming nothing there.
	st.workload(t, "w", deploymentOf("nowhere"))
	f = fake(object(t, deployment))
	require.NoError(t, run(st, f, applied()))
	assert.Empty(t, f.Edits)

	f.In.Operation = contract.OpTerminate
	require.NoError(t, run(st, f, nil))
	assert.Empty(t, f.Edits)
}

// What cannot be read fails the step (retried); EMCO falls back to defaults or skips.
func TestReadErrorsAreErrors(t *testing.T) {
	st := intent(t)
	st.workload(t, "w", deploymentOf("web"), iface("eth1", "net1"))
	st.failing[model.KindClusterKV] = errors.New("mongo went away")
	err := run(st, fake(object(t, deployment)), applied("net1"))
	require.ErrorContains(t, err, "kv-pairs of cluster p1+c1: mongo went away")
	var r *contract.Refusal
	assert.False(t, errors.As(err, &r), "a store error is retried, not refused")

	delete(st.failing, model.KindClusterKV)
	err = run(st, fake(object(t, deployment)), func(context.Context, string) (ncm.ClusterNetworks, error) {
		return ncm.ClusterNetworks{}, errors.New("timeout")
	})
	require.ErrorContains(t, err, "networks of cluster p1+c1: timeout")
	assert.False(t, errors.As(err, &r))
}
