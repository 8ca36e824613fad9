package render

// The sandbox: a chart is user input, and Helm's template engine can be made to take any
// amount of memory (a string doubled in a loop) or CPU (ranges nested deep) before it
// returns, and cannot be stopped. In the worker every tenant shares, each rendering runs in
// a child process of the worker's own binary, its data segment bounded (RLIMIT_DATA: what
// the Go heap takes) and killed at the rendering's timeout, so a chart over either fails
// with the reason and the worker, and every activity on it, lives on.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/temco/temco/internal/adapters/profile"
	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/capabilities"
)

// childEnv marks a sandboxed rendering; its value is the child's memory limit in bytes.
const childEnv = "TEMCO_RENDER_SANDBOX"

// DefaultSandboxMemory is the memory a rendering may take by default. The largest charts
// in use render in far less (kube-prometheus-stack: ~200 MiB in the child, the binary's
// own data included); the worker runs up to one rendering per core at once.
const DefaultSandboxMemory = 1 << 30

// maxSandboxOutput bounds what the parent reads of a child's answer: the objects, as JSON
// strings inside JSON, are within it whenever the child kept to maxObjectsBytes.
const maxSandboxOutput = 4 * maxObjectsBytes

// Sandbox renders charts in child processes.
type Sandbox struct {
	// Exe is the binary run as the child; it must call ChildMain before anything else.
	// "" is the running binary itself (/proc/self/exe: still the right one if the file was
	// replaced by an upgrade since).
	Exe string
	// Memory bounds the child's data segment, in bytes (DefaultSandboxMemory when 0).
	Memory int64
}

// sandboxRequest is chartInput on the wire.
type sandboxRequest struct {
	App       string                     `json:"app"`
	Archive   []byte                     `json:"archive"`
	Profile   *profile.Profile           `json:"profile,omitempty"`
	Overrides map[string]string          `json:"overrides,omitempty"`
	Release   string                     `json:"release"`
	Namespace string                     `json:"namespace"`
	Labels    map[string]string          `json:"labels,omitempty"`
	Caps      *capabilities.Capabilities `json:"caps,omitempty"`
}

// sandboxResponse is a rendering, or why there is none, on the wire.
type sandboxResponse struct {
	Objects           []appctx.Object `json:"objects"`
	ReadsCapabilities bool            `json:"readsCapabilities"`
	Error             string          `json:"error,omitempty"`
}

// sandboxFault is the sandbox failing, not the chart: retried, never blamed on the user.
type sandboxFault struct{ error }

func (f sandboxFault) Unwrap() error { return f.error }

// render renders in a child process, failing when it takes longer than timeout.
func (s *Sandbox) render(ctx context.Context, in chartInput, timeout time.Duration) (rendering, error) {
	if err := ctx.Err(); err != nil {
		return rendering{}, err
	}
	req, err := json.Marshal(sandboxRequest{App: in.app, Archive: in.archive, Profile: in.profile, Overrides: in.overrides,
		Release: in.release, Namespace: in.namespace, Labels: in.labels, Caps: in.caps})
	if err != nil {
		return rendering{}, err
	}
	memory := s.Memory
	if memory <= 0 {
		memory = DefaultSandboxMemory
	}
	exe := s.Exe
	if exe == "" {
		exe = "/proc/self/exe"
	}
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(rctx, exe)
	// Nothing of the worker's environment (its keys' paths, its settings) reaches a chart.
	cmd.Env = []string{childEnv + "=" + strconv.FormatInt(memory, 10), "GOMEMLIMIT=" + strconv.FormatInt(memory*3/4, 10)}
	cmd.Stdin = bytes.NewReader(req)
	out := &capped{max: maxSandboxOutput}
	stderr := &capped{max: 64 << 10, drop: true}
	cmd.Stdout, cmd.Stderr = out, stderr
	// The child dies with the thread that started it: that thread is kept until the child
	// ends (Go may retire a thread otherwise, killing the child early).
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cmd.WaitDelay = 5 * time.Second
	runtime.LockOSThread()
	err = cmd.Run()
	runtime.UnlockOSThread()
	switch {
	case ctx.Err() != nil:
		return rendering{}, ctx.Err()
	case rctx.Err() != nil:
		return rendering{}, fmt.Errorf("the chart did not render within %v, the most a chart may take", timeout)
	case out.over:
		return rendering{}, sandboxFault{fmt.Errorf("the rendering's answer is larger than %s", size(maxSandboxOutput))}
	case err != nil:
		return rendering{}, childFailure(err, stderr.String(), memory)
	}
	var resp sandboxResponse
	if err := json.Unmarshal(out.Bytes(), &resp); err != nil {
		return rendering{}, sandboxFault{fmt.Errorf("the rendering's answer: %w", err)}
	}
	if resp.Error != "" {
		return rendering{}, errors.New(resp.Error)
	}
	return rendering{objects: resp.Objects, readsCapabilities: resp.ReadsCapabilities}, nil
}

