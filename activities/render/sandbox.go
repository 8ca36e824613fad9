package render

// The sandbox: a chart is user input, and Helm's template engine can be made to take any
// amount of memory (a string doubled in a loop) or CPU (ranges nested deep) before it
// returns, and cannot be stopped. In the worker every tenant shares, each rendering runs in
// a child process of the worker's own binary (internal/adapters/sandbox), its memory
// bounded and killed at the rendering's timeout, so a chart over either fails with the
// reason and the worker, and every activity on it, lives on.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/temco/temco/internal/adapters/profile"
	"github.com/temco/temco/internal/adapters/sandbox"
	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/capabilities"
)

// SandboxJob is a chart's rendering in the sandbox's child (internal/adapters/sandbox):
// the worker's binary passes it to sandbox.ChildMain.
var SandboxJob = sandbox.Job{Name: "render", Noun: "rendering", Work: sandbox.Serve(child)}

// DefaultSandboxMemory is the memory a rendering may take by default. The largest charts
// in use render in far less (kube-prometheus-stack: ~200 MiB in the child, the binary's
// own data included); the worker runs up to one rendering per core at once.
const DefaultSandboxMemory = 1 << 30

// maxSandboxOutput bounds what the parent reads of a child's answer: the objects, as JSON
// strings inside JSON, are within it whenever the child kept to maxObjectsBytes.
const maxSandboxOutput = 4 * maxObjectsBytes

// Sandbox renders charts in child processes.
type Sandbox struct {
	// Exe is the binary run as the child; it must call sandbox.ChildMain with SandboxJob
	// before anything else. "" is the running binary itself.
	Exe string
	// Memory bounds the child's data segment, in bytes (DefaultSandboxMemory when 0).
	Memory int64
	// Spares is how many children wait started for the next renderings (sandbox.Sandbox).
	Spares int
}

// minSpares is the worker's least number of spare children for renderings (one per core
// when more): an instantiate renders each app once, one per core at once, and a spare
// taken is replaced in about the time of a start, so the apps of a usual composite app
// each find one waiting. Each costs about 12 MiB of memory of its own while it waits.
const minSpares = 4

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
	memory := s.Memory
	if memory <= 0 {
		memory = DefaultSandboxMemory
	}
	req := sandboxRequest{App: in.app, Archive: in.archive, Profile: in.profile, Overrides: in.overrides,
		Release: in.release, Namespace: in.namespace, Labels: in.labels, Caps: in.caps}
	resp, err := sandbox.Call[sandboxResponse](ctx, &sandbox.Sandbox{Exe: s.Exe, Memory: memory, Spares: s.Spares}, SandboxJob, req, timeout, maxSandboxOutput)
	var oom *sandbox.OutOfMemory
	var crashed *sandbox.Crashed
	var fault *sandbox.Fault
	switch {
	case ctx.Err() != nil:
		return rendering{}, ctx.Err()
	case errors.As(err, new(*sandbox.TimedOut)):
		return rendering{}, fmt.Errorf("the chart did not render within %v, the most a chart may take", timeout)
	case errors.As(err, &oom):
		return rendering{}, fmt.Errorf("the chart needs more than %s of memory to render, the most a chart may take", sandbox.Size(oom.Memory))
	case errors.As(err, &crashed):
		return rendering{}, fmt.Errorf("rendering failed: %s", crashed.Message)
	case errors.As(err, &fault):
		return rendering{}, sandboxFault{fault.Unwrap()}
	case err != nil:
		return rendering{}, sandboxFault{err}
	case resp.Error != "":
		return rendering{}, errors.New(resp.Error)
	}
	return rendering{objects: resp.Objects, readsCapabilities: resp.ReadsCapabilities}, nil
}

// child renders one request in the sandbox's child.
func child(req sandboxRequest) sandboxResponse {
	out, err := helmTemplateSafe(context.Background(), chartInput{app: req.App, archive: req.Archive, profile: req.Profile,
		overrides: req.Overrides, release: req.Release, namespace: req.Namespace, labels: req.Labels, caps: req.Caps})
	if err != nil {
		return sandboxResponse{Error: err.Error()}
	}
	return sandboxResponse{Objects: out.objects, ReadsCapabilities: out.readsCapabilities}
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
