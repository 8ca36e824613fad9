package policy

import (
	"encoding/json"
	"strings"
	"testing"
)

func intent(mut func(*Intent)) Intent {
	in := Intent{Policy: Engine{PolicyName: "data"}, Actor: "temporal", ActorArg: &ActorArg{WorkFlowName: "mig"},
		Event: EventRef{ID: "memory_usage_bytes"}}
	if mut != nil {
		mut(&in)
	}
	return in
}

func TestIntentValidation(t *testing.T) {
	for want, mut := range map[string]func(*Intent){
		"":                           nil,
		"spec.actor":                 func(in *Intent) { in.Actor = "" },
		"spec.actorArg.workFlowName": func(in *Intent) { in.ActorArg = nil },
		"spec.event.id":              func(in *Intent) { in.Event.ID = "" },
		"spec.policy.policyName":     func(in *Intent) { in.Policy.PolicyName = "" },
		"below data":                 func(in *Intent) { in.Policy.PolicyName = "emco" },
		"spec.policy.namespace":      func(in *Intent) { in.Policy.Namespace = "a.b" },
		"spec.policy.engineUrl":      func(in *Intent) { in.Policy.EngineURL = "ftp://opa:8181" },
		"not a Data API path":        func(in *Intent) { in.Policy.PolicyName = "data/../x" },
	} {
		in := intent(mut)
		err := in.Validate()
		if want == "" && err != nil || want != "" && (err == nil || !strings.Contains(err.Error(), want)) {
			t.Errorf("%s: %v", want, err)
		}
	}
	// An external engine answers any path, as EMCO's data or v1/data/emco.
	in := intent(func(in *Intent) { in.Policy.EngineURL, in.Policy.PolicyName = "172.31.82.234:8181/v1", "data" })
	if u, err := in.Policy.URL(); err != nil || u.String() != "http://172.31.82.234:8181/v1/data" {
		t.Errorf("EMCO's engineUrl: %v %v", u, err)
	}
	in.Policy.EngineURL = "https://opa.example.com/"
	if u, err := in.Policy.URL(); err != nil || u.String() != "https://opa.example.com/data" {
		t.Errorf("a URL: %v %v", u, err)
	}
}

func TestAgentValidation(t *testing.T) {
	for addr, ok := range map[string]bool{"10.0.0.1:9090": true, "agent.edge:1": true, "[::1]:80": true,
		"": false, "10.0.0.1": false, "10.0.0.1:99999": false, "http://a:1": false, ":80": false} {
		a := Agent{Addr: addr, Clusters: []ClusterRef{{ClusterProvider: "p", Cluster: "c"}}}
		if err := a.Validate(); (err == nil) != ok {
			t.Errorf("%q: %v", addr, err)
		}
	}
	c := ClusterRef{ClusterProvider: "p", Cluster: "c"}
	for want, a := range map[string]Agent{
		"":                                {Clusters: []ClusterRef{c}, TLS: &AgentTLS{}, Token: "t0k3n"},
		"clusters[1]: p/c is named twice": {Clusters: []ClusterRef{c, c}},
		"clusters[0].cluster is required": {Clusters: []ClusterRef{{ClusterProvider: "p"}}},
		"clusters[0].clusterProvider":     {Clusters: []ClusterRef{{ClusterProvider: "../x", Cluster: "c"}}},
		"tls.ca holds no PEM certificate": {Clusters: []ClusterRef{c}, TLS: &AgentTLS{CA: "-----BEGIN CERTIFICATE-----\nnope\n-----END CERTIFICATE-----\n"}},
		"tls.serverName":                  {Clusters: []ClusterRef{c}, TLS: &AgentTLS{ServerName: "a b"}},
		"token must be printable ASCII":   {Clusters: []ClusterRef{c}, Token: "a\nb"},
		"token is longer":                 {Clusters: []ClusterRef{c}, Token: strings.Repeat("x", 5000)},
	} {
		a.Addr = "10.0.0.1:9090"
		err := a.Validate()
		if want == "" && err != nil || want != "" && (err == nil || !strings.Contains(err.Error(), want)) {
			t.Errorf("%s: %v", want, err)
		}
	}
	if c.Key() != "p+c" || c.ID() != "/cluster-providers/p/clusters/c" {
		t.Errorf("cluster %s %s", c.Key(), c.ID())
	}
}

// EMCO's registration (addr alone, in its example a placeholder) is an unbound agent: its
// address is kept as written, checked once the agent is registered with clusters.
func TestAnAgentWithoutClustersIsUnbound(t *testing.T) {
	for addr, ok := range map[string]bool{"<agent endpoint>": true, "": true, "10.0.0.1:9090": true,
		"a\nb": false, "a\x00b": false, strings.Repeat("x", 254): false} {
		a := Agent{Addr: addr}
		if err := a.Validate(); (err == nil) != ok || a.Bound() {
			t.Errorf("unbound at %q: %v (bound %v)", addr, err, a.Bound())
		}
	}
	bound := Agent{Addr: "<agent endpoint>", Clusters: []ClusterRef{{ClusterProvider: "p", Cluster: "c"}}}
	if err := bound.Validate(); err == nil || !strings.Contains(err.Error(), "is not host:port") || !bound.Bound() {
		t.Errorf("bound at a placeholder: %v", err)
	}
}

