package devstack

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/temco/temco/internal/dev/gitserver"
)

// Backoff of a component's restarts: the first wait, doubled at each restart up to the
// ceiling, and back to the first once the component stayed up stableAfter.
const (
	firstBackoff = time.Second
	maxBackoff   = 30 * time.Second
	stableAfter  = 60 * time.Second
	// clearWithin bounds the wait for a crashed process group to be gone.
	clearWithin = 10 * time.Second
)

// component is one part of the stack the supervisor restarts: a child process, or a
// server run in this process (the git server).
type component struct {
	name  string
	proc  func() *Proc                    // its process now; nil for an in-process server
	start func(ctx context.Context) error // starts it again as the stack did, and waits until it is ready
	stop  func()                          // an in-process server only: takes it down abruptly (Kill)
}

// Supervisor restarts the components of a stack that exit, with backoff, and prints each
// restart. Stack.Supervise makes one; Stack.Stop stops it before the processes.
type Supervisor struct {
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	outMu  sync.Mutex // one line at a time
	out    io.Writer

	first, max, stable time.Duration // the backoff (tests shorten it)

	mu      sync.Mutex // the watches' state
	watches []*watch
	changed chan struct{} // closed, and replaced, when a component goes down or comes up
}

// watch is the supervisor's state of one component.
type watch struct {
	component
	up       bool
	upSince  time.Time
	backoff  time.Duration  // the wait before the next restart
	down     *time.Duration // Kill's wait for the next restart, instead of backoff
	restarts int
	killed   chan struct{} // an in-process server: Kill took it down
}

// Supervise starts watching every component of the stack and restarts the one that exits;
// Stack.Stop stops the supervisor first (no restart races with a stop), and so does the
// end of ctx. Calling it twice returns the same Supervisor.
func (s *Stack) Supervise(ctx context.Context, out io.Writer) *Supervisor {
	s.superviseOnce.Do(func() {
		sv := newSupervisor(ctx, out, s.components(), firstBackoff, maxBackoff, stableAfter)
		s.mu.Lock()
		s.sv = sv
		s.mu.Unlock()
	})
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sv
}

func newSupervisor(ctx context.Context, out io.Writer, comps []component, first, max, stable time.Duration) *Supervisor {
	ctx, cancel := context.WithCancel(ctx)
	sv := &Supervisor{ctx: ctx, cancel: cancel, out: out, first: first, max: max, stable: stable, changed: make(chan struct{})}
	now := time.Now()
	for _, c := range comps {
		w := &watch{component: c, up: true, upSince: now, backoff: first, killed: make(chan struct{}, 1)}
		sv.watches = append(sv.watches, w)
		sv.wg.Add(1)
		go sv.watch(w)
	}
	return sv
}

// Components are the names of what it supervises, in the stack's order.
func (sv *Supervisor) Components() []string {
	var names []string
	for _, w := range sv.watches {
		names = append(names, w.name)
	}
	return names
}

// Restarts counts the restarts done, by component.
func (sv *Supervisor) Restarts() map[string]int {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	out := map[string]int{}
	for _, w := range sv.watches {
		out[w.name] = w.restarts
	}
	return out
}

// Kill SIGKILLs the component's process group now (as a crash would) and has it restarted
// after down instead of the backoff (down 0: at once). An in-process server (the git
// server) has its listener and every open connection closed abruptly, and serves again on
// the same address after down. A component that is not up (its restart is under way) is
// an error, as is an unknown name.
func (sv *Supervisor) Kill(name string, down time.Duration) error {
	i := slices.IndexFunc(sv.watches, func(w *watch) bool { return w.name == name })
	if i < 0 {
		return fmt.Errorf("no component %q; the supervised ones: %s", name, strings.Join(sv.Components(), ", "))
	}
	w := sv.watches[i]
	sv.mu.Lock()
	switch {
	case sv.ctx.Err() != nil:
		sv.mu.Unlock()
		return fmt.Errorf("kill %s: the supervisor is stopped", name)
	case !w.up:
		sv.mu.Unlock()
		return fmt.Errorf("kill %s: it is not up (a restart is under way)", name)
	}
	w.up, w.down = false, &down
	sv.notify()
	sv.mu.Unlock()
	if w.proc == nil {
		w.stop()
		w.killed <- struct{}{} // room for one: only an up component is killed
		return nil
	}
	if p := w.proc(); p != nil && p.Exited() == nil {
		p.Kill()
	}
	return nil
}