// childFailure is why a child ended without an answer: the chart's need of memory, a
// crash of the rendering, or the sandbox failing to run.
func childFailure(err error, stderr string, memory int64) error {
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		return sandboxFault{fmt.Errorf("run the rendering: %w", err)}
	}
	if strings.Contains(stderr, "out of memory") || strings.Contains(stderr, "cannot allocate memory") {
		return fmt.Errorf("the chart needs more than %s of memory to render, the most a chart may take", size(int(memory)))
	}
	if line := firstFatal(stderr); line != "" {
		return fmt.Errorf("rendering failed: %s", line)
	}
	return sandboxFault{fmt.Errorf("the rendering ended without an answer: %v", err)}
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
// answer is broken) or, with drop, are dropped (a crash's stack trace).
type capped struct {
	bytes.Buffer
	max  int
	drop bool
	over bool
}

func (c *capped) Write(p []byte) (int, error) {
	if c.Len()+len(p) > c.max {
		c.over = true
		if c.drop {
			c.Buffer.Write(p[:max(0, c.max-c.Len())])
			return len(p), nil
		}
		return 0, errors.New("too much output")
	}
	return c.Buffer.Write(p)
}

// ChildMain runs a sandboxed rendering and exits when this process is one (its
// environment says so); otherwise it returns at once. Binaries that render in a sandbox
// call it first thing in main (tests, in TestMain).
func ChildMain() {
	v, ok := os.LookupEnv(childEnv)
	if !ok {
		return
	}
	os.Exit(child(v, os.Stdin, os.Stdout))
}

// child reads one request, renders it and writes the answer; it returns the exit code.
func child(memory string, r io.Reader, w io.Writer) int {
	limit, err := strconv.ParseInt(memory, 10, 64)
	if err != nil {
		fmt.Fprintln(os.Stderr, "render sandbox: memory limit:", err)
		return 2
	}
	// Set here, before the chart is read: everything the chart makes this process do is
	// within them. No core dump of a child that dies.
	for res, v := range map[int]uint64{unix.RLIMIT_DATA: uint64(limit), unix.RLIMIT_CORE: 0} {
		if err := unix.Setrlimit(res, &unix.Rlimit{Cur: v, Max: v}); err != nil {
			fmt.Fprintln(os.Stderr, "render sandbox: setrlimit:", err)
			return 2
		}
	}
	var req sandboxRequest
	if err := json.NewDecoder(r).Decode(&req); err != nil {
		fmt.Fprintln(os.Stderr, "render sandbox: request:", err)
		return 2
	}
	out, err := helmTemplateSafe(context.Background(), chartInput{app: req.App, archive: req.Archive, profile: req.Profile,
		overrides: req.Overrides, release: req.Release, namespace: req.Namespace, labels: req.Labels, caps: req.Caps})
	resp := sandboxResponse{Objects: out.objects, ReadsCapabilities: out.readsCapabilities}
	if err != nil {
		resp = sandboxResponse{Error: err.Error()}
	}
	if err := json.NewEncoder(w).Encode(resp); err != nil {
		fmt.Fprintln(os.Stderr, "render sandbox: answer:", err)
		return 2
	}
	return 0
}

// helmTemplateSafe is helmTemplate with a panic of the chart's rendering as its error.
func helmTemplateSafe(ctx context.Context, in chartInput) (out rendering, err error) {
	defer func() {
		if p := recover(); p != nil {
			out, err = rendering{}, fmt.Errorf("rendering failed: %v", p)
		}
	}()
	return helmTemplate(ctx, in)
}
