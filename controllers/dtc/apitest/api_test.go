// Package apitest drives dtc's REST resources through temco's API against a real FerretDB,
// then reads them back as a sub-controller does.
package apitest

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/temco/temco/contract"
	"github.com/temco/temco/controllers/apiharness"
	"github.com/temco/temco/controllers/dtc"
)

func TestMain(m *testing.M) { apiharness.Main(m) }

var body = apiharness.Body

const (
	dig     = apiharness.DIG
	tgi     = dig + "/traffic-group-intents/tg"
	inbound = tgi + "/inbound-intents"
	clients = inbound + "/server/clients"
)

func newServer(t *testing.T) *apiharness.Server {
	s := apiharness.ServeDIG(t, dtc.Controller)
	s.Want("POST", dig+"/traffic-group-intents", body("tg", nil), 201)
	return s
}

func server() map[string]any {
	return map[string]any{"app": "http-server", "appLabel": "app=http-server", "serviceName": "http-service", "port": 30083,
		"protocol": "TCP", "serviceMesh": "istio", "management": map[string]any{"sidecarProxy": true, "tlsType": "MUTUAL"}}
}

func client(app string) map[string]any {
	return map[string]any{"app": app, "appLabel": "app=" + app, "serviceName": app + "-svc", "namespaces": []string{}, "cidrs": []string{}}
}

func with(spec map[string]any, k string, v any) map[string]any {
	out := map[string]any{}
	for key, val := range spec {
		out[key] = val
	}
	out[k] = v
	return out
}

// EMCO's paths and bodies; what no sub-controller could use is answered 400 with the reason.
func TestResourcesValidate(t *testing.T) {
	s := newServer(t)
	s.Refused("POST", inbound, body("server", with(server(), "appLabel", "app")), `spec.appLabel "app": one label as key=value`)
	s.Refused("POST", inbound, body("server", with(server(), "port", 0)), "spec.port 0 is out of range 1..65535")
	s.Refused("POST", inbound, body("server", with(server(), "protocol", "")), `spec.protocol ""`)
	s.Refused("POST", inbound, body("server", with(server(), "management", map[string]any{"sidecarProxy": "yes", "tlsType": "MUTAL"})),
		`spec.management.tlsType "MUTAL": MUTUAL, SIMPLE or NONE`)
	s.Want("POST", dig+"/traffic-group-intents/nope/inbound-intents", body("server", server()), 404)
	s.Want("POST", inbound, body("server", server()), 201)
	// sidecarProxy: yes, unquoted in EMCO's YAML files, arrives as a boolean.
	if got := s.Want("GET", inbound+"/server", nil, 200); !strings.Contains(got, `"sidecarProxy":"yes"`) {
		t.Errorf("stored inbound intent = %s, want sidecarProxy yes", got)
	}

	s.Refused("POST", clients, body("c1", with(client("http-client"), "cidrs", []string{"10.0.0.0/33"})), `spec.cidrs[0] "10.0.0.0/33" is not a CIDR`)
	s.Refused("POST", clients, body("c1", with(client("http-client"), "namespaces", []string{"Bad_NS"})), `spec.namespaces[0] "Bad_NS" is not a namespace name`)
	s.Refused("POST", clients, body("c1", with(client("http-client"), "app", "")), "spec.app is required")
	s.Want("POST", clients, body("c1", client("http-client")), 201)

	aps := clients + "/c1/access-points"
	ap := map[string]any{"action": "ALLOW", "url": []string{"/status/*"}, "access": []string{"GET"}}
	s.Refused("POST", aps, body("a1", with(ap, "action", "DENY")), `spec.action "DENY": ALLOW is the only action`)
	s.Refused("POST", aps, body("a1", with(ap, "access", []string{"PATCH"})), `spec.access[0] "PATCH": GET, PUT, POST or DELETE`)
	s.Refused("POST", aps, body("a1", with(ap, "url", []string{"status"})), `spec.url[0] "status": a path such as /status/*`)
	s.Want("POST", aps, body("a1", ap), 201)

	sub := map[string]any{"host": "nps", "port": 9033, "type": "action", "priority": 1}
	s.Refused("POST", "/dtc-controllers", body("nps", with(sub, "type", "placement")), `spec.type "placement": dtc sub-controllers are of type action`)
	s.Refused("POST", "/dtc-controllers", body("nps", with(sub, "priority", 0)), "spec.priority 0 is out of range 1..100")
	s.Refused("POST", "/dtc-controllers", body("nps", with(sub, "host", "")), "spec.host is required")
	s.Refused("POST", "/dtc-controllers", body("nps", with(sub, "port", 0)), "spec.port 0 is out of range 1..65535")
	s.Want("POST", "/dtc-controllers", body("nps", sub), 201)
	s.Want("POST", "/dtc-controllers", body("mine", map[string]any{"taskQueue": "my-sub", "type": "action", "priority": 5}), 201)
	if got := s.Want("GET", "/dtc-controllers", nil, 200); strings.Count(got, `"metadata"`) != 2 {
		t.Errorf("dtc-controllers = %s, want nps and mine", got)
	}
}

