package nps

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/temco/temco/contract"
	"github.com/temco/temco/contract/contracttest"
	"github.com/temco/temco/controllers/dtc"
	"github.com/temco/temco/controllers/storetest"
	"github.com/temco/temco/internal/core/model"
	"github.com/temco/temco/internal/core/store"
)

func server(app, label string, port int, protocol string) dtc.InboundSpec {
	return dtc.InboundSpec{App: app, AppLabel: label, ServiceName: app, Port: port, Protocol: protocol}
}

func client(name, label string, cidrs ...string) dtc.Client {
	return dtc.Client{Name: name, Spec: dtc.ClientSpec{App: name, AppLabel: label, ServiceName: name, CIDRs: cidrs}}
}

func inbound(name string, sp dtc.InboundSpec, clients ...dtc.Client) dtc.Inbound {
	return dtc.Inbound{Name: name, Spec: sp, Clients: clients}
}

// EMCO's network_policy example: server http-server (app=http-server, TCP 3333), one
// client http-client.
var example = inbound("serverin", server("http-server", "app=http-server", 3333, "TCP"), client("http-client", "app=http-client"))

func TestPolicy(t *testing.T) {
	ext := server("srv", "app=srv", 8443, "UDP")
	ext.ExternalSupport = true
	for _, tc := range []struct {
		name   string
		isi    dtc.Inbound
		want   string // JSON; "" for no policy
		refuse string
	}{
		{name: "EMCO's example, one port entry and no 0.0.0.0/0", isi: example, want: `{
			"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": {"name": "tg-serverin"},
			"spec": {"podSelector": {"matchLabels": {"app": "http-server"}}, "policyTypes": ["Ingress"],
			  "ingress": [{"from": [{"podSelector": {"matchLabels": {"app": "http-client"}}}],
			               "ports": [{"protocol": "TCP", "port": 3333}]}]}}`},
		{name: "every client's pods, CIDRs ignored without externalSupport",
			isi: inbound("isi", server("srv", "tier=db", 5432, "TCP"), client("a", "app=a", "10.1.0.0/16"), client("b", "role=b")),
			want: `{"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": {"name": "tg-isi"},
			  "spec": {"podSelector": {"matchLabels": {"tier": "db"}}, "policyTypes": ["Ingress"],
			  "ingress": [{"from": [{"podSelector": {"matchLabels": {"app": "a"}}}, {"podSelector": {"matchLabels": {"role": "b"}}}],
			               "ports": [{"protocol": "TCP", "port": 5432}]}]}}`},
		{name: "externalSupport admits the clients' CIDRs after their pods",
			isi: inbound("isi", ext, client("a", "app=a", "10.1.0.0/16", "192.168.4.0/24"), client("b", "app=b")),
			want: `{"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": {"name": "tg-isi"},
			  "spec": {"podSelector": {"matchLabels": {"app": "srv"}}, "policyTypes": ["Ingress"],
			  "ingress": [{"from": [{"podSelector": {"matchLabels": {"app": "a"}}}, {"ipBlock": {"cidr": "10.1.0.0/16"}},
			                        {"ipBlock": {"cidr": "192.168.4.0/24"}}, {"podSelector": {"matchLabels": {"app": "b"}}}],
			               "ports": [{"protocol": "UDP", "port": 8443}]}]}}`},
		{name: "SCTP", isi: inbound("isi", server("srv", "app=srv", 9, "SCTP"), client("a", "app=a")),
			want: `{"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": {"name": "tg-isi"},
			  "spec": {"podSelector": {"matchLabels": {"app": "srv"}}, "policyTypes": ["Ingress"],
			  "ingress": [{"from": [{"podSelector": {"matchLabels": {"app": "a"}}}], "ports": [{"protocol": "SCTP", "port": 9}]}]}}`},
		{name: "no clients, no policy (EMCO)", isi: inbound("isi", server("srv", "app=srv", 80, "TCP"))},
		{name: "HTTP is not a NetworkPolicy protocol", isi: inbound("isi", server("srv", "app=srv", 80, "HTTP"), client("a", "app=a")),
			refuse: `spec.protocol "HTTP": a NetworkPolicy carries TCP, UDP, SCTP only`},
		{name: "protocols are upper case", isi: inbound("isi", server("srv", "app=srv", 80, "tcp"), client("a", "app=a")),
			refuse: `spec.protocol "tcp"`},
		{name: "a name Kubernetes refuses", isi: inbound("Server_In", server("srv", "app=srv", 80, "TCP"), client("a", "app=a")),
			refuse: `the NetworkPolicy's name "tg-Server_In" is not a Kubernetes object name`},
		{name: "only external clients without externalSupport would admit everyone",
			isi:    inbound("isi", server("srv", "app=srv", 80, "TCP"), client("a", "", "10.0.0.0/8")),
			refuse: "no client has an appLabel",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			np, err := Policy("tg", tc.isi)
			if tc.refuse != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.refuse)
				return
			}
			require.NoError(t, err)
			if tc.want == "" {
				assert.Nil(t, np)
				return
			}
			got, err := json.Marshal(np)
			require.NoError(t, err)
			assert.JSONEq(t, tc.want, string(got))
		})
	}
}

