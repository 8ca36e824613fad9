package policyengine

// The sandbox: a tenant's Rego is code, and one builtin call can allocate gigabytes before
// OPA looks at its context again (replace() or sprintf() growing a string sixteenfold or
// twofold a step: 3 GiB within 4 s, measured), while a Go program out of memory dies
// whole. In the worker every tenant shares, each evaluation runs in a child process of the
// worker's binary (internal/adapters/sandbox), its memory bounded and killed at the
// evaluation's timeout: a policy over either fails with the reason, the worker lives on.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/temco/temco/internal/adapters/sandbox"
)

// SandboxJob is a policy's evaluation in the sandbox's child: the worker's binary passes
// it to sandbox.ChildMain.
var SandboxJob = sandbox.Job{Name: "policy", Noun: "evaluation", Work: sandbox.Serve(evaluateInChild)}

// MaxAnswerBytes bounds a policy's answer, as an external engine's is bounded.
const MaxAnswerBytes = 1 << 20

// Sandbox evaluates policies in child processes, as many at once as there are cores.
type Sandbox struct {
	// Exe is the binary run as the child; it must call sandbox.ChildMain with SandboxJob
	// before anything else. "" is the running binary itself.
	Exe string
	// Memory bounds the child's data segment, in bytes.
	Memory int64
	// Spares is how many children wait started for the next evaluations (sandbox.Sandbox).
	Spares int

	once  sync.Once
	slots chan struct{}
}

// evaluation is Evaluate's arguments on the wire.
type evaluation struct {
	Modules map[string]string `json:"modules"`
	Path    string            `json:"path"`
	Input   json.RawMessage   `json:"input,omitempty"`
}

// evaluated is Evaluate's result, or why there is none, on the wire.
type evaluated struct {
	Answer json.RawMessage `json:"answer,omitempty"`
	Error  string          `json:"error,omitempty"`
}

// Evaluate is Evaluate in a child process, killed after timeout. A policy that takes more
// than the sandbox's memory or time fails with the reason; the sandbox failing to run
// fails with a *sandbox.Fault (not the policy's fault: worth trying again).
func (s *Sandbox) Evaluate(ctx context.Context, modules map[string]string, path string, input json.RawMessage, timeout time.Duration) (json.RawMessage, error) {
	s.once.Do(func() { s.slots = make(chan struct{}, runtime.GOMAXPROCS(0)) })
	select {
	case s.slots <- struct{}{}:
		defer func() { <-s.slots }()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	req := evaluation{Modules: modules, Path: path, Input: input}
	out, err := sandbox.Call[evaluated](ctx, &sandbox.Sandbox{Exe: s.Exe, Memory: s.Memory, Spares: s.Spares}, SandboxJob, req, timeout, 2*MaxAnswerBytes)
	var oom *sandbox.OutOfMemory
	var crashed *sandbox.Crashed
	switch {
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case errors.As(err, new(*sandbox.TimedOut)):
		return nil, fmt.Errorf("the policy did not answer within %v, the most a policy may take", timeout)
	case errors.As(err, &oom):
		return nil, fmt.Errorf("the policy needs more than %s of memory to evaluate, the most a policy may take", sandbox.Size(oom.Memory))
	case errors.As(err, &crashed):
		return nil, fmt.Errorf("policyengine: evaluation failed: %s", crashed.Message)
	case err != nil:
		return nil, err
	case out.Error != "":
		return nil, errors.New(out.Error)
	}
	return out.Answer, nil
}

// evaluateInChild evaluates one request in the sandbox's child: the parent kills it at
// the timeout, so it runs without one.
func evaluateInChild(req evaluation) evaluated {
	answer, err := Evaluate(context.Background(), req.Modules, req.Path, req.Input)
	switch {
	case err != nil:
		return evaluated{Error: err.Error()}
	case len(answer) > MaxAnswerBytes:
		return evaluated{Error: fmt.Sprintf("policyengine: the policy answered %d bytes, more than the %s a policy may answer", len(answer), sandbox.Size(MaxAnswerBytes))}
	}
	return evaluated{Answer: answer}
}