// A project's policies stand in for the OPA servers they name, at OPA's Data API paths.
func TestPoliciesStandInForTheServersTheyName(t *testing.T) {
	emco := Engine{EngineURL: "172.31.82.234:8181/v1", PolicyName: "data"} // EMCO's example intent
	u, err := emco.URL()
	if err != nil {
		t.Fatal(err)
	}
	for servers, want := range map[string]bool{"172.31.82.234:8181": true, "172.31.82.234": true, "opa,172.31.82.234:8181": true,
		"172.31.82.234:8182": false, "172.31.82.23": false, "": false} {
		if got := StandsIn(strings.Split(servers, ","), u); got != want {
			t.Errorf("servers %q stand in for %s: %v", servers, u, got)
		}
	}
	if p, err := emco.StandInPath(); err != nil || p != "v1/data" {
		t.Errorf("EMCO's path: %q %v", p, err)
	}
	for _, e := range []Engine{{EngineURL: "opa:8181", PolicyName: "v1/data/emco"}, {EngineURL: "http://OPA/v1/", PolicyName: "data"}} {
		if u, _ := e.URL(); !StandsIn([]string{"opa"}, u) {
			t.Errorf("opa stands in for %s", u)
		}
		if _, err := e.StandInPath(); err != nil {
			t.Errorf("%+v: %v", e, err)
		}
	}
	if _, err := (Engine{EngineURL: "opa:8181", PolicyName: "data"}).StandInPath(); err == nil || !strings.Contains(err.Error(), "not OPA's Data API") {
		t.Errorf("a path OPA does not answer: %v", err)
	}
	for servers, want := range map[string]string{"opa": "", "opa:8181": "", "[::1]:8181": "", "::1": "",
		"http://opa": "no scheme", "opa/v1": "no scheme", "opa:0": "1-65535", ":8181": "no host", "a:b:c:d]": "address"} {
		m := Module{StandsInFor: []string{servers}}
		err := m.Validate()
		if want == "" && err != nil || want != "" && (err == nil || !strings.Contains(err.Error(), want)) {
			t.Errorf("standsInFor %q: %v, want %q", servers, err, want)
		}
	}
	if err := (&Module{StandsInFor: make([]string, 17)}).Validate(); err == nil || !strings.Contains(err.Error(), "limit is 16") {
		t.Errorf("17 servers: %v", err)
	}
}

// Intents match the registered agent that delivered an event, never the id it claims.
func TestMatches(t *testing.T) {
	any, only := EventRef{ID: "m"}, EventRef{ID: "m", Agent: "sampleagent"}
	if !any.Matches("m", "A") || any.Matches("n", "A") || only.Matches("m", "A") || !only.Matches("m", "sampleagent") {
		t.Error("matching")
	}
}

func TestClaimedAgents(t *testing.T) {
	for _, c := range []struct{ id, spec, want string }{
		{"me", `{"agentId":"me"}`, ""},
		{"EMCOTEST", `{"agentId":"EMCOTEST"}`, "EMCOTEST"},
		{"a", `{"agentId":"b"}`, "a b"},
		{"", `{"agentId":"b"}`, "b"},
		{"a", `not json`, "a"},
		{"", ``, ""},
	} {
		if got := strings.Join(ClaimedAgents("me", c.id, json.RawMessage(c.spec)), " "); got != c.want {
			t.Errorf("%q with spec %s claims %q, want %q", c.id, c.spec, got, c.want)
		}
	}
}

func TestInputIsEMCOs(t *testing.T) {
	in := intent(nil)
	b, err := Input(IntentKeys{PolicyIntentID: "p1", Project: "p"}, in, json.RawMessage(`{"agentId":"A"}`), json.RawMessage(`{"metric":"m"}`))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if doc["intentSpec"]["policyIntentID"] != "p1" || doc["intentSpec"]["actor"] != "temporal" || doc["agentSpec"]["agentId"] != "A" ||
		doc["event"]["metric"] != "m" {
		t.Errorf("input %s", b)
	}
	if _, err := Input(IntentKeys{}, in, nil, json.RawMessage(`nope`)); err == nil {
		t.Error("an event that is not JSON was accepted")
	}
	if b, err := Input(IntentKeys{}, in, nil, json.RawMessage(`1`)); err != nil || !strings.Contains(string(b), `"agentSpec":null`) {
		t.Errorf("no agent spec: %s %v", b, err)
	}
}

func TestVerdictOf(t *testing.T) {
	for answer, want := range map[string]string{
		`{"result":{"emco":{"actionRequired":true,"workflowName":"other"}}}`: "true other",
		`{"result":{"emco":{"actionRequired":false}}}`:                       "false ",
		`{}`:                        "false ",
		`{"result":{"other":{}}}`:   "false ",
		`{"result":null}`:           "false ",
		`{"result":{"emco":"yes"}}`: "error",
		`{"result":[1]}`:            "error",
		`{"result":{"emco":{"actionRequired":true,"workflowName":"../x"}}}`: "error",
		`not json`: "error",
	} {
		v, err := VerdictOf([]byte(answer), "emco")
		got := "error"
		if err == nil {
			got = map[bool]string{true: "true", false: "false"}[v.ActionRequired] + " " + v.WorkflowName
		}
		if got != want {
			t.Errorf("%s: %q, want %q (%v)", answer, got, want, err)
		}
	}
}
