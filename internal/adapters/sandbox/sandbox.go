// Package sandbox runs a tenant's code (a chart's templates, a policy's Rego) in a child
// process of the worker's own binary: its data segment bounded (RLIMIT_DATA: what the Go
// heap takes), killed at a timeout, with none of the worker's environment. Go cannot stop
// a goroutine that allocates or loops, and a Go program that runs out of memory dies
// whole: in the child, a tenant's code that takes too much fails alone, with the reason,
// and the worker, shared by every tenant, lives on.
//
// A Job names the work both sides agree on: the parent runs it (Run), the child finds it
// among those ChildMain was given and does it, reading its request from stdin and writing
// its answer to stdout.
package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The child's environment: the job it is to do and its memory bound in bytes.
const (
	jobEnv    = "TEMCO_SANDBOX_JOB"
	memoryEnv = "TEMCO_SANDBOX_MEMORY"
)

// Job is work done in a child process.
type Job struct {
	// Name picks the work in the child.
	Name string
	// Noun names it in messages ("rendering": "run the rendering: ...").
	Noun string
	// Work reads one request from in and writes the answer to out; an error is the
	// child's failing (exit code 2, the error on stderr), not the request's.
	Work func(in io.Reader, out io.Writer) error
}

// Sandbox runs jobs in child processes.
type Sandbox struct {
	// Exe is the binary run as the child; it must call ChildMain before anything else.
	// "" is the running binary itself (/proc/self/exe: still the right one if the file was
	// replaced by an upgrade since).
	Exe string
	// Memory bounds the child's data segment, in bytes.
	Memory int64
	// Spares is how many children wait started for a job's next requests, each ended
	// after spareIdle unused, started again a second after the last job of their kind
	// ended. A process start (30-50 ms of a large binary's initialisation) is then off
	// the request's path. 0 starts each child when it is needed.
	Spares int
}

// TimedOut is a job that ran past its timeout: its process was killed.
type TimedOut struct{ After time.Duration }

func (e *TimedOut) Error() string { return fmt.Sprintf("did not end within %v", e.After) }

// OutOfMemory is a job that needed more than the sandbox's memory.
type OutOfMemory struct{ Memory int64 }

func (e *OutOfMemory) Error() string {
	return fmt.Sprintf("needs more than %s of memory", Size(e.Memory))
}

// Crashed is a job whose process died of a Go runtime's fatal error or a panic; Message
// is its first line.
type Crashed struct{ Message string }

func (e *Crashed) Error() string { return e.Message }

// Fault is the sandbox failing, not the job's request: worth trying again, never blamed
// on the tenant.
type Fault struct{ error }

func (f *Fault) Unwrap() error { return f.error }

// Run does job in a child process with request on its stdin, returning what it wrote
// (at most maxAnswer bytes). It fails with TimedOut, OutOfMemory, Crashed or Fault, or
// ctx's error when ctx ends first. The child is a spare started before (Spares) when
// there is one: each request still gets a process of its own.
func (s *Sandbox) Run(ctx context.Context, job Job, request []byte, timeout time.Duration, maxAnswer int) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c, done, err := s.take(job, maxAnswer)
	if err != nil {
		return nil, &Fault{fmt.Errorf("run the %s: %w", job.Noun, err)}
	}
	defer done()
	var timedOut atomic.Bool
	timer := time.AfterFunc(timeout, func() { timedOut.Store(true); c.kill() })
	stop := context.AfterFunc(ctx, c.kill)
	// A child that died before reading it all fails the write; its end says why.
	_, werr := c.stdin.Write(request)
	c.stdin.Close()
	<-c.done
	timer.Stop()
	stop()
	switch {
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case timedOut.Load():
		return nil, &TimedOut{After: timeout}
	case c.out.over:
		return nil, &Fault{fmt.Errorf("the %s's answer is larger than %s", job.Noun, Size(int64(maxAnswer)))}
	case c.err != nil:
		return nil, childFailure(job, c.err, c.stderr.buf.String(), s.Memory)
	case werr != nil:
		return nil, &Fault{fmt.Errorf("send the %s its request: %w", job.Noun, werr)}
	}
	return c.out.buf.Bytes(), nil
}

// Call is Run with request and answer in JSON: an answer that does not decode is a Fault.
func Call[Answer any](ctx context.Context, s *Sandbox, job Job, request any, timeout time.Duration, maxAnswer int) (Answer, error) {
	var answer Answer
	req, err := json.Marshal(request)
	if err != nil {
		return answer, err
	}
	out, err := s.Run(ctx, job, req, timeout, maxAnswer)
	if err != nil {
		return answer, err
	}
	if err := json.Unmarshal(out, &answer); err != nil {
		return answer, &Fault{fmt.Errorf("the %s's answer: %w", job.Noun, err)}
	}
	return answer, nil
}

