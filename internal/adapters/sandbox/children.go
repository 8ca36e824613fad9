package sandbox

import (
	"io"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// proc is one started child process, waiting for its request on stdin.
type proc struct {
	cmd         *exec.Cmd
	stdin       io.WriteCloser
	out, stderr *capped
	done        chan struct{} // closed when the process has ended; err is then its end
	err         error
	expire      *time.Timer // a spare's end when unused
}

func (c *proc) kill() { _ = c.cmd.Process.Kill() }

// alive: the process has not ended (a spare may have been killed from outside).
func (c *proc) alive() bool {
	select {
	case <-c.done:
		return false
	default:
		return true
	}
}

// start starts a child for job, its answer bounded to maxAnswer bytes.
func (s *Sandbox) start(job Job, maxAnswer int) (*proc, error) {
	exe := s.Exe
	if exe == "" {
		exe = "/proc/self/exe"
	}
	cmd := exec.Command(exe)
	// Nothing of the worker's environment (its keys' paths, its settings) reaches the job.
	cmd.Env = []string{jobEnv + "=" + job.Name, memoryEnv + "=" + strconv.FormatInt(s.Memory, 10),
		"GOMEMLIMIT=" + strconv.FormatInt(s.Memory*3/4, 10)}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	c := &proc{cmd: cmd, stdin: stdin, out: &capped{max: maxAnswer}, stderr: &capped{max: 64 << 10, drop: true},
		done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = c.out, c.stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cmd.WaitDelay = 5 * time.Second
	started := make(chan error, 1)
	go func() {
		// The child dies with the thread that started it: that thread is kept until the
		// child ends (Go may retire a thread otherwise, killing the child early).
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		c.err = cmd.Wait()
		close(c.done)
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return c, nil
}

// spareIdle is how long a spare child waits unused before it is ended (a variable for
// tests).
var spareIdle = time.Minute

// refillAfter is how long after the last job of a kind ended its spares are started again:
// a start takes a core for tens of milliseconds, which the jobs of a burst (an
// instantiate's charts) and the work that follows them should have (a variable for tests).
var refillAfter = time.Second

// spares are the children started ahead, per kind of child.
type spares struct {
	mu      sync.Mutex
	idle    []*proc
	running int         // jobs of this kind under way
	refill  *time.Timer // the next refill, when one is due
	filling bool        // a refill is under way
}

// spareKind tells children apart: a spare is only ever given a request it was started for.
type spareKind struct {
	exe, job  string
	memory    int64
	maxAnswer int
}

var allSpares sync.Map // spareKind -> *spares

// take returns a spare child for job, or one started now, and done, to be called when
// the job has ended: the spares are refilled once no job of their kind runs.
func (s *Sandbox) take(job Job, maxAnswer int) (c *proc, done func(), err error) {
	if s.Spares <= 0 {
		c, err = s.start(job, maxAnswer)
		return c, func() {}, err
	}
	v, _ := allSpares.LoadOrStore(spareKind{s.Exe, job.Name, s.Memory, maxAnswer}, &spares{})
	p := v.(*spares)
	p.mu.Lock()
	for len(p.idle) > 0 && c == nil {
		c = p.idle[len(p.idle)-1]
		p.idle = p.idle[:len(p.idle)-1]
		if !c.expire.Stop() || !c.alive() {
			c.kill() // ending or ended
			c = nil
		}
	}
	p.running++
	p.mu.Unlock()
	done = func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.running--; p.running == 0 {
			if p.refill != nil {
				p.refill.Stop()
			}
			p.refill = time.AfterFunc(refillAfter, func() { p.fill(s, job, maxAnswer) })
		}
	}
	if c == nil {
		if c, err = s.start(job, maxAnswer); err != nil {
			done()
			return nil, nil, err
		}
	}
	return c, done, nil
}

// fill starts spares, one after the other, until there are Spares or a job of their
// kind runs.
func (p *spares) fill(s *Sandbox, job Job, maxAnswer int) {
	p.mu.Lock()
	if p.filling {
		p.mu.Unlock()
		return
	}
	p.filling = true
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		p.filling = false
		p.mu.Unlock()
	}()
	for {
		p.mu.Lock()
		if p.running > 0 || len(p.idle) >= s.Spares {
			p.mu.Unlock()
			return
		}
		p.mu.Unlock()
		c, err := s.start(job, maxAnswer)
		if err != nil {
			return // the request that needs one starts it, and says why it cannot
		}
		p.mu.Lock()
		c.expire = time.AfterFunc(spareIdle, func() {
			p.mu.Lock()
			p.idle = slices.DeleteFunc(p.idle, func(o *proc) bool { return o == c })
			p.mu.Unlock()
			c.kill()
		})
		p.idle = append(p.idle, c)
		p.mu.Unlock()
	}
}
