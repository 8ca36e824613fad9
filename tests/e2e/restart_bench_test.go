package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	temporalclient "go.temporal.io/sdk/client"

	"github.com/temco/temco/internal/core/lifecycle"
)

// BenchmarkRestart (`make bench-restart CLUSTERS=N`, default 1,000): the benchmark's DIG
// (BenchmarkScale's: 3 one-ConfigMap charts on N clusters, each with its own credentials)
// instantiated without interruption, then with the worker killed once a third of its
// objects are Applied (and started again), then with the Temporal server killed the same
// way: each run's time against the uninterrupted one, and the server-side applies the
// API servers carried out (apiserver_request_total, verb APPLY, configmaps, 2xx) against
// the 3·N objects — an object applied twice shows as one more. KubeFleet's full resync after a
// hub restart at 1,000 clusters: p90 11 min 15 s.
//
// One run's ratio swings with this machine's load (an uninterrupted rest took 6.5–8.7 s on
// one day), so the three runs are repeated TEMCO_RESTART_ROUNDS times (default 3), each
// kill against its own round's uninterrupted run, and the medians are printed last.
func BenchmarkRestart(b *testing.B) {
	n := scaleN(1000)
	rounds, _ := strconv.Atoi(os.Getenv("TEMCO_RESTART_ROUNDS"))
	if rounds <= 0 {
		rounds = 3
	}
	prov := fmt.Sprintf("restart%d", n)
	d, _ := scaleDeployment(b, prov, n)
	tc := dialTemporal(b)
	defer tc.Close()

	runs := []struct {
		name string
		kill func() error // nil: uninterrupted
	}{
		{name: "uninterrupted"},
		{name: "worker killed", kill: func() error {
			stack.Worker.Kill()
			return stack.StartWorker(context.Background())
		}},
		{name: "Temporal server killed", kill: func() error {
			stack.Temporal.Proc().Kill()
			return stack.Temporal.Start(context.Background())
		}},
	}
	ratios := map[string][]float64{} // run -> the rest's ratio, a round each
	wholes := map[string][]float64{} // run -> the whole instantiate's ratio, a round each
	again := map[string]int64{}      // run -> the most objects applied twice in a round
	for round := 1; round <= rounds; round++ {
		var base, baseRest time.Duration
		for _, run := range runs {
			applies, aborted := applyCounts(b, "configmaps")
			start := time.Now()
			r := d.c.do("POST", d.dig()+"/instantiate", nil)
			mustCode(b, r, 202)
			var acc lifecycle.OpAccepted
			_ = json.Unmarshal(r.body, &acc)
			// Every run waits for a third of the objects the same way (the summaries it reads
			// cost the same), and times the rest: the part a kill can lengthen.
			for deadline := time.Now().Add(5 * time.Minute); ; time.Sleep(100 * time.Millisecond) {
				var s status
				_ = json.Unmarshal(d.c.do("GET", d.dig()+"/status?output=summary", nil).body, &s)
				if s.RsyncStatus[lifecycle.ResApplied] >= n {
					break
				}
				if time.Now().After(deadline) {
					b.Fatalf("%s: a third of the objects not Applied within 5 minutes: %v", run.name, s.RsyncStatus)
				}
			}
			third := time.Since(start)
			if run.kill != nil {
				if err := run.kill(); err != nil {
					b.Fatalf("%s: %v", run.name, err)
				}
			}
			// The client's long poll outlives a killed server: it asks again until the end.
			for {
				err := tc.GetWorkflow(context.Background(), acc.WorkflowID, "").Get(context.Background(), nil)
				if err == nil {
					break
				}
				if time.Since(start) > 15*time.Minute {
					b.Fatalf("%s: %v", run.name, err)
				}
				time.Sleep(time.Second)
			}
			// Timed to when Temporal closed the operation (same machine, same clock), not to
			// when this client heard of it: after a server kill its own connection's
			// reconnect and the pause above would count as temco's.
			took := closedAt(b, tc, acc.WorkflowID).Sub(start)
			applied, failed := applyCounts(b, "configmaps")
			applied, failed = applied-applies, failed-aborted
			var s status
			_ = json.Unmarshal(d.c.do("GET", d.dig()+"/status?output=summary", nil).body, &s)
			if s.Status != lifecycle.StatusInstantiated || s.RsyncStatus[lifecycle.ResApplied] != 3*n {
				b.Fatalf("%s: %s %v, want Instantiated with %d Applied", run.name, s.Status, s.RsyncStatus, 3*n)
			}
			if run.kill == nil {
				base, baseRest = took, took-third
			}
			ratio := (took - third).Seconds() / baseRest.Seconds()
			ratios[run.name] = append(ratios[run.name], ratio)
			wholes[run.name] = append(wholes[run.name], took.Seconds()/base.Seconds())
			again[run.name] = max(again[run.name], applied-int64(3*n))
			fmt.Printf("restart: N=%d round %d %s: instantiate %s (%.2f× uninterrupted), a third Applied at %s, the rest %s (%.2f×), %d server-side applies of the %d objects (%d again; %d cut short)\n",
				n, round, run.name, took.Round(time.Millisecond), took.Seconds()/base.Seconds(), third.Round(time.Millisecond),
				(took - third).Round(time.Millisecond), ratio, applied, 3*n, applied-int64(3*n), failed)
			operate(b, d, tc, lifecycle.OpTerminate)
		}
	}
	for _, run := range runs[1:] {
		rs, ws := ratios[run.name], wholes[run.name]
		fmt.Printf("restart: N=%d %s: over %d rounds, the rest's ratio median %.2f× (%s), the whole instantiate's %.2f× (%s); most applied twice in a round: %d\n",
			n, run.name, len(rs), medianOf(rs), joinRatios(rs), medianOf(ws), joinRatios(ws), again[run.name])
	}
}

// closedAt is when Temporal closed the workflow.
func closedAt(b testing.TB, tc temporalclient.Client, id string) time.Time {
	desc, err := tc.DescribeWorkflowExecution(context.Background(), id, "")
	if err != nil {
		b.Fatal(err)
	}
	return desc.GetWorkflowExecutionInfo().GetCloseTime().AsTime()
}

// medianOf is the median of xs (the mean of the middle two when even).
func medianOf(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func joinRatios(xs []float64) string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = fmt.Sprintf("%.2f×", x)
	}
	return strings.Join(out, ", ")
}

// applyCount sums the server-side applies of a resource (configmaps, services) the stack's
// API servers have carried out (their apiserver_request_total with a 2xx code).
func applyCount(b testing.TB, resource string) int64 {
	done, _ := applyCounts(b, resource)
	return done
}

// applyCounts is applyCount, and the applies that did not succeed: a request the killed
// worker had in flight is counted with an error code, though nothing came of it.
func applyCounts(b testing.TB, resource string) (done, failed int64) {
	for _, cl := range stack.Clusters {
		cs, err := cl.Clientset()
		if err != nil {
			b.Fatal(err)
		}
		body, err := cs.RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		sc := bufio.NewScanner(bytes.NewReader(body))
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			l := sc.Text()
			if strings.HasPrefix(l, "apiserver_request_total{") && strings.Contains(l, `resource="`+resource+`"`) &&
				strings.Contains(l, `verb="APPLY"`) {
				v, _ := strconv.ParseFloat(l[strings.LastIndexByte(l, ' ')+1:], 64)
				if strings.Contains(l, `code="2`) {
					done += int64(v)
				} else {
					failed += int64(v)
				}
			}
		}
	}
	return done, failed
}