func TestPlan(t *testing.T) {
	apps := map[string]contract.App{
		"http-server": {Name: "http-server", Clusters: []string{"p+c2", "p+c1", "q+c3"}},
		"http-client": {Name: "http-client", Clusters: []string{"p+c1"}},
	}
	all := map[string]bool{"p+c1": true, "p+c2": true, "q+c3": true}
	for _, tc := range []struct {
		name      string
		inbound   []dtc.Inbound
		supported map[string]bool
		clusters  [][]string // per edit; nil: every cluster of the app
		refuse    string
	}{
		{name: "only the server's labelled clusters", inbound: []dtc.Inbound{example},
			supported: map[string]bool{"p+c2": true, "q+c3": true, "p+c9": true}, clusters: [][]string{{"p+c2", "q+c3"}}},
		{name: "every cluster labelled: the app's shared objects", inbound: []dtc.Inbound{example}, supported: all, clusters: [][]string{nil}},
		{name: "no labelled cluster, nothing (EMCO)", inbound: []dtc.Inbound{example}, supported: map[string]bool{"p+c9": true}},
		{name: "a client outside the deployment is selected by its label (EMCO)",
			inbound:   []dtc.Inbound{inbound("isi", server("http-server", "app=s", 80, "TCP"), client("elsewhere", "app=elsewhere"))},
			supported: all, clusters: [][]string{nil}},
		{name: "one policy per inbound intent, in order",
			inbound: []dtc.Inbound{example, inbound("none", server("http-client", "app=c", 80, "TCP")),
				inbound("back", server("http-client", "app=c", 81, "TCP"), client("s", "app=s"))},
			supported: map[string]bool{"p+c1": true}, clusters: [][]string{{"p+c1"}, nil}},
		{name: "a server app the deployment does not have",
			inbound: []dtc.Inbound{inbound("isi", server("gone", "app=gone", 80, "TCP"))}, supported: all,
			refuse: `traffic group intent "tg", inbound intent "isi": the deployment has no app "gone"`},
		{name: "a bad intent after a good one refuses the whole group",
			inbound:   []dtc.Inbound{example, inbound("isi", server("http-server", "app=s", 80, "ICMP"), client("a", "app=a"))},
			supported: all, refuse: `traffic group intent "tg", inbound intent "isi": spec.protocol "ICMP"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			edits, err := plan(&dtc.TrafficGroup{Name: "tg", Inbound: tc.inbound}, apps, tc.supported)
			if tc.refuse != "" {
				var r *contract.Refusal
				require.ErrorAs(t, err, &r)
				assert.Contains(t, r.Message, tc.refuse)
				return
			}
			require.NoError(t, err)
			require.Len(t, edits, len(tc.clusters))
			for i, e := range edits {
				assert.Equal(t, contract.EditAddResource, e.Op)
				assert.Equal(t, tc.clusters[i], e.Clusters, "edit %d", i)
				var np NetworkPolicy
				require.NoError(t, json.Unmarshal(e.Data, &np))
				assert.Equal(t, apps[e.App].Name, e.App)
				assert.True(t, strings.HasPrefix(np.Metadata.Name, "tg-"))
			}
		})
	}
}

// memStore holds dtc's records as the API stores them.
type memStore struct{ storetest.Docs }

func (m memStore) put(t *testing.T, parent, coll, kind, name string, spec any) string {
	body, err := json.Marshal(model.Resource[any]{Metadata: model.Metadata{Name: name}, Spec: spec})
	require.NoError(t, err)
	id := parent + coll + "/" + name
	m.Docs[id] = &store.Doc{ID: id, Parent: parent, Kind: kind, Name: name, Body: string(body)}
	return id
}

// Run reads the traffic group dtc names and the clusters' labels through the contract.
func TestRun(t *testing.T) {
	in := contract.Input{Project: "p", CompositeApp: "ca", CompositeAppVersion: "v1", DeploymentIntentGroup: "d",
		Controller: "nps", Parent: "dtc", Type: contract.TypeAction, Intent: "tg", Operation: contract.OpInstantiate}
	st := memStore{storetest.Docs{}}
	tg := st.put(t, dtc.DIG(in), "/traffic-group-intents", dtc.KindTrafficGroup, "tg", model.Empty{})
	isi := st.put(t, tg, "/inbound-intents", dtc.KindInbound, "serverin", example.Spec)
	st.put(t, isi, "/clients", dtc.KindClient, "client1", example.Clients[0].Spec)
	fake := func(in contract.Input) *contracttest.Fake {
		return &contracttest.Fake{In: in,
			AppList: []contract.App{{Name: "http-server", Clusters: []string{"local+cluster1", "local+cluster2"}}, {Name: "http-client", Clusters: []string{"local+cluster2"}}},
			ClusterOf: map[string][]contract.Cluster{"local": {
				{Provider: "local", Name: "cluster1", Labels: []string{"edge", SupportedLabel}},
				{Provider: "local", Name: "cluster2", Labels: []string{"edge"}}}}}
	}

	f := fake(in)
	require.NoError(t, (&controller{store: st}).Run(context.Background(), f))
	require.Len(t, f.Edits, 1)
	e := f.Edits[0]
	assert.Equal(t, "http-server", e.App)
	assert.Equal(t, []string{"local+cluster1"}, e.Clusters)
	assert.JSONEq(t, `{"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": {"name": "tg-serverin"},
		"spec": {"podSelector": {"matchLabels": {"app": "http-server"}}, "policyTypes": ["Ingress"],
		"ingress": [{"from": [{"podSelector": {"matchLabels": {"app": "http-client"}}}], "ports": [{"protocol": "TCP", "port": 3333}]}]}}`,
		string(e.Data))

	term := in
	term.Operation = contract.OpTerminate
	f = fake(term)
	require.NoError(t, (&controller{store: st}).Run(context.Background(), f))
	assert.Empty(t, f.Edits, "terminate: the policies go with the app")

	other := in
	other.Intent = "missing"
	err := (&controller{store: st}).Run(context.Background(), fake(other))
	var r *contract.Refusal
	require.ErrorAs(t, err, &r)
	assert.Contains(t, r.Message, `traffic group intent "missing"`)
}
