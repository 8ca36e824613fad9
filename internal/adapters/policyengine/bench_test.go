package policyengine

import (
	"context"
	"encoding/json"
	"testing"
	"time"
)

// The sandbox's cost for a policy: a process started, the modules and input sent, the
// answer read back, against the same evaluation in the worker's own process. The policy is
// EMCO's example (a threshold over the event's metrics).
func BenchmarkPolicySandbox(b *testing.B) {
	modules := map[string]string{"policies/emco": `package emco

default actionRequired := false

actionRequired if {
	input.agentSpec.agentId == "EMCOTEST"
	some item in input.event.value.items
	to_number(item.value) > 999999999
}
`}
	input := json.RawMessage(`{"agentSpec":{"agentId":"EMCOTEST"},"event":{"metric":"memory_usage_bytes","value":{"items":[{"value":"1000000000"}]}}}`)
	sb := testSandbox(b)
	b.Run("in-process", func(b *testing.B) {
		for b.Loop() {
			if _, err := Evaluate(context.Background(), modules, "data/emco", input); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("sandbox", func(b *testing.B) {
		for b.Loop() {
			if _, err := sb.Evaluate(context.Background(), modules, "data/emco", input, time.Minute); err != nil {
				b.Fatal(err)
			}
		}
	})
}
