package sandbox

import (
	"context"
	"errors"
	"os"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/temco/temco/internal/dev/testenv"
)

// children polls until this process's children are as wanted and returns them.
func children(t *testing.T, want func(kids []int) bool) []int {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		kids, err := testenv.Children(os.Getpid())
		if err != nil {
			t.Fatal(err)
		}
		if want(kids) {
			return kids
		}
		if time.Now().After(deadline) {
			t.Fatalf("children %v: not the number wanted", kids)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitSpares polls until n spares wait for job, and returns their pids.
func waitSpares(t *testing.T, job Job, n int) []int {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var pids []int
		allSpares.Range(func(k, v any) bool {
			p := v.(*spares)
			p.mu.Lock()
			for _, c := range p.idle {
				if k.(spareKind).job == job.Name {
					pids = append(pids, c.cmd.Process.Pid)
				}
			}
			p.mu.Unlock()
			return true
		})
		if len(pids) == n {
			return pids
		}
		if time.Now().After(deadline) {
			t.Fatalf("spares %v, want %d", pids, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// askPid runs the pid job and returns the answering process's pid.
func askPid(t *testing.T, s *Sandbox) int {
	t.Helper()
	out, err := s.Run(context.Background(), pid, nil, time.Minute, 64)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(string(out))
	if err != nil {
		t.Fatalf("answer %q: %v", out, err)
	}
	return n
}

// endSpares ends every spare of the test (each test starts without any).
func endSpares(t *testing.T) {
	t.Cleanup(func() {
		allSpares.Range(func(k, v any) bool {
			p := v.(*spares)
			p.mu.Lock()
			for _, c := range p.idle {
				c.expire.Stop()
				c.kill()
			}
			p.idle = nil
			p.mu.Unlock()
			return true
		})
		children(t, func(kids []int) bool { return len(kids) == 0 })
	})
}

// A spare started after a request answers the next one, and every request gets a process
// of its own: a spare serves once.
func TestASpareAnswersTheNextRequestAndServesOnce(t *testing.T) {
	endSpares(t)
	s := testSandbox(t)
	s.Spares = 1
	seen := map[int]bool{askPid(t, s): true}
	for range 3 {
		spare := waitSpares(t, pid, 1)[0]
		got := askPid(t, s)
		if got != spare {
			t.Fatalf("answered by %d, want the spare %d", got, spare)
		}
		if seen[got] {
			t.Fatalf("process %d answered twice", got)
		}
		seen[got] = true
	}
}

// Spares are started again once the jobs of a burst have ended, up to Spares, never past.
func TestSparesAreStartedAgainAfterABurst(t *testing.T) {
	endSpares(t)
	s := testSandbox(t)
	s.Spares = 2
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() { askPid(t, s) })
	}
	wg.Wait()
	waitSpares(t, pid, 2)
	// and they stay two: no start is still under way
	time.Sleep(200 * time.Millisecond) // a negative check: nothing to poll for
	if kids, _ := testenv.Children(os.Getpid()); len(kids) != 2 {
		t.Fatalf("spares %v, want 2", kids)
	}
}

// A spare's request is held to its timeout, from when it was sent, and killed at it; a
// spare killed from outside is passed over.
func TestASpareIsTimedAndADeadSpareIsPassedOver(t *testing.T) {
	endSpares(t)
	s := testSandbox(t)
	s.Spares = 1
	spinOnce := func() {
		t.Helper()
		_, err := s.Run(context.Background(), spin, nil, 500*time.Millisecond, 64)
		if !errors.As(err, new(*TimedOut)) {
			t.Fatalf("spin: %v, want TimedOut", err)
		}
	}
	spinOnce() // leaves a spare for the next
	spinner := waitSpares(t, spin, 1)[0]
	spinOnce()
	if kids, _ := testenv.Children(os.Getpid()); slices.Contains(kids, spinner) {
		t.Fatalf("the job past its timeout, %d, still runs", spinner)
	}
	askPid(t, s)
	spare := waitSpares(t, pid, 1)[0]
	if err := syscall.Kill(spare, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	children(t, func(kids []int) bool { return !slices.Contains(kids, spare) }) // reaped
	if got := askPid(t, s); got == spare {
		t.Fatalf("answered by the killed spare %d", got)
	}
}

// A spare left unused ends (spareIdle, 2 s in these tests).
func TestAnUnusedSpareEnds(t *testing.T) {
	endSpares(t)
	s := testSandbox(t)
	s.Spares = 1
	first := askPid(t, s)
	spare := waitSpares(t, pid, 1)
	waitSpares(t, pid, 0)
	children(t, func(kids []int) bool { return len(kids) == 0 })
	if kids, _ := testenv.Children(os.Getpid()); slices.Contains(kids, spare[0]) || slices.Contains(kids, first) {
		t.Fatalf("children %v", kids)
	}
}
