package devstack

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/temco/temco/internal/dev/gitserver"
	"github.com/temco/temco/internal/dev/testenv/poll"
)

// syncBuffer is the supervisor's output, written by its watchers while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// sleeper is a component whose process is `sleep 1000` (or cmd); its first failStarts
// restarts start the process but report it not ready.
type sleeper struct {
	dir        string
	cmd        []string
	failStarts atomic.Int32
	mu         sync.Mutex
	procs      []*Proc // every process it started, the current one last
}

func newSleeper(t *testing.T, cmd ...string) *sleeper {
	if cmd == nil {
		cmd = []string{"sleep", "1000"}
	}
	s := &sleeper{dir: t.TempDir(), cmd: cmd}
	if err := s.start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, p := range s.started() { // the groups: a failed test may leave a crashed leader's child
			_ = syscall.Kill(-p.Cmd.Process.Pid, syscall.SIGKILL)
		}
	})
	return s
}

func (s *sleeper) start(context.Context) error {
	p, err := StartProc("sleeper", filepath.Join(s.dir, "sleep.log"), s.cmd[0], s.cmd[1:], nil)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.procs = append(s.procs, p)
	s.mu.Unlock()
	if s.failStarts.Add(-1) >= 0 {
		return errors.New("not ready")
	}
	return nil
}

func (s *sleeper) started() []*Proc {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.procs)
}

func (s *sleeper) proc() *Proc {
	procs := s.started()
	return procs[len(procs)-1]
}

func (s *sleeper) component() component {
	return component{name: "sleeper", proc: s.proc, start: s.start}
}

// crash SIGKILLs the sleeper's process, as the kernel's OOM killer would, and waits until
// the supervisor restarted it a restarts-th time.
func crash(t *testing.T, sv *Supervisor, s *sleeper, restarts int) {
	t.Helper()
	old := s.proc()
	if err := syscall.Kill(old.Cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, fmt.Sprintf("restart %d", restarts), 10*time.Second, func(context.Context) error {
		if n := sv.Restarts()["sleeper"]; n != restarts {
			return fmt.Errorf("%d restarts", n)
		}
		return nil
	})
	if p := s.proc(); p == old || p.Exited() != nil {
		t.Fatalf("after restart %d the process is %v, exited %v", restarts, p.Cmd.Process.Pid, p.Exited())
	}
}

func wantLines(t *testing.T, out string, lines ...string) {
	t.Helper()
	for _, l := range lines {
		if !strings.Contains(out, "temco dev: "+l+"\n") {
			t.Errorf("the output lacks %q:\n%s", l, out)
		}
	}
}

