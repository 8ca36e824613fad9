package its

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/temco/temco/contract"
	"github.com/temco/temco/controllers"
	"github.com/temco/temco/controllers/dtc"
)

const (
	c1, c2, c3 = "local+cluster1", "local+cluster2", "local+cluster3"
)

// gateways are kv-pairs with every Istio key on every cluster.
func gateways(clusters ...string) map[string]map[string]string {
	kv := map[string]map[string]string{}
	for i, c := range clusters {
		kv[c] = map[string]string{kvAddress: fmt.Sprintf("10.0.0.%d", i+1), kvPort: "32001", kvInternalPort: "15443",
			kvHTTPSPort: "443", kvHTTPPort: "80"}
	}
	return kv
}

func testWorld(placement map[string][]string) world {
	return world{namespace: "ns1", clusters: placement, kv: gateways(c1, c2, c3), keys: map[string][]byte{}}
}

func server(name, app string, clients ...dtc.Client) dtc.Inbound {
	return dtc.Inbound{Name: name, Spec: dtc.InboundSpec{App: app, AppLabel: "app=" + app, ServiceName: app + "-svc", Port: 8080,
		Protocol: "TCP", ServiceMesh: "istio"}, Clients: clients}
}

func client(name, app string, aps ...dtc.AccessPointSpec) dtc.Client {
	c := dtc.Client{Name: name, Spec: dtc.ClientSpec{App: app, AppLabel: "app=" + app, ServiceName: app}}
	for i, ap := range aps {
		c.AccessPoints = append(c.AccessPoints, controllers.Named[dtc.AccessPointSpec]{Name: fmt.Sprint("ap", i), Spec: ap})
	}
	return c
}

// where lists each app@cluster's objects as Kind namespace/name, in order.
func where(objs []placed) map[string][]string {
	out := map[string][]string{}
	for _, o := range objs {
		md := o.obj["metadata"].(object)
		k := o.app + "@" + o.cluster
		out[k] = append(out[k], fmt.Sprintf("%s %s/%s", o.obj["kind"], md["namespace"], md["name"]))
	}
	return out
}

