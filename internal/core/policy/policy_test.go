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
		a := Agent{Addr: addr}
		if err := a.Validate(); (err == nil) != ok {
			t.Errorf("%q: %v", addr, err)
		}
	}
}

func TestMatches(t *testing.T) {
	any, only := EventRef{ID: "m"}, EventRef{ID: "m", Agent: "B"}
	if !any.Matches("m", "A") || any.Matches("n", "A") || only.Matches("m", "A") || !only.Matches("m", "B") {
		t.Error("matching")
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