// Serve is a Job's Work that answers do's answer to each request, both in JSON.
func Serve[Request, Answer any](do func(Request) Answer) func(io.Reader, io.Writer) error {
	return func(in io.Reader, out io.Writer) error {
		var req Request
		if err := json.NewDecoder(in).Decode(&req); err != nil {
			return fmt.Errorf("request: %w", err)
		}
		if err := json.NewEncoder(out).Encode(do(req)); err != nil {
			return fmt.Errorf("answer: %w", err)
		}
		return nil
	}
}

// childFailure is why a child ended without an answer: its need of memory, a crash, or
// the sandbox failing to run. Out of memory, Go's runtime says so, or crashes in its own
// code (a SIGSEGV in the garbage collector, seen under RLIMIT_DATA) or is killed by the
// kernel: a child that died near its bound (3/4 of it resident) is taken to be out of it.
func childFailure(job Job, err error, stderr string, memory int64) error {
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		return &Fault{fmt.Errorf("run the %s: %w", job.Noun, err)}
	}
	if strings.Contains(stderr, "out of memory") || strings.Contains(stderr, "cannot allocate memory") {
		return &OutOfMemory{Memory: memory}
	}
	if line := firstFatal(stderr); line != "" {
		return &Crashed{Message: line}
	}
	if ru, ok := exit.SysUsage().(*syscall.Rusage); ok && ru.Maxrss<<10 >= memory*3/4 {
		return &OutOfMemory{Memory: memory}
	}
	return &Fault{fmt.Errorf("the %s ended without an answer: %v", job.Noun, err)}
}

// firstFatal is the message of a Go runtime's fatal error or an unrecovered panic.
func firstFatal(stderr string) string {
	for line := range strings.Lines(stderr) {
		if strings.HasPrefix(line, "fatal error: ") || strings.HasPrefix(line, "panic: ") {
			return strings.TrimSpace(line)
		}
	}
	return ""
}

// capped is a buffer that keeps at most max bytes: over it, writes fail (the child's
// answer is broken) or, with drop, are dropped (a crash's stack trace). It has no
// ReadFrom (a bytes.Buffer embedded would: exec would copy into it past the bound).
type capped struct {
	buf  bytes.Buffer
	max  int
	drop bool
	over bool
}

func (c *capped) Write(p []byte) (int, error) {
	if c.buf.Len()+len(p) > c.max {
		c.over = true
		if c.drop {
			c.buf.Write(p[:max(0, c.max-c.buf.Len())])
			return len(p), nil
		}
		return 0, errors.New("too much output")
	}
	return c.buf.Write(p)
}

// ChildMain does the job this process was started for and exits, when it is a sandbox's
// child (its environment says so); otherwise it returns at once. Binaries that run jobs in
// a sandbox call it first thing in main (tests, in TestMain) with every job they run.
func ChildMain(jobs ...Job) {
	name, ok := os.LookupEnv(jobEnv)
	if !ok {
		return
	}
	os.Exit(child(name, os.Getenv(memoryEnv), jobs, os.Stdin, os.Stdout))
}

// child bounds this process and does the job named; it returns the exit code.
func child(name, memory string, jobs []Job, r io.Reader, w io.Writer) int {
	limit, err := strconv.ParseInt(memory, 10, 64)
	if err != nil {
		fmt.Fprintln(os.Stderr, "sandbox: memory limit:", err)
		return 2
	}
	// Set here, before the request is read: everything the request makes this process do
	// is within them. No core dump of a child that dies.
	for res, v := range map[int]uint64{unix.RLIMIT_DATA: uint64(limit), unix.RLIMIT_CORE: 0} {
		if err := unix.Setrlimit(res, &unix.Rlimit{Cur: v, Max: v}); err != nil {
			fmt.Fprintln(os.Stderr, "sandbox: setrlimit:", err)
			return 2
		}
	}
	for _, job := range jobs {
		if job.Name != name {
			continue
		}
		if err := job.Work(r, w); err != nil {
			fmt.Fprintf(os.Stderr, "sandbox: %s: %v\n", name, err)
			return 2
		}
		return 0
	}
	fmt.Fprintf(os.Stderr, "sandbox: this binary does no job %q\n", name)
	return 2
}

// Size says n bytes in MiB when it is a whole number of them.
func Size(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return strconv.FormatInt(n>>20, 10) + " MiB"
	}
	return strconv.FormatInt(n, 10) + " bytes"
}
