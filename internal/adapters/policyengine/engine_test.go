package policyengine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"
)

// emcoPolicy is EMCO's example policy, verbatim (Rego v0 syntax).
const emcoPolicy = `package emco

import future.keywords.in

default actionRequired := false

actionRequired {
   input.agentSpec.agentId == "EMCOTEST"
   input.event.metric == "memory_usage_bytes"
   some item in input.event.value.items
   to_number(item.value) > 999999999
}
`

const v1Policy = `package emco

workflowName := "x"

default actionRequired := false

actionRequired if {
	input.agentSpec.agentId == "EMCOTEST"
	some item in input.event.value.items
	to_number(item.value) > 999999999
}
`

func emcoInput(value string) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{
		"agentSpec": {"agentId": "EMCOTEST"},
		"event": {"metric": "memory_usage_bytes", "value": {"items": [{"value": %q}]}}
	}`, value))
}

func evaluate(t *testing.T, modules map[string]string, path string, input json.RawMessage) string {
	t.Helper()
	out, err := Evaluate(context.Background(), modules, path, input)
	if err != nil {
		t.Fatalf("Evaluate(%q): %v", path, err)
	}
	return string(out)
}

func assertJSON(t *testing.T, got, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal([]byte(got), &g); err != nil {
		t.Fatalf("result %s is not JSON: %v", got, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	gb, _ := json.Marshal(g)
	wb, _ := json.Marshal(w)
	if string(gb) != string(wb) {
		t.Errorf("got %s, want %s", got, want)
	}
}

func TestEvaluateEMCOExample(t *testing.T) {
	mods := map[string]string{"policies/emco": emcoPolicy}

	assertJSON(t, evaluate(t, mods, "data", emcoInput("1500000000")), `{"result":{"emco":{"actionRequired":true}}}`)
	assertJSON(t, evaluate(t, mods, "data", emcoInput("10")), `{"result":{"emco":{"actionRequired":false}}}`)
	assertJSON(t, evaluate(t, mods, "data/emco", emcoInput("1500000000")), `{"result":{"actionRequired":true}}`)
	assertJSON(t, evaluate(t, mods, "v1/data/emco", emcoInput("10")), `{"result":{"actionRequired":false}}`)
	assertJSON(t, evaluate(t, mods, "/v1/data/emco/actionRequired", emcoInput("1500000000")), `{"result":true}`)
	if got := evaluate(t, mods, "data/nothing/here", emcoInput("10")); got != "{}" {
		t.Errorf("undefined path: got %s, want {}", got)
	}
	// No input at all: the default applies.
	assertJSON(t, evaluate(t, mods, "data/emco", nil), `{"result":{"actionRequired":false}}`)
}

func TestEvaluateV1Syntax(t *testing.T) {
	mods := map[string]string{"policies/v1": v1Policy}
	assertJSON(t, evaluate(t, mods, "data/emco", emcoInput("1500000000")),
		`{"result":{"actionRequired":true,"workflowName":"x"}}`)
	assertJSON(t, evaluate(t, mods, "data/emco", emcoInput("10")),
		`{"result":{"actionRequired":false,"workflowName":"x"}}`)
}

func TestEvaluateMixedVersions(t *testing.T) {
	mods := map[string]string{
		"a": emcoPolicy,
		"b": "package other\n\nallow if input.x == 1\n",
	}
	assertJSON(t, evaluate(t, mods, "data", json.RawMessage(`{"x":1}`)),
		`{"result":{"emco":{"actionRequired":false},"other":{"allow":true}}}`)
}

func TestEvaluateErrors(t *testing.T) {
	mods := map[string]string{"m": emcoPolicy}
	for _, p := range []string{"", "v1", "emco", "v1/emco", "datax"} {
		if _, err := Evaluate(context.Background(), mods, p, nil); err == nil {
			t.Errorf("path %q: expected an error", p)
		}
	}
	if _, err := Evaluate(context.Background(), mods, "data", json.RawMessage(`{"x":`)); err == nil {
		t.Error("malformed input: expected an error")
	}
	bad := map[string]string{"bad": "package x\n\np := http.send({\"method\": \"get\", \"url\": \"http://example.com\"})\n"}
	if _, err := Evaluate(context.Background(), bad, "data", nil); err == nil || !strings.Contains(err.Error(), "http.send") {
		t.Errorf("module with http.send: got %v", err)
	}
}

var lineRef = regexp.MustCompile(`:\d+:`)

func TestCheck(t *testing.T) {
	if err := Check("policies/emco", emcoPolicy); err != nil {
		t.Errorf("EMCO example: %v", err)
	}
	if err := Check("policies/v1", v1Policy); err != nil {
		t.Errorf("v1 module: %v", err)
	}

	tests := []struct {
		name, module string
		want         []string
	}{
		{"syntax", "package x\n\np := {\n", []string{"policies/syntax"}},
		{"syntax-v0", "package x\n\nimport future.keywords.in\n\np {\n  some y in [1]\n  y ==\n}\n", []string{"policies/syntax-v0"}},
		{"http", "package x\n\nimport rego.v1\n\np := http.send({\"method\": \"get\", \"url\": \"http://example.com\"})\n", []string{"policies/http", "http.send"}},
		{"http-v0", "package x\n\np = r {\n  r := http.send({\"method\": \"get\", \"url\": \"http://example.com\"})\n}\n", []string{"http.send"}},
		{"runtime", "package x\n\nenv := opa.runtime().env\n", []string{"opa.runtime"}},
		{"dns", "package x\n\nips := net.lookup_ip_addr(\"example.com\")\n", []string{"net.lookup_ip_addr"}},
		{"schema", "package x\n\nok := json.match_schema({}, {\"$ref\": \"file:///etc/passwd\"})\n", []string{"json.match_schema"}},
		{"empty", " \n\t\n", []string{"policies/empty", "empty"}},
		{"big", "package x\n\n# " + strings.Repeat("a", MaxModuleBytes) + "\n", []string{"policies/big"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := "policies/" + tt.name
			err := Check(name, tt.module)
			if err == nil {
				t.Fatal("expected an error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if tt.name != "empty" && tt.name != "big" && !lineRef.MatchString(err.Error()) {
				t.Errorf("error %q names no line", err)
			}
		})
	}
}

// A schema annotation whose $ref points at a file must not be loaded at
// compile time.
func TestSchemaAnnotationsNotLoaded(t *testing.T) {
	mod := `package x

# METADATA
# schemas:
#   - input: {"$ref": "file:///nonexistent/schema.json"}
allow if input.x == 1
`
	if err := Check("policies/schema", mod); err != nil {
		t.Fatalf("Check: %v", err)
	}
	assertJSON(t, evaluate(t, map[string]string{"m": mod}, "data/x", json.RawMessage(`{"x":1}`)), `{"result":{"allow":true}}`)
}

func TestEvaluateCancelled(t *testing.T) {
	mods := map[string]string{"m": emcoPolicy}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Evaluate(ctx, mods, "data", emcoInput("10")); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: got %v", err)
	}
}

func TestEvaluateDeadline(t *testing.T) {
	// About 10^10 iterations and nothing accumulated: only the deadline stops it.
	mods := map[string]string{"m": `package slow

p if {
	some i in numbers.range(1, 100000)
	some j in numbers.range(1, 100000)
	i + j < 0
}
`}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := Evaluate(ctx, mods, "data/slow/p", nil); err == nil {
		t.Error("expected an error once the deadline passed")
	}
}

func TestCache(t *testing.T) {
	a := map[string]string{"m": "package p\n\nv := \"a\"\n"}
	b := map[string]string{"m": "package p\n\nv := \"b\"\n"}
	for range 3 {
		assertJSON(t, evaluate(t, a, "data/p/v", nil), `{"result":"a"}`)
		assertJSON(t, evaluate(t, b, "data/p/v", nil), `{"result":"b"}`)
	}
	key := modulesHash(a) + "\x00" + "data.p.v"
	cache.Lock()
	_, ok := cache.entries[key]
	cache.Unlock()
	if !ok {
		t.Errorf("no cache entry for %q", key)
	}
	// Names and texts are length-prefixed: moving text between them changes the key.
	if modulesHash(map[string]string{"ab": "c"}) == modulesHash(map[string]string{"a": "bc"}) {
		t.Error("module hashes collide")
	}

	// The cache stays bounded.
	for i := range maxCacheEntries + 10 {
		mods := map[string]string{"m": fmt.Sprintf("package p\n\nv := %d\n", i)}
		assertJSON(t, evaluate(t, mods, "data/p/v", nil), fmt.Sprintf(`{"result":%d}`, i))
	}
	cache.Lock()
	n := len(cache.entries)
	cache.Unlock()
	if n > maxCacheEntries {
		t.Errorf("cache holds %d entries, cap is %d", n, maxCacheEntries)
	}
}

func TestCheckWithRefusesAConflictWithAnotherModule(t *testing.T) {
	base := "package emco\nimport rego.v1\ndefault actionRequired := false\n"
	if err := CheckWith("policies/a", base, map[string]string{"policies/a": "package emco\nimport rego.v1\ndefault actionRequired := true\n"}); err != nil {
		t.Errorf("replacing itself: %v", err)
	}
	err := CheckWith("policies/b", "package emco\nimport rego.v1\ndefault actionRequired := true\n", map[string]string{"policies/a": base})
	if err == nil || !strings.Contains(err.Error(), "actionRequired") {
		t.Errorf("a second default: %v", err)
	}
	if err := CheckWith("policies/c", "package other\nimport rego.v1\nx := 1\n", map[string]string{"policies/a": base}); err != nil {
		t.Errorf("another package: %v", err)
	}
}
