package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/dev/testenv"
)

// Operators watching a DIG's live state (status=ready reads every cluster and records
// what it found in the cluster's context document) while it is instantiated and
// terminated, round after round, never undo what the applies and deletes recorded in the
// same documents: each operation ends with every object's status its own. On FerretDB,
// which runs an update of one document as a read and a write, a live read's write used to
// put back the statuses it had read before an apply saved its own (issue 39, point 7);
// both now write under the document's claim.
func TestLiveReadsDuringOperationsLoseNoStatus(t *testing.T) {
	templates := map[string]string{}
	for i := range 20 {
		templates[fmt.Sprintf("cm%d.yaml", i)] = fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: watched-%d\ndata:\n  n: %q\n", i, "{{ .Values.n }}")
	}
	d := newDeployment(t, app{name: "watched", chart: testenv.Chart("watched", "n: \"0\"\n", templates), placement: clusterLabel("edge")})
	d.create()
	t.Cleanup(d.terminateIfRunning)

	// Watchers behind a proxy on the machine (X-Forwarded-For counts from a private
	// address): each address has its own live reads to spend.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	reads := 0
	for w := range 4 {
		wg.Go(func() {
			c := &client{}
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				req, _ := http.NewRequest("GET", c.url(d.dig()+"/status?status=ready&output=all"), nil)
				req.Header.Set("X-Forwarded-For", fmt.Sprintf("198.18.%d.%d", w, n/8%250+1))
				if r := c.send(req); r.code == 200 {
					mu.Lock()
					reads++
					mu.Unlock()
				}
			}
		})
	}
	defer func() { close(stop); wg.Wait() }()

	const rounds = 6
	lost := 0
	for round := range rounds {
		for _, step := range []struct{ op, ends, each string }{
			{lifecycle.OpInstantiate, lifecycle.StatusInstantiated, lifecycle.ResApplied},
			{lifecycle.OpTerminate, lifecycle.StatusTerminated, lifecycle.ResDeleted},
		} {
			d.operate(step.op)
			d.await(step.ends, 2*time.Minute, "", func(s status) bool { return s.Status == step.ends })
			s := d.status("?status=deployed&output=all")
			var wrong []string
			n := 0
			for _, a := range s.Apps {
				for _, c := range a.Clusters {
					for _, r := range c.Resources {
						n++
						if r.DeployedStatus != step.each {
							wrong = append(wrong, c.Cluster+"/"+r.Name+": "+r.DeployedStatus)
						}
					}
				}
			}
			if n != 40 {
				t.Fatalf("round %d, %s: %d objects, want 20 on each of the 2 edge clusters", round, step.op, n)
			}
			if len(wrong) > 0 {
				lost++
				t.Errorf("round %d: %s ended %s, yet %d objects are not %s: %s", round, step.op, step.ends, len(wrong), step.each, strings.Join(wrong, ", "))
			}
		}
	}
	mu.Lock()
	t.Logf("%d of %d operations lost statuses, with %d live reads meanwhile", lost, 2*rounds, reads)
	if reads < 2*rounds {
		t.Errorf("only %d live reads: too few to race the operations", reads)
	}
	mu.Unlock()
}