// WaitUp waits until every component is running and ready again (each restart's readiness
// check passed), or ctx ends.
func (sv *Supervisor) WaitUp(ctx context.Context) error {
	for {
		sv.mu.Lock()
		changed := sv.changed
		var down []string
		for _, w := range sv.watches {
			if !w.up {
				down = append(down, w.name)
			}
		}
		sv.mu.Unlock()
		// A crash the watcher has not seen yet counts too.
		for _, w := range sv.watches {
			if w.proc != nil && !slices.Contains(down, w.name) {
				if p := w.proc(); p == nil || p.Exited() != nil {
					down = append(down, w.name)
				}
			}
		}
		if len(down) == 0 {
			return nil
		}
		select {
		case <-changed: // the watcher of a crash not seen yet changes it too
		case <-sv.ctx.Done():
			return fmt.Errorf("%s not up: the supervisor is stopped", strings.Join(down, ", "))
		case <-ctx.Done():
			return fmt.Errorf("%s not up: %w", strings.Join(down, ", "), ctx.Err())
		}
	}
}

// stop ends the watchers and waits for them, a restart under way included (its start
// sees the context end).
func (sv *Supervisor) stop() {
	sv.cancel()
	sv.wg.Wait()
}

// watch restarts w each time it exits, until the supervisor stops.
func (sv *Supervisor) watch(w *watch) {
	defer sv.wg.Done()
	for {
		exited, why, ok := sv.awaitExit(w)
		if !ok {
			return
		}
		sv.mu.Lock()
		w.up = false
		if time.Since(w.upSince) >= sv.stable {
			w.backoff = sv.first
		}
		sv.notify()
		sv.mu.Unlock()
		wait := sv.nextWait(w)
		sv.printf("%s exited (%s); restarting in %s (restart %d)", w.name, why, wait, w.restarts+1)
		sv.clear(exited)
		if !sv.restart(w, exited, wait) {
			return
		}
		sv.mu.Lock()
		w.up, w.upSince = true, time.Now()
		w.restarts++
		sv.notify()
		sv.mu.Unlock()
		pid := ""
		if w.proc != nil {
			if p := w.proc(); p != nil {
				pid = " (pid " + strconv.Itoa(p.Cmd.Process.Pid) + ")"
			}
		}
		sv.printf("%s restarted%s", w.name, pid)
	}
}

// restart starts w again after wait, and again after the next backoff while that fails;
// false when the supervisor stops first.
func (sv *Supervisor) restart(w *watch, exited *Proc, wait time.Duration) bool {
	for {
		timer := time.NewTimer(wait)
		select {
		case <-timer.C:
		case <-sv.ctx.Done():
			timer.Stop()
			return false
		}
		err := w.start(sv.ctx)
		if sv.ctx.Err() != nil {
			return false // stopping: Stack.Stop stops what the start left
		}
		if err == nil {
			return true
		}
		// What a failed start left running would hold the ports of the next try.
		if w.proc != nil {
			if p := w.proc(); p != exited {
				sv.clear(p)
				exited = p
			}
		}
		wait = sv.nextWait(w)
		sv.printf("%s did not restart: %v; retrying in %s (restart %d)", w.name, err, wait, w.restarts+1)
	}
}

// awaitExit waits until w's process exits (or Kill takes an in-process server down) and
// returns it (nil in-process) and why; false when the supervisor stops.
func (sv *Supervisor) awaitExit(w *watch) (*Proc, string, bool) {
	if w.proc == nil {
		select {
		case <-w.killed:
			return nil, "killed: listener and connections closed", sv.ctx.Err() == nil
		case <-sv.ctx.Done():
			return nil, "", false
		}
	}
	p := w.proc()
	if p == nil {
		return nil, "no process", sv.ctx.Err() == nil
	}
	select {
	case <-p.Done():
	case <-sv.ctx.Done():
		return nil, "", false
	}
	if sv.ctx.Err() != nil { // the stop's own doing
		return nil, "", false
	}
	if p.err == nil {
		return p, "exit status 0", true
	}
	return p, p.err.Error(), true
}

