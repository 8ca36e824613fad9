package api

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/temco/temco/internal/dev/testenv"
)

// BenchmarkCRUDLoop is the scale benchmark's API loop without the clusters: 50 callers
// without pause, each creating, reading, updating and deleting a composite app of its own,
// on FerretDB with PostgreSQL, for TEMCO_CRUD_SECONDS (10). It prints the requests served
// and, per request, the CPU of FerretDB, PostgreSQL and this process (the api and its
// callers): the store's cost per request, measured in seconds rather than in a
// ten-minute cluster benchmark.
//
// An A/B in one process, as this machine's speed moves within minutes: with
// TEMCO_CRUD_SQL_B set, the loop runs four times, A B A B, the SQL run on the store's
// PostgreSQL database before each B and TEMCO_CRUD_SQL_A before the second A.
// TEMCO_CRUD_FERRETDB_PPROF=host:port serves FerretDB's pprof there.
func BenchmarkCRUDLoop(b *testing.B) {
	if addr := os.Getenv("TEMCO_CRUD_FERRETDB_PPROF"); addr != "" {
		b.Setenv("TEMCO_FERRETDB_DEBUG_ADDR", addr)
	}
	pg, stop := startPostgres(b)
	defer stop()
	c := newClient(b)
	c.do("POST", "/projects", res("load", nil)).must(b, 201)
	secs, _ := strconv.Atoi(os.Getenv("TEMCO_CRUD_SECONDS"))
	dur := time.Duration(max(secs, 10)) * time.Second
	phases := []string{""}
	if os.Getenv("TEMCO_CRUD_SQL_B") != "" {
		phases = []string{"A", "B", "A", "B"}
	}
	for b.Loop() {
		for i, phase := range phases {
			if sql := os.Getenv("TEMCO_CRUD_SQL_" + phase); sql != "" && i > 0 {
				psql(b, pg.Postgres.Port, sql)
			}
			crudLoop(b, c, phase, dur)
		}
	}
}

// crudLoop runs the loop once for dur and prints what it served and cost.
func crudLoop(b *testing.B, c *client, phase string, dur time.Duration) {
	ferretPID := ferret.Proc().Cmd.Process.Pid
	var mu sync.Mutex
	var took []time.Duration
	ferret0, pg0, self0 := procTicks(ferretPID), postgresTicks(), procTicks(os.Getpid())
	end := time.Now().Add(dur)
	var wg sync.WaitGroup
	for w := range 50 {
		wg.Go(func() {
			c := c.with(b)
			var mine []time.Duration
			timed := func(method, path string, body any, code int) {
				start := time.Now()
				c.do(method, path, body).must(b, code)
				mine = append(mine, time.Since(start))
			}
			for i := 0; time.Now().Before(end); i++ {
				name := fmt.Sprintf("w%d-%s%d", w, phase, i)
				path := "/projects/load/composite-apps/" + name + "/v1"
				timed("POST", "/projects/load/composite-apps", res(name, map[string]any{"compositeAppVersion": "v1"}), 201)
				timed("GET", path, nil, 200)
				spec := res(name, map[string]any{"compositeAppVersion": "v1"})
				spec["metadata"].(map[string]any)["description"] = "updated"
				timed("PUT", path, spec, 200)
				timed("DELETE", path, nil, 204)
			}
			mu.Lock()
			took = append(took, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	n := float64(len(took))
	perReq := func(ticks int64) float64 {
		return float64(time.Duration(ticks)*testenv.ClockTick) / float64(time.Millisecond) / n
	}
	slices.Sort(took)
	fmt.Printf("crud-loop %s: %d requests in %s (%.0f/s), p50 %s p99 %s; CPU ms per request: FerretDB %.2f PostgreSQL %.2f api and callers %.2f\n",
		phase, len(took), dur, n/dur.Seconds(), took[len(took)/2].Round(100*time.Microsecond), took[len(took)*99/100].Round(100*time.Microsecond),
		perReq(procTicks(ferretPID)-ferret0), perReq(postgresTicks()-pg0), perReq(procTicks(os.Getpid())-self0))
}

// psql runs sql on the ferretdb database of the PostgreSQL server on port.
func psql(b *testing.B, port int, sql string) {
	out, err := exec.Command("psql", "-h", "127.0.0.1", "-p", strconv.Itoa(port), "-U", "postgres", "-d", "ferretdb",
		"-v", "ON_ERROR_STOP=1", "-qAt", "-c", sql).CombinedOutput()
	if err != nil {
		b.Fatalf("psql: %v: %s", err, out)
	}
	fmt.Printf("crud-loop: ran %q: %s\n", sql, strings.TrimSpace(string(out)))
}

// procTicks is a process's user and system CPU in clock ticks (testenv.ClockTick).
func procTicks(pid int) int64 {
	_, t, _ := testenv.ProcCPU(pid)
	return t
}

// postgresTicks is the CPU ticks of every PostgreSQL process summed: its backends come and go.
func postgresTicks() (sum int64) {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if name, t, ok := testenv.ProcCPU(pid); ok && name == "postgres" {
			sum += t
		}
	}
	return sum
}
