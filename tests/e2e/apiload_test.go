package e2e

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// apiLoad is the load generator of the scale benchmark: clients concurrent callers, for
// dur, each repeating create, read, update and delete of a composite app of its own (in
// project "load") and a read of the DIG's status summary. It prints p50 and p99 of each
// and of CRUD as a whole (issue 41: p99 ≤ 50 ms for CRUD at 50 clients over 10,000
// clusters).
//
// rate 0 is a closed loop: each caller sends its next request as soon as the last is
// answered, which measures the API's throughput (latency is then clients / throughput).
// rate > 0 offers that many requests per second in all, each caller on a fixed schedule;
// a request's time counts from when it was due, not sent, so a late answer also charges
// the requests it delayed (no coordinated omission).
func apiLoad(b *testing.B, d *deployment, n, clients int, dur time.Duration, rate float64) {
	if r := (&client{}).do("GET", "/projects/load", nil); r.code == 404 {
		mustCode(b, (&client{}).do("POST", "/projects", res("load", nil)), 201)
	}
	var mu sync.Mutex
	took := map[string][]time.Duration{}
	var failed []string
	var interval time.Duration // between one caller's requests; 0: closed loop
	if rate > 0 {
		interval = time.Duration(float64(clients) / rate * float64(time.Second))
	}
	timed := func(c *client, due *time.Time, op, method, path string, body any, code int) {
		start := time.Now()
		if interval > 0 {
			if wait := time.Until(*due); wait > 0 {
				time.Sleep(wait) // pacing the load, not waiting for a state
			}
			start = *due
			*due = due.Add(interval)
		}
		r := c.do(method, path, body)
		elapsed := time.Since(start)
		mu.Lock()
		defer mu.Unlock()
		took[op] = append(took[op], elapsed)
		if r.code != code && len(failed) < 5 {
			failed = append(failed, fmt.Sprintf("%s %s: %d %s", method, path, r.code, r.body))
		}
	}
	cmds0, cpu0 := storeCommands(b), cpuByProcess()
	end := time.Now().Add(dur)
	var wg sync.WaitGroup
	bases := []string{""} // the stack's api, and its replicas: clients spread over them
	for _, p := range stack.APIPorts {
		bases = append(bases, "http://127.0.0.1:"+strconv.Itoa(p)+"/v2")
	}
	// A connection kept per caller, as any client pool of that size keeps them: Go's
	// default keeps two per host, so the other callers would connect anew for every
	// request, which no long-running client does.
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
	defer hc.CloseIdleConnections()
	for w := range clients {
		c := &client{base: bases[w%len(bases)], http: hc}
		due := time.Now().Add(interval * time.Duration(w) / time.Duration(clients)) // callers spread over an interval
		wg.Go(func() {
			for i := 0; time.Now().Before(end); i++ {
				name := fmt.Sprintf("w%d-%d", w, i)
				path := "/projects/load/composite-apps/" + name + "/v1"
				timed(c, &due, "create", "POST", "/projects/load/composite-apps", res(name, map[string]any{"compositeAppVersion": "v1"}), 201)
				timed(c, &due, "read", "GET", path, nil, 200)
				spec := res(name, map[string]any{"compositeAppVersion": "v1"})
				spec["metadata"].(map[string]any)["description"] = "updated"
				timed(c, &due, "update", "PUT", path, spec, 200)
				timed(c, &due, "delete", "DELETE", path, nil, 204)
				timed(c, &due, "status", "GET", d.dig()+"/status?output=summary", nil, 200)
			}
		})
	}
	wg.Wait()
	cmds1, cpu1 := storeCommands(b), cpuByProcess()
	if len(failed) > 0 {
		b.Fatalf("API load: requests failed: %s", strings.Join(failed, "; "))
	}
	var crud []time.Duration
	var parts []string
	for _, op := range []string{"create", "read", "update", "delete"} {
		crud = append(crud, took[op]...)
		parts = append(parts, fmt.Sprintf("%s p99 %s", op, percentile(took[op], 99)))
	}
	load := "closed loop"
	if rate > 0 {
		load = fmt.Sprintf("%g requests/s offered", rate)
	}
	fmt.Printf("scale: N=%d API at %d clients, %s, for %s: CRUD p50 %s p99 %s (%d requests; %s), status summary p50 %s p99 %s (%d)\n",
		n, clients, load, dur, percentile(crud, 50), percentile(crud, 99), len(crud), strings.Join(parts, ", "),
		percentile(took["status"], 50), percentile(took["status"], 99), len(took["status"]))
	// What one request costs, whatever its latency: the store's round trips and the CPU of
	// each process (the five requests of a loop counted alike).
	requests := len(crud) + len(took["status"])
	cpu := map[string]time.Duration{}
	cpuDelta(cpu, cpu0, cpu1)
	for k, v := range cpu {
		cpu[k] = v * 1000 / time.Duration(requests) // µs per request in cpuReport's milliseconds
	}
	fmt.Printf("scale: N=%d API, %s: store commands per request: %s; CPU µs per request by process: %s\n",
		n, load, perCluster(cmds0, cmds1, requests), strings.Replace(cpuReport(cpu, 1), " ms", " µs", 1))
}

// percentile is the p-th percentile of ds (nearest rank), to the tenth of a millisecond.
func percentile(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(ds))
	return s[min(len(s)-1, (len(s)*p+99)/100-1)].Round(100 * time.Microsecond)
}
