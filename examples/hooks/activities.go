package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
)

// Activities are the hooks' steps that touch the world: a cluster and the journal.
type Activities struct {
	// mu keeps this process's appends to a journal one at a time, so that an attempt and
	// its retry cannot both find their line missing.
	mu sync.Mutex
}

// Entry is one journal line to write: "<Hook> <What> run=<runID>", or nothing when
// Journal is empty.
type Entry struct {
	Journal, Hook, What string
}

// Step writes the entry to the journal once per workflow run.
func (a *Activities) Step(ctx context.Context, e Entry) error {
	return a.journal(ctx, e)
}

// CheckObject reads the object and fails with ExpectationFailed unless it is as expected.
func (a *Activities) CheckObject(ctx context.Context, c CheckSpec) (string, error) {
	o, err := observe(ctx, c)
	if err != nil {
		return "", err
	}
	if found := mismatch(c, o); found != "" {
		msg := fmt.Sprintf("%s: expected %s, found %s", c, expectation(c), found)
		return "", temporal.NewNonRetryableApplicationError(msg, ExpectationFailed, nil)
	}
	if err := a.journal(ctx, c.Entry); err != nil {
		return "", err
	}
	return fmt.Sprintf("%s is %s", c, expectation(c)), nil
}

// Observed is what a check found of its object.
type Observed struct {
	Present                                  bool
	Generation, ObservedGeneration           int64
	Replicas, ReadyReplicas, UpdatedReplicas int32
}

func observe(ctx context.Context, c CheckSpec) (Observed, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	if err != nil {
		return Observed{}, fmt.Errorf("kubeconfig %s: %w", c.Kubeconfig, err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return Observed{}, fmt.Errorf("kubeconfig %s: %w", c.Kubeconfig, err)
	}
	var o Observed
	if c.Kind == "ConfigMap" {
		_, err = cs.CoreV1().ConfigMaps(c.Namespace).Get(ctx, c.Name, metav1.GetOptions{})
	} else {
		d, gerr := cs.AppsV1().Deployments(c.Namespace).Get(ctx, c.Name, metav1.GetOptions{})
		if err = gerr; err == nil {
			o.Generation, o.ObservedGeneration = d.Generation, d.Status.ObservedGeneration
			o.Replicas, o.ReadyReplicas, o.UpdatedReplicas = 1, d.Status.ReadyReplicas, d.Status.UpdatedReplicas
			if d.Spec.Replicas != nil {
				o.Replicas = *d.Spec.Replicas
			}
		}
	}
	switch {
	case apierrors.IsNotFound(err):
		return Observed{}, nil
	case err != nil:
		return Observed{}, fmt.Errorf("read %s: %w", c, err)
	}
	o.Present = true
	return o, nil
}

func expectation(c CheckSpec) string {
	if c.Replicas != nil {
		return fmt.Sprintf("%s with %d replicas", c.Expect, *c.Replicas)
	}
	return c.Expect
}

// mismatch says what was found when it is not what c expects, and "" when it is.
func mismatch(c CheckSpec, o Observed) string {
	switch {
	case c.Expect == "absent" && o.Present:
		return "present"
	case c.Expect == "absent":
		return ""
	case !o.Present:
		return "absent"
	case c.Replicas != nil && o.Replicas != *c.Replicas:
		return fmt.Sprintf("%d replicas", o.Replicas)
	case c.Expect != "ready" || c.Kind != "Deployment":
		return ""
	case o.ObservedGeneration < o.Generation:
		return fmt.Sprintf("generation %d not yet observed (observed %d)", o.Generation, o.ObservedGeneration)
	case o.ReadyReplicas != o.Replicas || o.UpdatedReplicas != o.Replicas:
		return fmt.Sprintf("%d/%d ready, %d/%d updated", o.ReadyReplicas, o.Replicas, o.UpdatedReplicas, o.Replicas)
	}
	return ""
}

// journal appends e's line for this activity's workflow run unless the journal has it.
func (a *Activities) journal(ctx context.Context, e Entry) error {
	if e.Journal == "" {
		return nil
	}
	return a.appendOnce(e.Journal, fmt.Sprintf("%s %s run=%s", e.Hook, e.What, activity.GetInfo(ctx).WorkflowExecution.RunID))
}

// appendOnce appends line to the file at path, and syncs it, unless the file has it.
func (a *Activities) appendOnce(path, line string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	defer f.Close()
	have, err := io.ReadAll(f)
	if err != nil {
		return fmt.Errorf("journal %s: %w", path, err)
	}
	if bytes.HasPrefix(have, []byte(line+"\n")) || bytes.Contains(have, []byte("\n"+line+"\n")) {
		return nil
	}
	out := line + "\n"
	if len(have) > 0 && have[len(have)-1] != '\n' {
		out = "\n" + out // a torn last line stays apart from ours
	}
	if _, err := f.WriteString(out); err != nil {
		return fmt.Errorf("journal %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("journal %s: %w", path, err)
	}
	return nil
}
