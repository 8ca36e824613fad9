package e2e

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/temco/temco/internal/dev/testenv"
)

// procCPU is one process's name and the CPU time it has used so far.
type procCPU struct {
	name string
	cpu  time.Duration
}

// cpuByProcess reads the CPU time every process has used so far, by pid. Names are
// grouped: kernel workers as one, temco's api and worker told apart by their first
// argument. Empty where /proc is missing.
func cpuByProcess() map[string]procCPU {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	out := map[string]procCPU{}
	for _, d := range dirs {
		pid, err := strconv.Atoi(filepath.Base(d))
		if err != nil {
			continue
		}
		name, ticks, ok := testenv.ProcCPU(pid)
		if !ok {
			continue
		}
		if strings.HasPrefix(name, "kworker/") {
			name = "kworker"
		}
		if name == "temco" {
			if cmd, err := os.ReadFile(d + "/cmdline"); err == nil {
				if args := strings.Split(string(cmd), "\x00"); len(args) > 1 {
					name += " " + args[1]
				}
			}
		}
		out[filepath.Base(d)] = procCPU{name, time.Duration(ticks) * testenv.ClockTick}
	}
	return out
}

// cpuDelta adds what each process used between before and after to sum, by name.
func cpuDelta(sum map[string]time.Duration, before, after map[string]procCPU) {
	for pid, p := range after {
		if d := p.cpu - before[pid].cpu; d > 0 {
			sum[p.name] += d
		}
	}
}

// cpuReport formats CPU per run by process, largest first, dropping the negligible.
func cpuReport(sum map[string]time.Duration, runs int) string {
	names := make([]string, 0, len(sum))
	var total time.Duration
	for k, v := range sum {
		total += v
		if v/time.Duration(runs) >= 10*time.Millisecond {
			names = append(names, k)
		}
	}
	slices.SortFunc(names, func(a, b string) int { return cmp.Compare(sum[b], sum[a]) })
	parts := []string{fmt.Sprintf("total %d ms", (total / time.Duration(runs)).Milliseconds())}
	for _, k := range names {
		parts = append(parts, fmt.Sprintf("%s %d", k, (sum[k]/time.Duration(runs)).Milliseconds()))
	}
	return strings.Join(parts, ", ")
}

// orchestrators are the processes of temco's own work in the stack (its api and workers,
// Temporal, and the store: FerretDB and its PostgreSQL); clusterSide, the clusters' (the
// kube-apiservers and etcd) that the work is measured against.
var (
	orchestrators = []string{"temco api", "temco worker", "temporal", "temporal-server", "ferretdb", "postgres"}
	clusterSide   = []string{"kube-apiserver", "etcd"}
)

// cpuOf sums what the processes named used between before and after.
func cpuOf(names []string, before, after map[string]procCPU) time.Duration {
	sum := map[string]time.Duration{}
	cpuDelta(sum, before, after)
	var t time.Duration
	for _, n := range names {
		t += sum[n]
	}
	return t
}