// clear kills what is left of p's process group and waits (up to clearWithin) until the
// kernel has reaped all of it: a crashed leader's children hold its ports and files, and
// PostgreSQL will not start while its lock file names a process still there (a zombie
// reparented to an init that reaps it late).
func (sv *Supervisor) clear(p *Proc) {
	if p == nil {
		return
	}
	// The group's id cannot be reused while a member is left, so this kills only it.
	pgid := p.Cmd.Process.Pid
	deadline := time.Now().Add(clearWithin)
	for syscall.Kill(-pgid, syscall.SIGKILL) == nil && time.Now().Before(deadline) {
		select {
		case <-sv.ctx.Done():
			return
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// nextWait is the wait before w's next restart: Kill's, or the backoff, which it doubles.
func (sv *Supervisor) nextWait(w *watch) time.Duration {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	if w.down != nil {
		d := *w.down
		w.down = nil
		return d
	}
	d := w.backoff
	w.backoff = min(2*w.backoff, sv.max)
	return d
}

// notify wakes WaitUp; sv.mu held.
func (sv *Supervisor) notify() {
	close(sv.changed)
	sv.changed = make(chan struct{})
}

func (sv *Supervisor) printf(format string, args ...any) {
	sv.outMu.Lock()
	defer sv.outMu.Unlock()
	fmt.Fprintf(sv.out, "temco dev: "+format+"\n", args...)
}

// components lists the processes the stack runs, each with the start function that
// brought it up, and its in-process git server.
func (s *Stack) components() []component {
	var out []component
	add := func(name string, proc func() *Proc, start func(context.Context) error) {
		if proc() != nil {
			out = append(out, component{name: name, proc: proc, start: start})
		}
	}
	field := func(get func() *Proc) func() *Proc { // temco's, which s.mu guards
		return func() *Proc {
			s.mu.Lock()
			defer s.mu.Unlock()
			return get()
		}
	}
	add("temco api", field(func() *Proc { return s.API }), s.StartAPI)
	add("temco worker", field(func() *Proc { return s.Worker }), s.StartWorker)
	s.mu.Lock()
	replicas := len(s.MoreAPIs) // MoreWorkers has as many
	s.mu.Unlock()
	for j := range replicas {
		i := j + 2
		add("temco api "+strconv.Itoa(i), field(func() *Proc { return s.MoreAPIs[j] }),
			func(ctx context.Context) error { return s.startReplicaAPI(ctx, i) })
		add("temco worker "+strconv.Itoa(i), field(func() *Proc { return s.MoreWorkers[j] }),
			func(ctx context.Context) error { return s.startReplicaWorker(ctx, i) })
	}
	add("temco hub", field(func() *Proc { return s.HubProc }), s.StartHub)
	add("temco agent", field(func() *Proc { return s.AgentProc }), s.StartAgent)
	if s.Temporal != nil && s.Temporal.Proc() != nil {
		add(s.Temporal.Proc().Name, s.Temporal.Proc, s.Temporal.Start)
	}
	if s.Postgres != nil {
		add("postgres", s.Postgres.Proc, s.Postgres.Start)
	}
	if s.Mongo != nil {
		add("ferretdb", s.Mongo.Proc, s.Mongo.Start)
	}
	clusters := slices.Clone(s.plainClusters())
	if s.GitOps != nil {
		clusters = append(clusters, s.GitOps.Cluster)
	}
	for _, c := range clusters {
		for _, name := range append([]string{"etcd", "kube-apiserver"}, clusterControllers...) {
			add(c.Name+"/"+name, func() *Proc { return c.proc(name) }, func(ctx context.Context) error { return c.startComponent(ctx, name) })
		}
	}
	if s.CertManager != nil {
		add(s.CertManager.Cluster.Name+"/cert-manager", s.CertManager.Proc, s.CertManager.Start)
	}
	if s.GitOps != nil {
		g := s.GitOps
		out = append(out, gitComponent(s.Git))
		for _, name := range fluxControllers {
			add(g.Cluster.Name+"/"+name, func() *Proc { return g.proc(name) }, func(ctx context.Context) error { return g.startFluxController(ctx, name) })
		}
		add(g.Cluster.Name+"/gitops-monitor", func() *Proc { return g.proc("gitops-monitor") },
			func(ctx context.Context) error { return g.startMonitor(ctx, nil) })
	}
	if s.Registry != nil {
		add("oci registry", s.Registry.Proc, s.Registry.Start)
	}
	if s.Jaeger != nil {
		add("jaeger", s.Jaeger.Proc, s.Jaeger.Start)
	}
	return out
}

// gitComponent is the in-process git server: Kill closes it (http.Server.Close: the
// listener and every connection), the restart serves again on the same address.
func gitComponent(g *gitserver.Server) component {
	return component{name: "git server", stop: func() { _ = g.Stop() },
		start: func(ctx context.Context) error {
			if err := g.Start(); err != nil {
				return err
			}
			return dialable(ctx, g.Addr)
		}}
}
