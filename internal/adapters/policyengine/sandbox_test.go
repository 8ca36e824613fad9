package policyengine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/temco/temco/internal/adapters/sandbox"
	"github.com/temco/temco/internal/dev/testenv"
)

// TestMain lets this test binary be the sandbox's child, as the worker's binary is.
func TestMain(m *testing.M) {
	sandbox.ChildMain(SandboxJob)
	os.Exit(m.Run())
}

// testSandbox runs the test binary itself as the child, with 512 MiB.
func testSandbox(t testing.TB) *Sandbox {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return &Sandbox{Exe: exe, Memory: 512 << 20}
}

// growing is a module whose r is s0 ("xxxxxxxx") grown n times by step (a Rego
// expression of the previous string, %[1]s).
func growing(step string, n int) string {
	var b strings.Builder
	b.WriteString("package bomb\n\ns0 := \"xxxxxxxx\"\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "s%d := %s\n", i, fmt.Sprintf(step, fmt.Sprintf("s%d", i-1)))
	}
	fmt.Fprintf(&b, "r := count(s%d)\n", n)
	return b.String()
}

// A policy answers the same in the sandbox as in the worker's own process: v0 and v1
// modules, every path, input or none.
func TestASandboxedPolicyAnswersAsInProcess(t *testing.T) {
	s := testSandbox(t)
	mods := map[string]string{"policies/emco": emcoPolicy, "policies/v1": strings.Replace(v1Policy, "package emco", "package v1", 1)}
	for _, c := range []struct {
		path  string
		input json.RawMessage
	}{
		{"data", emcoInput("1500000000")}, {"data/emco", emcoInput("10")}, {"v1/data/v1", emcoInput("1500000000")},
		{"data/emco/actionRequired", nil}, {"data/none", emcoInput("1")},
	} {
		want, err := Evaluate(context.Background(), mods, c.path, c.input)
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.Evaluate(context.Background(), mods, c.path, c.input, time.Minute)
		if err != nil || string(got) != string(want) {
			t.Errorf("%s: sandbox answered %s, %v; in process %s", c.path, got, err, want)
		}
	}
	// A policy's own error is the same error, word for word.
	broken := map[string]string{"policies/x": "package x\n\nr := v if {\n\tsome v in [1, 2]\n}\n"}
	_, want := Evaluate(context.Background(), broken, "data/x/r", nil)
	if _, err := s.Evaluate(context.Background(), broken, "data/x/r", nil, time.Minute); err == nil || want == nil || err.Error() != want.Error() {
		t.Errorf("a policy's error in the sandbox: %v; in process: %v", err, want)
	}
}

// OPA checks its context between steps and in a few builtins' loops, but one builtin call
// may allocate gigabytes before it looks (a replace() that grows a string sixteenfold, a
// sprintf() that doubles it: 3 GiB within 4 s, measured) and a Go program out of memory
// dies whole. In the sandbox such a policy fails with the reason; this process lives on.
func TestAPolicyOverItsMemoryFailsWithTheReason(t *testing.T) {
	s := testSandbox(t)
	for name, module := range map[string]string{
		"replace": growing(`replace(%s, "x", "xxxxxxxxxxxxxxxx")`, 8),
		"sprintf": growing(`sprintf("%%s%%s", [%[1]s, %[1]s])`, 30),
		"range":   "package bomb\n\nr := count(numbers.range(1, 1000000000))\n",
		// 8 GiB asked for at once: refused before any of it is touched.
		"concat": growing(`concat("", [%s | some _ in numbers.range(1, 32768)])`, 2),
	} {
		_, err := s.Evaluate(context.Background(), map[string]string{"policies/bomb": module}, "data/bomb/r", nil, time.Minute)
		if want := "the policy needs more than 512 MiB of memory to evaluate, the most a policy may take"; err == nil || err.Error() != want {
			t.Errorf("%s: %v, want %q", name, err, want)
		}
	}
	if kids, err := testenv.Children(os.Getpid()); err != nil || len(kids) > 0 {
		t.Fatalf("child processes %v left behind (%v)", kids, err)
	}
}

// A policy that never ends is killed at the timeout; one that answers more than a policy
// may fails saying so; a sandbox that cannot run is a Fault, not the policy's.
func TestAPolicyOverItsTimeOrAnswerFailsWithTheReason(t *testing.T) {
	s := testSandbox(t)
	spin := map[string]string{"policies/spin": "package spin\n\nr := count({x | some x in numbers.range(1, 100000); some y in numbers.range(1, 100000); x == y + 200000})\n"}
	if _, err := s.Evaluate(context.Background(), spin, "data/spin/r", nil, time.Second); err == nil ||
		err.Error() != "the policy did not answer within 1s, the most a policy may take" {
		t.Errorf("a policy that never ends: %v", err)
	}
	if kids, err := testenv.Children(os.Getpid()); err != nil || len(kids) > 0 {
		t.Fatalf("child processes %v left behind (%v)", kids, err)
	}
	long := map[string]string{"policies/long": "package long\n\nr := [x | some x in numbers.range(1, 300000)]\n"}
	if _, err := s.Evaluate(context.Background(), long, "data/long/r", nil, time.Minute); err == nil ||
		!strings.Contains(err.Error(), "more than the 1 MiB a policy may answer") {
		t.Errorf("a policy answering 2 MB: %v", err)
	}
	broken := &Sandbox{Exe: "/nonexistent/temco", Memory: 512 << 20}
	if _, err := broken.Evaluate(context.Background(), spin, "data/spin/r", nil, time.Second); !errors.As(err, new(*sandbox.Fault)) {
		t.Errorf("a sandbox that cannot run: %v (%T), want a Fault", err, err)
	}
}
