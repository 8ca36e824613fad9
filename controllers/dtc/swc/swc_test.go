package swc

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/temco/temco/contract"
	"github.com/temco/temco/contract/contracttest"
	"github.com/temco/temco/controllers/dtc"
	"github.com/temco/temco/internal/core/model"
)

const (
	c1 = "local+cluster1"
	c2 = "local+cluster2"
)

// kv is one kv-pairs resource, its entries one key each as EMCO's examples write them.
func kv(pairs ...string) model.KVSpec {
	var s model.KVSpec
	for i := 0; i < len(pairs); i += 2 {
		s.KV = append(s.KV, map[string]any{pairs[i]: pairs[i+1]})
	}
	return s
}

var fullKV = kv(KVCnfPort, "12354", KVServicePort, "31333", KVAllowedCIDR, "192.168.22.22/24")

func inbound(name, app, edgeCNF string, clients ...string) dtc.Inbound {
	isi := dtc.Inbound{Name: name, Spec: dtc.InboundSpec{App: app, AppLabel: "app=" + app, ServiceName: app + "-svc", Port: 3333,
		Protocol: "TCP", EdgeCNF: edgeCNF}}
	for _, c := range clients {
		isi.Clients = append(isi.Clients, dtc.Client{Name: c + "-client", Spec: dtc.ClientSpec{App: c, AppLabel: "app=" + c, ServiceName: c}})
	}
	return isi
}

// edit is the addResource edit of obj for app on cluster.
func edit(t *testing.T, app, cluster string, obj map[string]any) contract.Edit {
	t.Helper()
	data, err := json.Marshal(obj)
	require.NoError(t, err)
	return contract.Edit{Op: contract.EditAddResource, App: app, Clusters: []string{cluster}, Data: data}
}

func TestPlan(t *testing.T) {
	p := ports{CNF: "12354", Service: "31333", CIDR: "192.168.22.22/24"}
	serverSA := sdewanApplication("server-svc", "ns1", map[string]string{"app": "server"}, p)
	for _, tc := range []struct {
		name    string
		inbound []dtc.Inbound
		placed  map[string][]string
		kvs     map[string][]model.KVSpec
		want    func(t *testing.T) []contract.Edit
		refused []string // parts of the refusal
	}{{
		name:    "server on cluster1, client on cluster2: CNFService with the server, SdewanApplication with the client",
		inbound: []dtc.Inbound{inbound("serverin", "server", EdgeCNF, "client")},
		placed:  map[string][]string{"server": {c1}, "client": {c2}},
		kvs:     map[string][]model.KVSpec{c1: {fullKV}},
		want: func(t *testing.T) []contract.Edit {
			return []contract.Edit{edit(t, "server", c1, cnfService("server-svc", "ns1", p)), edit(t, "client", c2, serverSA)}
		},
	}, {
		// EMCO's sdewan example: both apps placed by one label on one cluster. As in EMCO's
		// swc, each object goes with its own app, both to that cluster.
		name:    "server and client on one cluster: the CNFService with the server, the SdewanApplication with the client, both there",
		inbound: []dtc.Inbound{inbound("serverin", "server", EdgeCNF, "client")},
		placed:  map[string][]string{"server": {c1}, "client": {c1}},
		kvs:     map[string][]model.KVSpec{c1: {fullKV}},
		want: func(t *testing.T) []contract.Edit {
			return []contract.Edit{edit(t, "server", c1, cnfService("server-svc", "ns1", p)), edit(t, "client", c1, serverSA)}
		},
	}, {
		name:    "the kv-pairs may be spread over resources; the first entry holding a key wins",
		inbound: []dtc.Inbound{inbound("serverin", "server", EdgeCNF)},
		placed:  map[string][]string{"server": {c1}},
		kvs: map[string][]model.KVSpec{c1: {kv(KVCnfPort, "12354", "other", "x"),
			kv(KVServicePort, "31333", KVAllowedCIDR, "192.168.22.22/24", KVCnfPort, "1")}},
		want: func(t *testing.T) []contract.Edit {
			return []contract.Edit{edit(t, "server", c1, cnfService("server-svc", "ns1", p))}
		},
	}, {
		name:    "clients take the ports of the server's first cluster; two clients on one cluster share one SdewanApplication",
		inbound: []dtc.Inbound{inbound("serverin", "server", EdgeCNF, "a", "b")},
		placed:  map[string][]string{"server": {c2, c1}, "a": {c2}, "b": {c2, c1}},
		kvs:     map[string][]model.KVSpec{c1: {fullKV}, c2: {kv(KVCnfPort, "1", KVServicePort, "2", KVAllowedCIDR, "10.0.0.0/8")}},
		want: func(t *testing.T) []contract.Edit {
			return []contract.Edit{
				edit(t, "server", c1, cnfService("server-svc", "ns1", p)),
				edit(t, "server", c2, cnfService("server-svc", "ns1", ports{"1", "2", "10.0.0.0/8"})),
				edit(t, "a", c2, serverSA),
				edit(t, "b", c1, serverSA),
			}
		},
	}, {
		name:    "inbound intents without edgeCNF sdewan are not swc's",
		inbound: []dtc.Inbound{inbound("plain", "web", "", "client"), inbound("serverin", "server", EdgeCNF)},
		placed:  map[string][]string{"server": {c1}, "web": {c1}, "client": {c2}},
		kvs:     map[string][]model.KVSpec{c1: {fullKV}},
		want: func(t *testing.T) []contract.Edit {
			return []contract.Edit{edit(t, "server", c1, cnfService("server-svc", "ns1", p))}
		},
	}, {
		name:    "a server cluster without the kv-pairs is refused with the keys it lacks",
		inbound: []dtc.Inbound{inbound("serverin", "server", EdgeCNF, "client")},
		placed:  map[string][]string{"server": {c1}, "client": {c2}},
		kvs:     map[string][]model.KVSpec{c1: {kv(KVCnfPort, "12354")}},
		refused: []string{`inbound intent "serverin"`, "cluster local+cluster1", "SdewanServicePort, SdewanServiceAllowedCidr",
			"/v2/cluster-providers/local/clusters/cluster1/kv-pairs"},
	}, {
		name:    "a server app the composite app does not have",
		inbound: []dtc.Inbound{inbound("serverin", "nosuch", EdgeCNF)},
		placed:  map[string][]string{},
		refused: []string{`server app "nosuch"`},
	}, {
		name:    "a client app the composite app does not have",
		inbound: []dtc.Inbound{inbound("serverin", "server", EdgeCNF, "nosuch")},
		placed:  map[string][]string{"server": {c1}},
		kvs:     map[string][]model.KVSpec{c1: {fullKV}},
		refused: []string{`client "nosuch-client"`, `app "nosuch"`},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			g := &dtc.TrafficGroup{Name: "tg", Inbound: tc.inbound}
			got, err := plan(g, tc.placed, tc.kvs, "ns1")
			if tc.refused != nil {
				var r *contract.Refusal
				require.ErrorAs(t, err, &r)
				for _, part := range tc.refused {
					assert.Contains(t, err.Error(), part)
				}
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want(t), got)
		})
	}
}

