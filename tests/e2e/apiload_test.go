package e2e

import (
	"fmt"
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
func apiLoad(b *testing.B, d *deployment, n, clients int, dur time.Duration) {
	if r := (&client{}).do("GET", "/projects/load", nil); r.code == 404 {
		mustCode(b, (&client{}).do("POST", "/projects", res("load", nil)), 201)
	}
	var mu sync.Mutex
	took := map[string][]time.Duration{}
	var failed []string
	timed := func(c *client, op, method, path string, body any, code int) {
		start := time.Now()
		r := c.do(method, path, body)
		elapsed := time.Since(start)
		mu.Lock()
		defer mu.Unlock()
		took[op] = append(took[op], elapsed)
		if r.code != code && len(failed) < 5 {
			failed = append(failed, fmt.Sprintf("%s %s: %d %s", method, path, r.code, r.body))
		}
	}
	end := time.Now().Add(dur)
	var wg sync.WaitGroup
	bases := []string{""} // the stack's api, and its replicas: clients spread over them
	for _, p := range stack.APIPorts {
		bases = append(bases, "http://127.0.0.1:"+strconv.Itoa(p)+"/v2")
	}
	for w := range clients {
		c := &client{base: bases[w%len(bases)]}
		wg.Go(func() {
			for i := 0; time.Now().Before(end); i++ {
				name := fmt.Sprintf("w%d-%d", w, i)
				path := "/projects/load/composite-apps/" + name + "/v1"
				timed(c, "create", "POST", "/projects/load/composite-apps", res(name, map[string]any{"compositeAppVersion": "v1"}), 201)
				timed(c, "read", "GET", path, nil, 200)
				spec := res(name, map[string]any{"compositeAppVersion": "v1"})
				spec["metadata"].(map[string]any)["description"] = "updated"
				timed(c, "update", "PUT", path, spec, 200)
				timed(c, "delete", "DELETE", path, nil, 204)
				timed(c, "status", "GET", d.dig()+"/status?output=summary", nil, 200)
			}
		})
	}
	wg.Wait()
	if len(failed) > 0 {
		b.Fatalf("API load: requests failed: %s", strings.Join(failed, "; "))
	}
	var crud []time.Duration
	var parts []string
	for _, op := range []string{"create", "read", "update", "delete"} {
		crud = append(crud, took[op]...)
		parts = append(parts, fmt.Sprintf("%s p99 %s", op, percentile(took[op], 99)))
	}
	fmt.Printf("scale: N=%d API at %d clients for %s: CRUD p50 %s p99 %s (%d requests; %s), status summary p50 %s p99 %s (%d)\n",
		n, clients, dur, percentile(crud, 50), percentile(crud, 99), len(crud), strings.Join(parts, ", "),
		percentile(took["status"], 50), percentile(took["status"], 99), len(took["status"]))
}

// percentile is the p-th percentile of ds (nearest rank), to the tenth of a millisecond.
func percentile(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(ds))
	return s[min(len(s)-1, (len(s)*p+99)/100-1)].Round(100 * time.Microsecond)
}
