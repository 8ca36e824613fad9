package devstack

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"time"
)

// startGate lets a bounded number of local clusters start at once on the machine, across
// processes: a slot is an exclusive flock(2) on one of its files, which the kernel
// releases if the process dies. A starting kube-apiserver (its RBAC bootstrap, the CRDs'
// OpenAPI) needs a core for some seconds: the sixteen of four test stacks starting at
// once on two cores outlasted every readiness bound, so a cluster starts, or restarts a
// component, only in a slot, and its readiness bounds count from there.
type startGate struct {
	dir   string
	slots int
}

// clusterStarts is the machine's gate: a slot per CPU.
var clusterStarts = startGate{dir: os.TempDir(), slots: runtime.NumCPU()}

// take waits for a free slot, bounded by ctx alone; the function returned gives it back.
func (g startGate) take(ctx context.Context) (func(), error) {
	var files []*os.File
	defer func() {
		for _, f := range files {
			_ = f.Close()
		}
	}()
	for k := range g.slots {
		f, err := os.OpenFile(filepath.Join(g.dir, fmt.Sprintf("temco-cluster-start-%d.lock", k)), os.O_CREATE|os.O_RDWR, 0o666)
		if err != nil {
			return nil, fmt.Errorf("cluster start slot: %w", err)
		}
		files = append(files, f)
	}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		for k, f := range files {
			if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil {
				files = append(files[:k], files[k+1:]...) // kept open: the lock lives with f
				return func() { _ = f.Close() }, nil
			}
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("cluster start slot: %w", ctx.Err())
		case <-tick.C:
		}
	}
}
