package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/dev/testenv"
	"github.com/temco/temco/internal/dev/testenv/poll"
)

// buildLabeller builds the example external controller from its own module, and fails
// when it imports anything of temco's but the public contract.
func buildLabeller(t *testing.T) string {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "examples", "labeller")
	bin := filepath.Join(t.TempDir(), "labeller")
	if out, err := command(dir, "go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build examples/labeller: %v\n%s", err, out)
	}
	out, err := command(dir, "go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	// Its module needs the contract's module alone, not temco's.
	mods, err := command(dir, "go", "list", "-m", "all").Output()
	if err != nil {
		t.Fatalf("go list -m: %v", err)
	}
	for _, line := range strings.Split(string(mods), "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] == "github.com/temco/temco" {
			t.Errorf("examples/labeller requires the module %s: an external controller needs github.com/temco/temco/contract only", line)
		}
	}
	public := []string{"github.com/temco/temco/contract", "github.com/temco/temco/contract/remote"}
	for _, p := range strings.Fields(string(out)) {
		if strings.HasPrefix(p, "github.com/temco/temco/") && !slices.Contains(public, p) {
			t.Errorf("examples/labeller imports %s: an external controller needs only %v", p, public)
		}
	}
	return bin
}

func command(dir, name string, args ...string) *exec.Cmd {
	c := exec.Command(name, args...)
	c.Dir = dir
	return c
}

// controllerProc is a running external controller process; its output is kept for the
// test's failure message and to see what it did.
type controllerProc struct {
	cmd *exec.Cmd
	out *syncBuffer
}

func startLabeller(t *testing.T, bin, queue string, args ...string) *controllerProc {
	t.Helper()
	p := &controllerProc{out: &syncBuffer{}}
	p.cmd = exec.Command(bin, append([]string{"--temporal", stack.Temporal.Address(), "--namespace", "default",
		"--api", strings.TrimSuffix(apiURL, "/v2"), "--task-queue", queue}, args...)...)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.kill() })
	return p
}

// kill ends the process at once, as a crash would.
func (p *controllerProc) kill() {
	if p.cmd.ProcessState == nil {
		_ = p.cmd.Process.Kill()
		_ = p.cmd.Wait()
	}
}

// awaitLog waits until the process has logged s.
func (p *controllerProc) awaitLog(t *testing.T, s string, timeout time.Duration) {
	t.Helper()
	poll.Until(t, fmt.Sprintf("the controller logging %q", s), timeout, func(context.Context) error {
		if out := p.out.String(); !strings.Contains(out, s) {
			return fmt.Errorf("its output:\n%s", out)
		}
		return nil
	})
}

// waitingStatus is the running operation as the status shows it.
type waitingStatus struct {
	Operation *lifecycle.RunningOp `json:"operation"`
}

func (d *deployment) waiting(controller string) (lifecycle.RunningOp, *lifecycle.WaitingStep) {
	d.t.Helper()
	var s waitingStatus
	d.c.do("GET", d.dig()+"/status", nil).must(d.t, 200).json(d.t, &s)
	if s.Operation == nil {
		return lifecycle.RunningOp{}, nil
	}
	for i, w := range s.Operation.Waiting {
		if w.Controller == controller {
			return *s.Operation, &s.Operation.Waiting[i]
		}
	}
	return *s.Operation, nil
}

// awaitWaiting polls the status until the controller's step satisfies cond.
func (d *deployment) awaitWaiting(what, controller string, timeout time.Duration, cond func(lifecycle.WaitingStep) bool) lifecycle.WaitingStep {
	d.t.Helper()
	var step lifecycle.WaitingStep
	poll.Until(d.t, what, timeout, func(context.Context) error {
		op, w := d.waiting(controller)
		if w != nil && cond(*w) {
			step = *w
			return nil
		}
		return fmt.Errorf("last operation: %s", pretty(op))
	})
	return step
}

