package work

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/open-policy-agent/opa/v1/logging"
	"github.com/open-policy-agent/opa/v1/runtime"

	"github.com/temco/temco/features/policy/flow"
	"github.com/temco/temco/internal/dev/testenv"
)

// An external engine is a real OPA server (OPA's own runtime, in the test's process), run
// as EMCO's example README runs it: EMCO's Rego v0 policy, --v0-compatible, the Data API
// at <engineUrl>/data.
func TestRealOPAServerAnswersAsTheEmbeddedEngine(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "emco.rego"), []byte(testenv.EMCOMemoryPolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	params := runtime.NewParams()
	params.Addrs = &[]string{"127.0.0.1:0"}
	params.DiagnosticAddrs = &[]string{}
	params.Paths = []string{dir}
	params.V0Compatible = true
	params.Logger, params.ConsoleLogger = logging.NewNoOpLogger(), logging.NewNoOpLogger()
	params.GracefulShutdownPeriod = 1
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rt, err := runtime.NewRuntime(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- rt.Serve(ctx) }()
	var addr string
	for deadline := time.Now().Add(30 * time.Second); addr == ""; time.Sleep(20 * time.Millisecond) { // until OPA has bound its port
		if addrs := rt.Addrs(); len(addrs) > 0 {
			addr = addrs[0]
		}
		if time.Now().After(deadline) {
			t.Fatal("OPA did not start")
		}
	}

	a, _ := newActivities(t, addr+"/v1")
	for value, want := range map[string]bool{"1500000000": true, "10": false} {
		ev := memory(value)
		ev.Intent = "external"
		v, err := a.EvaluatePolicy(ctx, flow.PolicyEvaluateInput{DIG: dig, Event: ev})
		if err != nil || v.ActionRequired != want || v.Engine != "http://"+addr+"/v1/data" {
			t.Errorf("OPA on %s: %+v %v, want actionRequired %v", value, v, err, want)
		}
		ev.Intent = "embedded"
		if e, err := a.EvaluatePolicy(ctx, flow.PolicyEvaluateInput{DIG: dig, Event: ev}); err != nil || e.ActionRequired != want {
			b, _ := json.Marshal(e)
			t.Errorf("the embedded engine on %s: %s %v", value, b, err)
		}
	}
	cancel()
	<-served
}