// A crashed process is restarted by its own start function, each time after a longer
// wait, up to the ceiling, and each restart is printed with the new pid.
func TestSupervisorRestartsACrashWithGrowingBackoff(t *testing.T) {
	s := newSleeper(t)
	var out syncBuffer
	sv := newSupervisor(context.Background(), &out, []component{s.component()}, 20*time.Millisecond, 80*time.Millisecond, time.Hour)
	defer sv.stop()
	for i, wait := range []string{"20ms", "40ms", "80ms", "80ms"} {
		crash(t, sv, s, i+1)
		wantLines(t, out.String(), fmt.Sprintf("sleeper exited (signal: killed); restarting in %s (restart %d)", wait, i+1),
			fmt.Sprintf("sleeper restarted (pid %d)", s.proc().Cmd.Process.Pid))
	}
	if err := sv.WaitUp(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// A component that stayed up long enough (here: any time) starts its backoff afresh.
func TestSupervisorBackoffStartsAgainOnceStable(t *testing.T) {
	s := newSleeper(t)
	var out syncBuffer
	sv := newSupervisor(context.Background(), &out, []component{s.component()}, 20*time.Millisecond, time.Second, 0)
	defer sv.stop()
	crash(t, sv, s, 1)
	crash(t, sv, s, 2)
	wantLines(t, out.String(), "sleeper exited (signal: killed); restarting in 20ms (restart 1)",
		"sleeper exited (signal: killed); restarting in 20ms (restart 2)")
}

// A restart that fails is printed, what it started is killed, and it is tried again after
// the next backoff.
func TestSupervisorRetriesAFailedRestart(t *testing.T) {
	s := newSleeper(t)
	var out syncBuffer
	sv := newSupervisor(context.Background(), &out, []component{s.component()}, 20*time.Millisecond, time.Second, time.Hour)
	defer sv.stop()
	s.failStarts.Store(1)
	crash(t, sv, s, 1)
	wantLines(t, out.String(), "sleeper exited (signal: killed); restarting in 20ms (restart 1)",
		"sleeper did not restart: not ready; retrying in 40ms (restart 1)")
	procs := s.started()
	if len(procs) != 3 {
		t.Fatalf("%d processes started, want 3 (the first, the failed restart, the restart)", len(procs))
	}
	poll.Until(t, "the failed restart's process killed", 5*time.Second, func(context.Context) error {
		if procs[1].Exited() == nil {
			return errors.New("still running")
		}
		return nil
	})
}

// When a process dies, what it started is killed before the restart and gone (reaped)
// by then: it would hold the ports and files the restarted process needs.
func TestSupervisorClearsTheCrashedProcessGroup(t *testing.T) {
	dir := t.TempDir()
	s := newSleeper(t, "sh", "-c", "sleep 1000 & echo $! > "+filepath.Join(dir, "child")+"; wait")
	var child int
	poll.Until(t, "the child's pid", 5*time.Second, func(context.Context) error {
		b, err := os.ReadFile(filepath.Join(dir, "child"))
		if err == nil {
			_, err = fmt.Sscan(string(b), &child)
		}
		return err
	})
	var out syncBuffer
	sv := newSupervisor(context.Background(), &out, []component{s.component()}, 20*time.Millisecond, time.Second, time.Hour)
	defer sv.stop()
	crash(t, sv, s, 1) // the leader only: its child stays
	if err := syscall.Kill(child, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("the crashed process's child %d is still there at the restart (signal 0: %v)", child, err)
	}
}

// Kill SIGKILLs the process and has it restarted after the given down time, not the backoff.
func TestSupervisorKillRestartsAfterDown(t *testing.T) {
	s := newSleeper(t)
	var out syncBuffer
	sv := newSupervisor(context.Background(), &out, []component{s.component()}, time.Hour, time.Hour, time.Hour)
	defer sv.stop()
	if err := sv.Kill("nothing", 0); err == nil || !strings.Contains(err.Error(), "sleeper") {
		t.Fatalf("Kill of an unknown component: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i, down := range []time.Duration{0, 300 * time.Millisecond} {
		old := s.proc()
		begin := time.Now()
		if err := sv.Kill("sleeper", down); err != nil {
			t.Fatal(err)
		}
		if err := old.Exited(); err == nil || !strings.Contains(err.Error(), "signal: killed") {
			t.Fatalf("after Kill the process: %v", err)
		}
		if err := sv.WaitUp(ctx); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(begin); took < down {
			t.Errorf("up again %s after Kill, before the %s down", took, down)
		}
		if n := sv.Restarts()["sleeper"]; n != i+1 {
			t.Fatalf("%d restarts, want %d", n, i+1)
		}
		wantLines(t, out.String(), fmt.Sprintf("sleeper exited (signal: killed); restarting in %s (restart %d)", down, i+1))
	}
	if err := sv.Kill("sleeper", time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := sv.Kill("sleeper", 0); err == nil || !strings.Contains(err.Error(), "not up") {
		t.Fatalf("Kill during a pending restart: %v", err)
	}
}

// Stopping the supervisor while a restart waits out its backoff restarts nothing.
func TestSupervisorStopDuringAPendingRestartRestartsNothing(t *testing.T) {
	s := newSleeper(t)
	var out syncBuffer
	sv := newSupervisor(context.Background(), &out, []component{s.component()}, time.Hour, time.Hour, time.Hour)
	if err := syscall.Kill(s.proc().Cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the restart announced", 10*time.Second, func(context.Context) error {
		if !strings.Contains(out.String(), "restarting in 1h0m0s (restart 1)") {
			return errors.New(out.String())
		}
		return nil
	})
	stopped := make(chan struct{})
	go func() { sv.stop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("stop waits for the pending restart")
	}
	if n, r := len(s.started()), sv.Restarts()["sleeper"]; n != 1 || r != 0 {
		t.Fatalf("after the stop: %d processes started, %d restarts; want 1 and 0", n, r)
	}
	if err := sv.WaitUp(context.Background()); err == nil || !strings.Contains(err.Error(), "sleeper not up") {
		t.Fatalf("WaitUp after the stop: %v", err)
	}
	if err := sv.Kill("sleeper", 0); err == nil {
		t.Fatal("Kill after the stop succeeded")
	}
}

// The git server, which runs in this process, is killed by closing its listener and its
// connections, and serves again on the same address after the down time.
func TestSupervisorKillsAndRestartsTheGitServer(t *testing.T) {
	if _, err := os.Stat(gitserver.Backend); err != nil {
		t.Skip("needs Debian's git-http-backend")
	}
	g := &gitserver.Server{Root: t.TempDir(), Addr: "127.0.0.1:0"}
	if err := g.Start(); err != nil {
		t.Fatal(err)
	}
	defer g.Stop()
	addr := g.Addr
	var out syncBuffer
	sv := newSupervisor(context.Background(), &out, []component{gitComponent(g)}, time.Hour, time.Hour, time.Hour)
	defer sv.stop()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := sv.Kill("git server", 2*time.Second); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := conn.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("an open connection survived Kill: read %v", err)
	}
	if c, err := net.Dial("tcp", addr); err == nil {
		c.Close()
		t.Fatal("the git server accepts connections while it is down")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := sv.WaitUp(ctx); err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("not serving on %s again: %v", addr, err)
	}
	c.Close()
	wantLines(t, out.String(), "git server exited (killed: listener and connections closed); restarting in 2s (restart 1)",
		"git server restarted")
}

// A stack supervises each of its processes under its name, hands out one supervisor, and
// stops it before the processes: their ends restart nothing.
func TestStackSupervisesItsProcessesAndStopsThatFirst(t *testing.T) {
	dir := t.TempDir()
	sleep := func(name string) *Proc {
		p, err := StartProc(name, filepath.Join(dir, "sleep.log"), "sleep", []string{"1000"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if p.Exited() == nil {
				p.Kill()
			}
		})
		return p
	}
	s := &Stack{cfg: Config{DataDir: dir}, Temporal: &Temporal{}, Mongo: &FerretDB{}}
	s.API, s.Worker = sleep("temco api"), sleep("temco worker")
	s.MoreAPIs, s.MoreWorkers = []*Proc{sleep("temco api 2")}, []*Proc{sleep("temco worker 2")}
	s.Temporal.proc.Store(sleep("temporal"))
	s.Mongo.proc.Store(sleep("ferretdb"))
	c := &Cluster{Name: "cluster1", procs: map[string]*Proc{}}
	for _, name := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok"} {
		c.procs[name] = sleep("cluster1/" + name)
	}
	s.Clusters = []*Cluster{c}
	procs := s.Procs()

	var out syncBuffer
	sv := s.Supervise(context.Background(), &out)
	if again := s.Supervise(context.Background(), &out); again != sv {
		t.Fatal("a second Supervise made another supervisor")
	}
	want := []string{"temco api", "temco worker", "temco api 2", "temco worker 2", "temporal", "ferretdb",
		"cluster1/etcd", "cluster1/kube-apiserver", "cluster1/kube-controller-manager", "cluster1/kube-scheduler", "cluster1/kwok"}
	if got := sv.Components(); !slices.Equal(got, want) {
		t.Fatalf("components %q, want %q", got, want)
	}
	if len(procs) != len(want) {
		t.Fatalf("Procs lists %d processes, want %d", len(procs), len(want))
	}
	s.Stop()
	for _, p := range procs {
		if p.Exited() == nil {
			t.Errorf("%s still runs after Stop", p.Name)
		}
	}
	if strings.Contains(out.String(), "exited") {
		t.Fatalf("the supervisor saw the stop as crashes:\n%s", out.String())
	}
}