// An external controller in its own process and module, registered with a task queue:
// its edit reaches the live objects; killed mid-run, the operation shows its step waiting
// with the attempt and last error and completes once it is back; with it down, a stop
// ends the operation cleanly and nothing is applied.
func TestExternalController(t *testing.T) {
	bin := buildLabeller(t)
	d := newDeployment(t, app{name: "lab", chart: webChart("lab"), placement: clusterNamed("cluster1")})
	d.create()
	name := "labeller-" + d.project
	d.c.do("POST", "/controllers", res(name, map[string]any{"type": "action", "priority": 1, "taskQueue": name})).must(t, 201)
	d.c.do("POST", d.dig()+"/intents", res("labeller-intents", map[string]any{"intent": map[string]string{name: "blue"}})).must(t, 201)
	d.c.do("POST", d.dig()+"/approve", nil).must(t, 202)

	// The first process takes the step and dies in it.
	first := startLabeller(t, bin, name, "--delay", "10m")
	acc := d.operate(lifecycle.OpInstantiate)
	first.awaitLog(t, "context="+acc.ContextID, time.Minute)
	w := d.awaitWaiting("the step running", name, 30*time.Second, func(w lifecycle.WaitingStep) bool { return w.State == "Started" })
	if w.Attempt != 1 || w.Activity != lifecycle.RunController.Name() {
		t.Errorf("running step: %s", pretty(w))
	}
	first.kill()
	w = d.awaitWaiting("the step waiting for a retry", name, 90*time.Second, func(w lifecycle.WaitingStep) bool { return w.Attempt >= 2 })
	if !strings.Contains(strings.ToLower(w.LastError), "heartbeat") {
		t.Errorf("waiting step's last error %q does not say the controller stopped heartbeating", w.LastError)
	}
	if o := liveObject(t, 0, deployments, "lab"); o != nil {
		t.Error("the Deployment was applied before the controller finished")
	}

	second := startLabeller(t, bin, name)
	d.await("Instantiated", 2*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusInstantiated })
	second.awaitLog(t, "msg=labelled", 10*time.Second)
	// Its finished hook ran once the apply had finished, before the operation ended.
	second.awaitLog(t, "msg=finished context="+acc.ContextID+" operation=instantiate", time.Second)
	for _, o := range []map[string]any{liveObject(t, 0, deployments, "lab"), liveObject(t, 0, configMaps, "lab-config")} {
		if got := label(o, "example.com/labelled-by"); got != "blue" {
			t.Errorf("live object %v: label example.com/labelled-by = %q, want blue", name, got)
		}
	}
	if op, _ := d.waiting(name); op.WorkflowID != "" {
		t.Errorf("the status still shows a running operation: %s", pretty(op))
	}
	recordHistory(t, acc.WorkflowID, "Instantiate-external-controller-restarted")

	term := d.operate(lifecycle.OpTerminate)
	d.await("Terminated", 2*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusTerminated })
	recordHistory(t, term.WorkflowID, "Terminate-with-hooks")
	second.awaitLog(t, "msg=finished context="+acc.ContextID+" operation=terminate", time.Second)

	// With the controller down, the step waits on its queue; a stop ends the operation.
	second.kill()
	acc = d.operate(lifecycle.OpInstantiate)
	d.awaitWaiting("the step scheduled on a queue without a worker", name, 30*time.Second,
		func(w lifecycle.WaitingStep) bool { return w.State == "Scheduled" })
	d.c.do("POST", d.dig()+"/stop", nil).must(t, 202)
	s := d.await("InstantiateStopped", time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusInstantiateStopped })
	if op, _ := d.waiting(name); op.WorkflowID != "" {
		t.Errorf("the stopped operation still runs: %s", pretty(op))
	}
	if o := liveObject(t, 0, deployments, "lab"); o != nil {
		t.Errorf("a stopped instantiate applied the Deployment; status %s", pretty(s))
	}
	recordHistory(t, acc.WorkflowID, "Instantiate-stopped-waiting-for-controller")
	d.operate(lifecycle.OpTerminate)
	d.await("Terminated", 2*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusTerminated })
}

func label(o map[string]any, key string) string {
	if o == nil {
		return "<absent>"
	}
	md, _ := o["metadata"].(map[string]any)
	labels, _ := md["labels"].(map[string]any)
	return fmt.Sprint(labels[key])
}

// syncBuffer is a bytes.Buffer safe for a process's writes and the test's reads.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