// The external service's private key is stored sealed: answers show a mask, a PUT of the
// mask keeps the key, and the sub-controller that needs it can open it.
func TestPrivateKeyIsSealed(t *testing.T) {
	s := newServer(t)
	const key = "LS0tLS1CRUdJTiBQUklWQVRFIEtFWS0tLS0tc2VjcmV0"
	ext := func(k string) map[string]any {
		return with(server(), "external", map[string]any{"externalCerts": map[string]any{
			"serviceCertificate": "Y2VydA==", "servicePrivateKey": k, "caCertificate": "Y2E="}})
	}
	for _, answer := range []string{s.Want("POST", inbound, body("server", ext(key)), 201), s.Want("GET", inbound+"/server", nil, 200),
		s.Want("GET", inbound, nil, 200)} {
		if strings.Contains(answer, key) || !strings.Contains(answer, `"servicePrivateKey":"********"`) {
			t.Errorf("answer %s shows the key or no mask", answer)
		}
	}
	d, err := s.Store.Get(context.Background(), inbound+"/server")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(d.Body, key) || strings.Contains(string(d.Secret), key) {
		t.Error("the key is stored in the clear")
	}
	opened := func() string {
		t.Helper()
		g, err := dtc.Load(context.Background(), s.Store, input("tg"))
		if err != nil {
			t.Fatal(err)
		}
		k, err := dtc.PrivateKey(context.Background(), s.Store, s.Keys, g.Inbound[0])
		if err != nil {
			t.Fatal(err)
		}
		return string(k)
	}
	if got := opened(); got != key {
		t.Errorf("opened key %q, want the one sent", got)
	}
	s.Want("PUT", inbound+"/server", body("server", ext(dtc.KeyMask)), 200)
	if got := opened(); got != key {
		t.Errorf("after a PUT of the mask the key is %q, want it kept", got)
	}
	s.Want("PUT", inbound+"/server", body("server", ext("bmV3")), 200)
	if got := opened(); got != "bmV3" {
		t.Errorf("after a PUT of a new key the key is %q", got)
	}
	s.Refused("POST", inbound, body("other", ext(dtc.KeyMask)), "the mask of a stored key, and no key is stored")
}

// Load gives a sub-controller the traffic group in creation order; an intent the DIG does
// not have is refused.
func TestLoadReadsTheTrafficGroup(t *testing.T) {
	s := newServer(t)
	s.Want("POST", inbound, body("server", server()), 201)
	s.Want("POST", clients, body("z-first", client("a")), 201)
	s.Want("POST", clients, body("a-second", client("b")), 201)
	s.Want("POST", clients+"/a-second/access-points", body("ap", map[string]any{"action": "ALLOW", "url": []string{"/x"}, "access": []string{"GET"}}), 201)

	g, err := dtc.Load(context.Background(), s.Store, input("tg"))
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Inbound) != 1 || g.Inbound[0].Spec.Port != 30083 || len(g.Inbound[0].Clients) != 2 {
		t.Fatalf("traffic group = %+v", g)
	}
	c := g.Inbound[0].Clients
	if c[0].Name != "z-first" || c[1].Name != "a-second" || len(c[1].AccessPoints) != 1 || c[1].AccessPoints[0].Spec.URL[0] != "/x" {
		t.Errorf("clients = %+v, want creation order with a-second's access point", c)
	}
	var refusal *contract.Refusal
	if _, err := dtc.Load(context.Background(), s.Store, input("nope")); !errors.As(err, &refusal) {
		t.Errorf("Load of a missing traffic group = %v, want a refusal", err)
	}
}

func input(intent string) contract.Input {
	return contract.Input{Project: "p", CompositeApp: "ca", CompositeAppVersion: "v1", DeploymentIntentGroup: "dig",
		Controller: "nps", Parent: "dtc", Intent: intent, Operation: contract.OpInstantiate}
}
