package work

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/temco/temco/features/policy/flow"
	"github.com/temco/temco/internal/adapters/policyengine"
	"github.com/temco/temco/internal/core/model"
	"github.com/temco/temco/internal/core/store"
)

// withSandbox has a evaluate embedded policies with this test binary as the child, with
// 512 MiB, as the worker does with its own binary.
func withSandbox(t *testing.T, a *Activities) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	a.Sandbox = &policyengine.Sandbox{Exe: exe, Memory: 512 << 20}
}

// addPolicy stores module as the project's policy name.
func addPolicy(t *testing.T, a *Activities, name, module string) {
	body, _ := json.Marshal(map[string]any{"metadata": map[string]any{"name": name}, "spec": map[string]any{"rego": module}})
	d := &store.Doc{ID: "/projects/p/policies/" + name, Parent: "/projects/p", Kind: model.KindPolicy, Name: name, Body: string(body), LooseRefs: true}
	if err := a.Store.Create(context.Background(), d); err != nil {
		t.Fatal(err)
	}
}

// In the sandbox, EMCO's example policy decides as in the worker's process; a project's
// policy that takes more memory than an evaluation may (a string grown sixteenfold eight
// times: 4 GiB) fails the evaluation with the reason, not retried, and the worker (this
// process) goes on. A sandbox that cannot run is tried again: it is not the policy's fault.
func TestAnEmbeddedPolicyOverItsMemoryFailsItsEvaluationOnly(t *testing.T) {
	a, _ := newActivities(t, "")
	withSandbox(t, a)
	ctx := context.Background()
	if v, err := a.EvaluatePolicy(ctx, flow.PolicyEvaluateInput{DIG: dig, Event: memory("1500000000")}); err != nil || !v.ActionRequired || v.Workflow != "mig" {
		t.Fatalf("over the threshold, in the sandbox: %+v %v", v, err)
	}
	if v, err := a.EvaluatePolicy(ctx, flow.PolicyEvaluateInput{DIG: dig, Event: memory("10")}); err != nil || v.ActionRequired {
		t.Fatalf("under it, in the sandbox: %+v %v", v, err)
	}

	var bomb strings.Builder
	bomb.WriteString("package bomb\n\ns0 := \"xxxxxxxx\"\n")
	for i := 1; i <= 8; i++ {
		fmt.Fprintf(&bomb, "s%d := replace(s%d, \"x\", \"xxxxxxxxxxxxxxxx\")\n", i, i-1)
	}
	bomb.WriteString("size := count(s8)\n")
	addPolicy(t, a, "bomb", bomb.String())
	_, err := a.EvaluatePolicy(ctx, flow.PolicyEvaluateInput{DIG: dig, Event: memory("1500000000")})
	if want := "the policy needs more than 512 MiB of memory to evaluate, the most a policy may take"; !nonRetryable(err) || !strings.Contains(err.Error(), want) {
		t.Fatalf("a policy over its memory: %v, want a non-retryable error saying %q", err, want)
	}

	a.Sandbox.Exe = "/nonexistent/temco"
	if _, err := a.EvaluatePolicy(ctx, flow.PolicyEvaluateInput{DIG: dig, Event: memory("1500000000")}); err == nil || nonRetryable(err) {
		t.Fatalf("a sandbox that cannot run: %v, want a retryable error", err)
	}
}
