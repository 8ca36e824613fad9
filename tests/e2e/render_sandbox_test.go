package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/dev/testenv"
	"github.com/temco/temco/internal/dev/testenv/poll"
)

// A tenant's chart that takes all the memory it can (a string doubled in a loop: 8 GiB by
// the end, were it allowed) fails its instantiate with the reason, while another project's
// DIG instantiates beside it on the same worker, which lives on: the chart rendered in a
// child process with its memory bounded (activities/render/sandbox.go), not in the worker.
func TestAChartThatEatsMemoryFailsAloneInItsSandbox(t *testing.T) {
	worker := stack.Worker.Cmd.Process.Pid
	bomb := testenv.Chart("bomb", "", map[string]string{"cm.yaml": `{{ $s := "xxxxxxxx" }}{{ range until 30 }}{{ $s = print $s $s }}{{ end }}apiVersion: v1
kind: ConfigMap
metadata:
  name: bomb
data:
  n: {{ len $s | quote }}
`})
	d := newDeployment(t, app{name: "bomb", chart: bomb, placement: clusterLabel("edge")})
	d.create()
	t.Cleanup(d.terminateIfRunning)
	ok := newDeployment(t, app{name: "beside", chart: webChart("beside"), placement: clusterLabel("edge")})
	ok.project += "-beside"
	ok.create()
	t.Cleanup(ok.terminateIfRunning)

	refused := d.operate(lifecycle.OpInstantiate)
	ok.operate(lifecycle.OpInstantiate)
	s := d.await("InstantiateFailed", 2*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusInstantiateFailed })
	if want := `app "bomb": the chart needs more than 1024 MiB of memory to render`; !strings.Contains(s.Error, want) {
		t.Errorf("status error %q: want it to say %q", s.Error, want)
	}
	ok.await("Instantiated", 2*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusInstantiated })
	if pid := stack.Worker.Cmd.Process.Pid; pid != worker || stack.Worker.Cmd.ProcessState != nil {
		t.Fatalf("the worker was %d, is %d (%v): want it alive, the same process", worker, pid, stack.Worker.Cmd.ProcessState)
	}
	for i := range stack.Clusters {
		if objs := objectsOf(t, stack.Clusters[i], refused.ContextID, "bomb"); len(objs) > 0 {
			t.Errorf("the refused instantiate applied %v to cluster%d", objs, i+1)
		}
	}
	// Spare children wait for renderings to come without using CPU; none works on.
	poll.Until(t, "no rendering still running", time.Minute, func(context.Context) error {
		if kids, err := testenv.WorkingChildren(worker, 200*time.Millisecond); err != nil || len(kids) > 0 {
			return fmt.Errorf("the worker's children %v use CPU (%v)", kids, err)
		}
		return nil
	})
}
