package its

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/temco/temco/contract"
	"github.com/temco/temco/contract/contracttest"
	"github.com/temco/temco/controllers/dtc"
	"github.com/temco/temco/controllers/storetest"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/model"
	"github.com/temco/temco/internal/core/store"
)

// memStore is an in-memory controllers.Docs; documents are created a second apart, in
// put order.
type memStore struct{ storetest.Docs }

func (m memStore) put(t *testing.T, parent, collection, name, kind string, spec any) string {
	t.Helper()
	id := parent + "/" + collection + "/" + name
	body, err := json.Marshal(model.Resource[any]{Metadata: model.Metadata{Name: name}, Spec: spec})
	if err != nil {
		t.Fatal(err)
	}
	m.Docs[id] = &store.Doc{ID: id, Parent: parent, Kind: kind, Name: name, Body: string(body), Created: time.Unix(int64(len(m.Docs)), 0)}
	return id
}

var runInput = contract.Input{Project: "p", CompositeApp: "ca", CompositeAppVersion: "v1", DeploymentIntentGroup: "dig",
	Controller: "its", Parent: "dtc", Type: contract.TypeAction, Intent: "tg", Operation: contract.OpInstantiate}

// deployed is a DIG in logical cloud "apps" (namespace "apps-ns") whose traffic group tg
// lets client app cli on cluster1 reach server app srv on cluster2.
func deployed(t *testing.T) (memStore, *contracttest.Fake) {
	m := memStore{storetest.Docs{}}
	dig := dtc.DIG(runInput)
	m.Docs[dig] = &store.Doc{ID: dig, Kind: model.KindDIG, Body: `{"metadata":{"name":"dig"},"spec":{"logicalCloud":"apps"}}`}
	lc := lifecycle.LogicalCloudID("p", "apps")
	m.Docs[lc] = &store.Doc{ID: lc, Kind: model.KindLogicalCloud, Body: `{"metadata":{"name":"apps"},"spec":{"namespace":"apps-ns","level":"1"}}`}
	tg := m.put(t, dig, "traffic-group-intents", "tg", dtc.KindTrafficGroup, nil)
	isi := m.put(t, tg, "inbound-intents", "s", dtc.KindInbound, dtc.InboundSpec{App: "srv", AppLabel: "app=srv", ServiceName: "web",
		Port: 80, Protocol: "TCP", ServiceMesh: "istio"})
	m.put(t, isi, "clients", "c", dtc.KindClient, dtc.ClientSpec{App: "cli", AppLabel: "app=cli", ServiceName: "cli"})
	// The first resource holding a key wins, as in EMCO.
	m.put(t, lifecycle.ClusterID(c2), "kv-pairs", "istio", model.KindClusterKV, model.KVSpec{KV: []map[string]any{
		{kvAddress: "192.0.2.7"}, {kvPort: 32001}, {kvInternalPort: "15443"}}})
	m.put(t, lifecycle.ClusterID(c2), "kv-pairs", "later", model.KindClusterKV, model.KVSpec{KV: []map[string]any{{kvAddress: "192.0.2.99"}}})
	f := &contracttest.Fake{In: runInput, AppList: []contract.App{{Name: "srv", Clusters: []string{c2}}, {Name: "cli", Clusters: []string{c1}}}}
	return m, f
}

func TestRunAddsTheObjectsToTheirAppAndCluster(t *testing.T) {
	m, f := deployed(t)
	ctrl := &controller{store: m}
	if err := ctrl.Run(context.Background(), f); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range f.Edits {
		var o struct {
			Kind     string
			Metadata struct{ Name, Namespace string }
		}
		if err := json.Unmarshal(e.Data, &o); err != nil || e.Op != contract.EditAddResource || len(e.Clusters) != 1 {
			t.Fatalf("edit %+v (%v)", e, err)
		}
		got = append(got, e.App+"@"+e.Clusters[0]+" "+o.Kind+" "+o.Metadata.Namespace+"/"+o.Metadata.Name)
		if o.Metadata.Name == "web-se-client0" && !strings.Contains(string(e.Data), `{"address":"192.0.2.7","ports":{"tcp":32001}}`) {
			t.Errorf("se-client0 does not reach the first kv-pairs' gateway: %s", e.Data)
		}
	}
	want := "cli@local+cluster1 ServiceEntry apps-ns/web-se-client0, cli@local+cluster1 ServiceEntry apps-ns/web-se-client1, " +
		"cli@local+cluster1 DestinationRule apps-ns/web-dr-client0, cli@local+cluster1 DestinationRule apps-ns/web-dr-client-svcname, " +
		"srv@local+cluster2 Gateway istio-system/web-gateway, srv@local+cluster2 ServiceEntry istio-system/web-se-server, " +
		"srv@local+cluster2 DestinationRule istio-system/web-se-server-dr"
	if s := strings.Join(got, ", "); s != want {
		t.Errorf("edits\n got %s\nwant %s", s, want)
	}
}

func TestRunRefusesBeforeEditingAndTerminateDoesNothing(t *testing.T) {
	m, f := deployed(t)
	delete(m.Docs, lifecycle.ClusterID(c2)+"/kv-pairs/istio")
	err := (&controller{store: m}).Run(context.Background(), f)
	var r *contract.Refusal
	if !errors.As(err, &r) || !strings.Contains(r.Message, "istioIngressGatewayPort of cluster local+cluster2") || len(f.Edits) > 0 {
		t.Fatalf("got %v and %d edits, want a refusal naming the missing port and none", err, len(f.Edits))
	}
	f.In.Operation = contract.OpTerminate
	if err := (&controller{store: m}).Run(context.Background(), f); err != nil || len(f.Edits) > 0 {
		t.Fatalf("terminate: %v, %d edits", err, len(f.Edits))
	}
}

func TestRunOpensTheStoredKeyOnlyForTheSecret(t *testing.T) {
	m, f := deployed(t)
	isi := dtc.DIG(runInput) + "/traffic-group-intents/tg/inbound-intents/s"
	m.put(t, dtc.DIG(runInput)+"/traffic-group-intents/tg", "inbound-intents", "s", dtc.KindInbound, dtc.InboundSpec{App: "srv",
		AppLabel: "app=srv", ServiceName: "web", ExternalName: "web.example.com", Port: 80, Protocol: "TCP", ServiceMesh: "istio",
		ExternalSupport: true, Management: dtc.Management{SidecarProxy: "yes", TLSType: "SIMPLE"},
		External: dtc.External{ExternalCerts: dtc.ExternalCerts{ServiceCertificate: b64("cert"), ServicePrivateKey: dtc.KeyMask}}})
	m.put(t, lifecycle.ClusterID(c2), "kv-pairs", "https", model.KindClusterKV, model.KVSpec{KV: []map[string]any{{kvHTTPSPort: "31390"}}})
	opened := 0
	ctrl := &controller{store: m, privateKey: func(_ context.Context, in dtc.Inbound) ([]byte, error) {
		if in.ID != isi {
			t.Errorf("key of %s opened", in.ID)
		}
		opened++
		return []byte(b64("key")), nil
	}}
	if err := ctrl.Run(context.Background(), f); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range f.Edits {
		if strings.Contains(string(e.Data), `"kind":"Secret"`) {
			found = strings.Contains(string(e.Data), `"tls.key":"`+b64("key")+`"`) && e.App == "srv" && e.Clusters[0] == c2
		}
	}
	if opened != 1 || !found {
		t.Errorf("key opened %d times, Secret with it on srv@cluster2: %v", opened, found)
	}
}