// find returns the object of kind and name on app@cluster as JSON-decoded maps.
func find(t *testing.T, objs []placed, at, kind, name string) map[string]any {
	t.Helper()
	for _, o := range objs {
		if o.app+"@"+o.cluster == at && o.obj["kind"] == kind && o.obj["metadata"].(object)["name"] == name {
			b, _ := json.Marshal(o.obj)
			var m map[string]any
			_ = json.Unmarshal(b, &m)
			return m
		}
	}
	t.Fatalf("no %s %s on %s", kind, name, at)
	return nil
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func clientSet(svc string, servers int) []string {
	out := []string{"ServiceEntry ns1/" + svc + "-se-client0", "ServiceEntry ns1/" + svc + "-se-client1"}
	for i := range servers {
		out = append(out, fmt.Sprintf("DestinationRule ns1/%s-dr-client%d", svc, i))
	}
	return append(out, "DestinationRule ns1/"+svc+"-dr-client-svcname")
}

func serverSet(svc string) []string {
	return []string{"Gateway istio-system/" + svc + "-gateway", "ServiceEntry istio-system/" + svc + "-se-server",
		"DestinationRule istio-system/" + svc + "-se-server-dr"}
}

func TestPlanPlacesEachObjectWhereEMCOPutsIt(t *testing.T) {
	for _, tc := range []struct {
		name      string
		placement map[string][]string
		group     []dtc.Inbound
		want      map[string][]string
	}{
		{"client on another cluster: client entries there, the cross-cluster gateway at the server",
			map[string][]string{"srv": {c2}, "cli": {c1}}, []dtc.Inbound{server("s", "srv", client("c", "cli"))},
			map[string][]string{"cli@" + c1: clientSet("srv-svc", 1), "srv@" + c2: serverSet("srv-svc")}},
		{"client beside the server: nothing", map[string][]string{"srv": {c1}, "cli": {c1}},
			[]dtc.Inbound{server("s", "srv", client("c", "cli"))}, map[string][]string{}},
		{"no clients: nothing", map[string][]string{"srv": {c1}}, []dtc.Inbound{server("s", "srv")}, map[string][]string{}},
		{"two clients on one cluster: the first gets the entries",
			map[string][]string{"srv": {c2}, "a": {c1}, "b": {c1}}, []dtc.Inbound{server("s", "srv", client("ca", "a"), client("cb", "b"))},
			map[string][]string{"a@" + c1: clientSet("srv-svc", 1), "srv@" + c2: serverSet("srv-svc")}},
		{"server on two clusters: one DestinationRule per server host; gateways on both",
			map[string][]string{"srv": {c1, c2}, "cli": {c3}}, []dtc.Inbound{server("s", "srv", client("c", "cli"))},
			map[string][]string{"cli@" + c3: clientSet("srv-svc", 2), "srv@" + c1: serverSet("srv-svc"), "srv@" + c2: serverSet("srv-svc")}},
		{"a client on a server cluster and one away: gateways on every server cluster some client is away from (EMCO's rule)",
			map[string][]string{"srv": {c1, c2}, "cli": {c1}}, []dtc.Inbound{server("s", "srv", client("c", "cli"))},
			map[string][]string{"srv@" + c2: serverSet("srv-svc")}},
		{"serviceMesh other than istio: that inbound intent is skipped, the others are not",
			map[string][]string{"srv": {c2}, "other": {c2}, "cli": {c1}},
			[]dtc.Inbound{func() dtc.Inbound { s := server("o", "other", client("c", "cli")); s.Spec.ServiceMesh = ""; return s }(),
				server("s", "srv", client("c", "cli"))},
			map[string][]string{"cli@" + c1: clientSet("srv-svc", 1), "srv@" + c2: serverSet("srv-svc")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := plan(testWorld(tc.placement), &dtc.TrafficGroup{Name: "tg", Inbound: tc.group})
			if err != nil {
				t.Fatal(err)
			}
			if got := where(objs); jsonOf(got) != jsonOf(tc.want) {
				t.Errorf("objects\n got %s\nwant %s", jsonOf(got), jsonOf(tc.want))
			}
		})
	}
}

func TestClientEntriesReachEveryServerGatewayWithAVIP(t *testing.T) {
	w := testWorld(map[string][]string{"srv": {c1, c2}, "cli": {c3}})
	objs, err := plan(w, &dtc.TrafficGroup{Inbound: []dtc.Inbound{server("s", "srv", client("c", "cli"))}})
	if err != nil {
		t.Fatal(err)
	}
	at := "cli@" + c3
	se := find(t, objs, at, "ServiceEntry", "srv-svc-se-client0")
	want := `{"addresses":["240.0.0.2"],"endpoints":[{"address":"10.0.0.1","ports":{"tcp":32001}},{"address":"10.0.0.2","ports":{"tcp":32001}}],` +
		`"hosts":["srv-svc.ns1.local.cluster1","srv-svc.ns1.local.cluster2"],"location":"MESH_INTERNAL",` +
		`"ports":[{"name":"tcp","number":8080,"protocol":"TCP"}],"resolution":"DNS"}`
	if got := jsonOf(se["spec"]); got != want {
		t.Errorf("se-client0 spec\n got %s\nwant %s", got, want)
	}
	if se["apiVersion"] != "networking.istio.io/v1beta1" {
		t.Errorf("apiVersion %v", se["apiVersion"])
	}
	short := find(t, objs, at, "ServiceEntry", "srv-svc-se-client1")["spec"].(map[string]any)
	if jsonOf(short["hosts"]) != `["srv-svc"]` || jsonOf(short["addresses"]) != `["240.0.0.2"]` {
		t.Errorf("se-client1 spec %s", jsonOf(short))
	}
	dr := find(t, objs, at, "DestinationRule", "srv-svc-dr-client1")
	if got := jsonOf(dr["spec"]); got != `{"host":"srv-svc.ns1.local.cluster2","trafficPolicy":{"tls":{"mode":"ISTIO_MUTUAL"}}}` {
		t.Errorf("dr-client1 spec %s", got)
	}
	if got := jsonOf(find(t, objs, at, "DestinationRule", "srv-svc-dr-client-svcname")["spec"]); !strings.Contains(got, `"host":"srv-svc"`) {
		t.Errorf("dr-client-svcname spec %s", got)
	}
}

// EMCO's second client took the gateway of the server cluster at index 1, which a
// server on one cluster does not have.
func TestASecondClientReachesTheServersGatewayWithTheNextVIP(t *testing.T) {
	w := testWorld(map[string][]string{"srv": {c2}, "a": {c1}, "b": {c3}})
	objs, err := plan(w, &dtc.TrafficGroup{Inbound: []dtc.Inbound{server("s", "srv", client("ca", "a"), client("cb", "b"))}})
	if err != nil {
		t.Fatal(err)
	}
	for at, vip := range map[string]string{"a@" + c1: "240.0.0.2", "b@" + c3: "240.0.0.3"} {
		spec := find(t, objs, at, "ServiceEntry", "srv-svc-se-client0")["spec"].(map[string]any)
		if jsonOf(spec["addresses"]) != `["`+vip+`"]` || jsonOf(spec["endpoints"]) != `[{"address":"10.0.0.2","ports":{"tcp":32001}}]` {
			t.Errorf("%s: se-client0 addresses %v endpoints %v, want %s through cluster2's gateway", at, spec["addresses"], spec["endpoints"], vip)
		}
	}
	// The same group planned again (a retry, an update) gives the same addresses.
	again, _ := plan(w, &dtc.TrafficGroup{Inbound: []dtc.Inbound{server("s", "srv", client("ca", "a"), client("cb", "b"))}})
	if jsonOf(again) != jsonOf(objs) {
		t.Error("a second plan of the same group differs")
	}
}

func TestServerEntriesPassMeshTrafficThroughTheIngressGateway(t *testing.T) {
	objs, err := plan(testWorld(map[string][]string{"srv": {c2}, "cli": {c1}}),
		&dtc.TrafficGroup{Inbound: []dtc.Inbound{server("s", "srv", client("c", "cli"))}})
	if err != nil {
		t.Fatal(err)
	}
	at := "srv@" + c2
	for _, tc := range []struct{ kind, name, spec string }{
		{"Gateway", "srv-svc-gateway", `{"selector":{"istio":"ingressgateway"},"servers":[{"hosts":["srv-svc.ns1.local.cluster2"],"name":"tls",` +
			`"port":{"name":"tls","number":15443,"protocol":"TLS"},"tls":{"mode":"AUTO_PASSTHROUGH"}}]}`},
		{"ServiceEntry", "srv-svc-se-server", `{"endpoints":[{"address":"srv-svc.ns1"}],"exportTo":["."],"hosts":["srv-svc.ns1.local.cluster2"],` +
			`"location":"MESH_INTERNAL","ports":[{"name":"tcp","number":8080,"protocol":"TCP"}],"resolution":"DNS"}`},
		{"DestinationRule", "srv-svc-se-server-dr", `{"host":"srv-svc.ns1.local.cluster2","trafficPolicy":{"tls":{"mode":"ISTIO_MUTUAL"}}}`},
	} {
		if got := jsonOf(find(t, objs, at, tc.kind, tc.name)["spec"]); got != tc.spec {
			t.Errorf("%s %s spec\n got %s\nwant %s", tc.kind, tc.name, got, tc.spec)
		}
	}
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func external(tlsType string) dtc.Inbound {
	s := server("ext", "srv")
	s.Spec.ExternalName, s.Spec.ExternalSupport = "srv.example.com", true
	s.Spec.Management = dtc.Management{SidecarProxy: "yes", TLSType: tlsType}
	s.Spec.External.ExternalCerts = dtc.ExternalCerts{ServiceCertificate: b64("cert"), ServicePrivateKey: dtc.KeyMask, CACertificate: b64("ca")}
	return s
}

func TestExternalAccessGetsAGatewayAVirtualServiceAndTheCredential(t *testing.T) {
	for _, tc := range []struct {
		tlsType, gateway, server, secret string
	}{
		{"MUTUAL", "srv-svc-ext-mutual-gateway", `{"hosts":["srv.example.com"],"name":"tls","port":{"name":"extsvc","number":443,"protocol":"HTTPS"},` +
			`"tls":{"credentialName":"srv-svc-credential","mode":"MUTUAL"}}`, `{"ca.crt":"` + b64("ca") + `","tls.crt":"` + b64("cert") + `","tls.key":"` + b64("key") + `"}`},
		{"SIMPLE", "srv-svc-ext-simple-gateway", `{"hosts":["srv.example.com"],"name":"tls","port":{"name":"extsvc","number":443,"protocol":"HTTPS"},` +
			`"tls":{"credentialName":"srv-svc-credential","mode":"SIMPLE"}}`, `{"tls.crt":"` + b64("cert") + `","tls.key":"` + b64("key") + `"}`},
		{"NONE", "srv-svc-ext-http-gateway", `{"hosts":["srv.example.com"],"name":"tls","port":{"name":"extsvc","number":80,"protocol":"HTTP"}}`, ""},
	} {
		t.Run(tc.tlsType, func(t *testing.T) {
			w := testWorld(map[string][]string{"srv": {c1}})
			w.keys["ext"] = []byte(b64("key"))
			objs, err := plan(w, &dtc.TrafficGroup{Inbound: []dtc.Inbound{external(tc.tlsType)}})
			if err != nil {
				t.Fatal(err)
			}
			at := "srv@" + c1
			want := []string{"Gateway ns1/" + tc.gateway, "VirtualService ns1/srv-svc-vs-" + tc.gateway}
			if tc.secret != "" {
				want = append(want, "Secret istio-system/srv-svc-credential")
			}
			if got := where(objs)[at]; !slices.Equal(got, want) {
				t.Fatalf("objects %v, want %v", got, want)
			}
			gw := find(t, objs, at, "Gateway", tc.gateway)["spec"].(map[string]any)
			if got := jsonOf(gw["servers"]); got != "["+tc.server+"]" {
				t.Errorf("gateway servers\n got %s\nwant [%s]", got, tc.server)
			}
			var port float64 = 443
			if tc.tlsType == "NONE" {
				port = 80
			}
			vs := jsonOf(find(t, objs, at, "VirtualService", "srv-svc-vs-"+tc.gateway)["spec"])
			wantVS := fmt.Sprintf(`{"gateways":["%s"],"hosts":["srv.example.com"],"http":[{"match":[{"port":%v}],"name":"srv-svc-http-route",`+
				`"route":[{"destination":{"host":"srv-svc","port":{"number":8080}}}]}]}`, tc.gateway, port)
			if vs != wantVS {
				t.Errorf("virtual service\n got %s\nwant %s", vs, wantVS)
			}
			if tc.secret != "" {
				s := find(t, objs, at, "Secret", "srv-svc-credential")
				if got := jsonOf(s["data"]); got != tc.secret || s["type"] != "Opaque" {
					t.Errorf("secret %s data %s, want Opaque %s", s["type"], got, tc.secret)
				}
			}
		})
	}
}

func TestAccessPointsBecomeOnePolicyOfTheServerApp(t *testing.T) {
	get := dtc.AccessPointSpec{Action: "ALLOW", URL: []string{"/status/*"}, Access: []string{"GET"}}
	post := dtc.AccessPointSpec{Action: "ALLOW", URL: []string{"/post"}, Access: []string{"POST"}}
	objs, err := plan(testWorld(map[string][]string{"srv": {c1}, "a": {c1}, "b": {c1}}),
		&dtc.TrafficGroup{Inbound: []dtc.Inbound{server("s", "srv", client("ca", "a", get, post), client("cb", "b", get))}})
	if err != nil {
		t.Fatal(err)
	}
	if got := where(objs); jsonOf(got) != jsonOf(map[string][]string{"srv@" + c1: {"AuthorizationPolicy ns1/srv"}}) {
		t.Fatalf("objects %s", jsonOf(got))
	}
	ap := find(t, objs, "srv@"+c1, "AuthorizationPolicy", "srv")
	hosts := `"hosts":["srv-svc.ns1","srv-svc.ns1.svc.cluster.local","srv-svc"]`
	want := `{"action":"ALLOW","rules":[` +
		`{"to":[{"operation":{` + hosts + `,"methods":["GET"],"paths":["/status/*"]}}]},` +
		`{"to":[{"operation":{` + hosts + `,"methods":["POST"],"paths":["/post"]}}]},` +
		`{"to":[{"operation":{` + hosts + `,"methods":["GET"],"paths":["/status/*"]}}]}],` +
		`"selector":{"matchLabels":{"app":"srv"}}}`
	if got := jsonOf(ap["spec"]); got != want || ap["apiVersion"] != "security.istio.io/v1beta1" {
		t.Errorf("%v spec\n got %s\nwant %s", ap["apiVersion"], got, want)
	}
}

func TestPlanRefusesWhatCannotBeBuilt(t *testing.T) {
	twoClusters := map[string][]string{"srv": {c2}, "cli": {c1}}
	without := func(cluster, key string) func(*world) { return func(w *world) { delete(w.kv[cluster], key) } }
	for _, tc := range []struct {
		name      string
		placement map[string][]string
		change    func(*world)
		group     []dtc.Inbound
		want      []string
	}{
		{"gateway address missing", twoClusters, without(c2, kvAddress), []dtc.Inbound{server("s", "srv", client("c", "cli"))},
			[]string{`inbound intent "s"`, `client "c" on local+cluster1`, "kv-pair istioIngressGatewayAddress of cluster local+cluster2",
				"POST /v2/cluster-providers/local/clusters/cluster2/kv-pairs"}},
		{"gateway port not a number", twoClusters, func(w *world) { w.kv[c2][kvPort] = "x" }, []dtc.Inbound{server("s", "srv", client("c", "cli"))},
			[]string{"kv-pair istioIngressGatewayPort of cluster local+cluster2", `"x", not a port number`}},
		{"internal port missing", twoClusters, without(c2, kvInternalPort), []dtc.Inbound{server("s", "srv", client("c", "cli"))},
			[]string{"the Gateway letting clients on local+cluster1 reach srv-svc on local+cluster2", "istioIngressGatewayInternalPort"}},
		{"https port missing", map[string][]string{"srv": {c1}}, without(c1, kvHTTPSPort), []dtc.Inbound{external("MUTUAL")},
			[]string{"external Gateway", "istioIngressGatewayHttpsPort"}},
		{"external without name", map[string][]string{"srv": {c1}}, nil,
			[]dtc.Inbound{func() dtc.Inbound { s := external("NONE"); s.Spec.ExternalName = ""; return s }()}, []string{"spec.externalName"}},
		{"external without tls type", map[string][]string{"srv": {c1}}, nil, []dtc.Inbound{external("")}, []string{"tlsType MUTUAL, SIMPLE or NONE"}},
		{"no private key", map[string][]string{"srv": {c1}}, func(w *world) { delete(w.keys, "ext") }, []dtc.Inbound{external("SIMPLE")},
			[]string{"needs spec.external.externalCerts.servicePrivateKey"}},
		{"key not base64", map[string][]string{"srv": {c1}}, func(w *world) { w.keys["ext"] = []byte("-----BEGIN SECRET") },
			[]dtc.Inbound{external("SIMPLE")}, []string{"servicePrivateKey is not base64"}},
		{"server app not deployed", map[string][]string{"cli": {c1}}, nil, []dtc.Inbound{server("s", "srv", client("c", "cli"))},
			[]string{`app "srv" is not an app of the deployment`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := testWorld(tc.placement)
			w.keys["ext"] = []byte(b64("key"))
			if tc.change != nil {
				tc.change(&w)
			}
			_, err := plan(w, &dtc.TrafficGroup{Inbound: tc.group})
			var r *contract.Refusal
			if !errors.As(err, &r) {
				t.Fatalf("got %v, want a refusal", err)
			}
			for _, part := range tc.want {
				if !strings.Contains(r.Message, part) {
					t.Errorf("refusal %q does not say %q", r.Message, part)
				}
			}
			if strings.Contains(r.Message, "BEGIN") || strings.Contains(r.Message, b64("key")) {
				t.Errorf("refusal %q quotes the key", r.Message)
			}
		})
	}
}

func TestVIPsEndAt240_0_0_255(t *testing.T) {
	placement := map[string][]string{"srv": {c1}}
	var clients []dtc.Client
	kv := gateways(c1)
	for i := range 255 {
		app := fmt.Sprint("cli", i)
		placement[app] = []string{fmt.Sprintf("local+edge%03d", i)}
		clients = append(clients, client(app, app))
	}
	w := world{namespace: "ns1", clusters: placement, kv: kv}
	_, err := plan(w, &dtc.TrafficGroup{Inbound: []dtc.Inbound{server("s", "srv", clients[:254]...)}})
	if err != nil {
		t.Fatalf("254 client clusters: %v", err)
	}
	_, err = plan(w, &dtc.TrafficGroup{Inbound: []dtc.Inbound{server("s", "srv", clients...)}})
	if err == nil || !strings.Contains(err.Error(), "every address from 240.0.0.2 to 240.0.0.255") {
		t.Fatalf("255 client clusters: got %v", err)
	}
}