// The objects are EMCO's, field for field.
func TestObjectsAreEMCOs(t *testing.T) {
	p := ports{CNF: "12354", Service: "31333", CIDR: "192.168.22.22/24"}
	for _, tc := range []struct {
		obj  map[string]any
		want string
	}{{cnfService("http-service", "default", p), `{"apiVersion":"batch.sdewan.akraino.org/v1alpha1","kind":"CNFService",
		"metadata":{"name":"http-service.default.svc.cluster.local","namespace":"default","labels":{"sdewanPurpose":"base"}},
		"spec":{"fullname":"http-service.default.svc.cluster.local","port":"12354","dport":"31333","cidr":"192.168.22.22/24"}}`,
	}, {sdewanApplication("http-service", "default", map[string]string{"app": "http-server"}, p), `{"apiVersion":"batch.sdewan.akraino.org/v1alpha1",
		"kind":"SdewanApplication","metadata":{"name":"http-service","namespace":"default","labels":{"sdewanPurpose":"base"}},
		"spec":{"appNamespace":"default","podSelector":{"matchLabels":{"app":"http-server"}},"servicePort":"31333","cnfPort":"12354"}}`,
	}} {
		got, err := json.Marshal(tc.obj)
		require.NoError(t, err)
		assert.JSONEq(t, tc.want, string(got))
	}
}

type fakeSources struct {
	group *dtc.TrafficGroup
	kvs   map[string][]model.KVSpec
	read  []string // clusters whose kv-pairs were read
}

func (f *fakeSources) Group(context.Context, contract.Input) (*dtc.TrafficGroup, error) {
	return f.group, nil
}
func (f *fakeSources) Namespace(context.Context, string) (string, error) { return "default", nil }
func (f *fakeSources) KVPairs(_ context.Context, cluster string) ([]model.KVSpec, error) {
	f.read = append(f.read, cluster)
	return f.kvs[cluster], nil
}

// Run reads the kv-pairs of the server clusters only and records the plan.
func TestRunRecordsThePlan(t *testing.T) {
	src := &fakeSources{group: &dtc.TrafficGroup{Name: "tg", Inbound: []dtc.Inbound{inbound("serverin", "server", EdgeCNF, "client")}},
		kvs: map[string][]model.KVSpec{c1: {fullKV}}}
	f := &contracttest.Fake{In: contract.Input{Operation: contract.OpInstantiate, Parent: "dtc", Intent: "tg"},
		AppList: []contract.App{{Name: "server", Clusters: []string{c1}}, {Name: "client", Clusters: []string{c2}}}}
	require.NoError(t, (&controller{src: src}).Run(context.Background(), f))
	assert.Equal(t, []string{c1}, src.read)
	require.Len(t, f.Edits, 2)
	assert.Equal(t, "server", f.Edits[0].App)
	assert.Equal(t, "client", f.Edits[1].App)
}
