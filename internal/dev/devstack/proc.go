// Package devstack starts the real components of a local temco stack — the Temporal
// dev server, FerretDB, local Kubernetes clusters, temco api and worker — as child
// processes, waits until each is ready and stops them all together. `temco dev` and
// the tests share it.
package devstack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Proc is one supervised child process; its output goes to a log file.
type Proc struct {
	Name string
	Cmd  *exec.Cmd
	Log  string
	done chan struct{}
	err  error
}

// StartProc starts bin with args, logging to logPath. The child is killed by the
// kernel if this process dies, so an abrupt end of the supervisor leaves no orphans.
func StartProc(name, logPath, bin string, args []string, env []string) (*Proc, error) {
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return nil, err
	}
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &Proc{Name: name, Cmd: cmd, Log: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		logf.Close()
		close(p.done)
	}()
	return p, nil
}

// Done is closed when the process has exited.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Exited reports the exit error once the process is gone.
func (p *Proc) Exited() error {
	select {
	case <-p.done:
		if p.err == nil {
			return fmt.Errorf("%s exited%s; see %s", p.Name, lastLine(p.Log), p.Log)
		}
		return fmt.Errorf("%s exited (%v)%s; see %s", p.Name, p.err, lastLine(p.Log), p.Log)
	default:
		return nil
	}
}

// lastLine is ": " and the last line of the log at path, where a process that failed says
// why: a log in a test's temporary directory is gone by the time anyone reads the output.
func lastLine(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	buf := make([]byte, 2048)
	if end, err := f.Seek(0, io.SeekEnd); err == nil {
		_, _ = f.Seek(max(0, end-int64(len(buf))), io.SeekStart)
	}
	n, _ := io.ReadFull(f, buf)
	lines := strings.Split(strings.TrimSpace(string(buf[:n])), "\n")
	if last := strings.TrimSpace(lines[len(lines)-1]); last != "" {
		return fmt.Sprintf(": %.300q", last)
	}
	return ""
}

// Stop sends SIGTERM to the process group, waits up to grace, then SIGKILLs it.
func (p *Proc) Stop(grace time.Duration) {
	if p == nil {
		return
	}
	pgid := -p.Cmd.Process.Pid
	_ = syscall.Kill(pgid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = syscall.Kill(pgid, syscall.SIGKILL)
		<-p.done
	}
}

// Kill sends SIGKILL to the process group and waits for it to exit.
func (p *Proc) Kill() {
	_ = syscall.Kill(-p.Cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
}

// WaitReady polls check every 100 ms until it succeeds, the process exits, or timeout.
func WaitReady(ctx context.Context, p *Proc, timeout time.Duration, check func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		cctx, ccancel := context.WithTimeout(ctx, 5*time.Second)
		err := check(cctx)
		ccancel()
		if err == nil {
			return nil
		}
		// The check the deadline cuts short says only that: report the one before it.
		if last == nil || ctx.Err() == nil {
			last = err
		}
		if err := p.Exited(); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not ready after %s (%v); see %s", p.Name, timeout, last, p.Log)
		case <-p.done:
		case <-tick.C:
		}
	}
}

// CheckPortsFree fails with a clear message naming the first port that is taken.
func CheckPortsFree(ports map[string]int) error {
	for what, port := range ports {
		if port == 0 {
			continue
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			return fmt.Errorf("port %d (%s) on 127.0.0.1 is already in use: stop what holds it or choose another port", port, what)
		}
		l.Close()
	}
	return nil
}

// FreePort finds a free TCP port on 127.0.0.1 in 12000-19999: below the clusters' ranges
// and Linux's ephemeral range (32768+), where any outgoing connection may take a port the
// kernel handed out as free before its server binds it (which a loaded `make test` saw: an
// api that could not listen, three times). A port is handed out once per machine while
// the process that took it lives (reserve): make test's packages start stacks at once, and
// a port picked but not yet bound by one must not be picked by another.
func FreePort() (int, error) {
	for range 100 {
		p := 12000 + rand.IntN(8000)
		if !reserve(strconv.Itoa(p)) {
			continue
		}
		if CheckPortsFree(map[string]int{"port": p}) == nil {
			return p, nil
		}
	}
	return 0, errors.New("no free port in 12000-19999")
}

// reserved holds open the lock files of what reserve took, for the process's life.
var reserved sync.Map

// reserve takes name (a port, or a block of cluster ports) for this process among every
// process on the machine, by a lock on a file under the temporary directory: the kernel
// drops it when the process ends, however it ends, so nothing stale is left to clean.
func reserve(name string) bool {
	if _, mine := reserved.Load(name); mine {
		return false
	}
	// Without a lock file to share, this process alone keeps from handing one out twice.
	alone := func() bool { _, taken := reserved.LoadOrStore(name, (*os.File)(nil)); return !taken }
	dir := filepath.Join(os.TempDir(), "temco-ports")
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return alone()
	}
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return alone()
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return false
	}
	reserved.Store(name, f)
	return true
}

// dialable reports whether something accepts TCP connections on addr.
func dialable(ctx context.Context, addr string) error {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	return c.Close()
}

var errNotReady = errors.New("not ready")

// FreeClusterBase finds a first port from which clusters ranges of ten ports (a cluster's,
// with room for the GitOps cluster's Flux and git server) are all free. The ports are below
// Linux's ephemeral range (32768+): no outgoing connection takes one between this check
// and the bind.
func FreeClusterBase(clusters int) (int, error) {
	for range 50 {
		base := 20000 + 10*rand.IntN(1200)
		if !reserveBlocks(base, clusters) {
			continue
		}
		ports := map[string]int{}
		for i := range 10 * clusters {
			ports[strconv.Itoa(i)] = base + i
		}
		if CheckPortsFree(ports) == nil {
			return base, nil
		}
	}
	return 0, fmt.Errorf("no free range of ports for %d clusters", clusters)
}

// reserveBlocks reserves the blocks of ten ports from base that clusters use. When one is
// taken, those reserved before it stay this process's unused: that costs only a retry.
func reserveBlocks(base, clusters int) bool {
	for b := range clusters {
		if !reserve("c" + strconv.Itoa(base+10*b)) {
			return false
		}
	}
	return true
}
