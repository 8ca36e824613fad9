package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// Error types a hook fails with; none of them is worth a retry.
const (
	ExpectationFailed = "ExpectationFailed" // the object is not as the check expects
	HookRefused       = "HookRefused"       // Fail, by design
	BadParams         = "BadParams"         // the hook's parameters cannot be used
)

// ContinueSignal lets a Steps hook go on to its second step.
const ContinueSignal = "continue"

// Params is a hook's one argument, EMCO's workflowParams. Only StartToCloseTimeout of an
// activity's options is honoured; the rest are decoded and left alone.
type Params struct {
	ActivityOptions map[string]json.RawMessage   `json:"activityOptions"`
	ActivityParams  map[string]map[string]string `json:"activityParams"`
}

func (p Params) hook() string {
	if h := p.ActivityParams["emco"]["hook"]; h != "" {
		return h
	}
	return "-"
}

func (p Params) entry(what string) Entry {
	return Entry{Journal: p.ActivityParams["journal"]["path"], Hook: p.hook(), What: what}
}

// activityContext gives the activity its options: 30 s to run unless activityOptions
// says otherwise, and at most 3 attempts.
func (p Params) activityContext(ctx workflow.Context, activity string, nonRetryable ...string) (workflow.Context, error) {
	o := workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 3, NonRetryableErrorTypes: nonRetryable},
	}
	if raw, ok := p.ActivityOptions[activity]; ok {
		var given struct{ StartToCloseTimeout time.Duration }
		if err := json.Unmarshal(raw, &given); err != nil {
			return nil, badParams(fmt.Errorf("activityOptions[%q]: %w", activity, err))
		}
		if given.StartToCloseTimeout > 0 {
			o.StartToCloseTimeout = given.StartToCloseTimeout
		}
	}
	return workflow.WithActivityOptions(ctx, o), nil
}

// Check reads one object live and fails with ExpectationFailed unless it is as expected.
func Check(ctx workflow.Context, p Params) (string, error) {
	spec, err := parseCheck(p.ActivityParams["check"])
	if err != nil {
		return "", badParams(err)
	}
	spec.Entry = p.entry("check " + spec.Expect + " ok")
	actx, err := p.activityContext(ctx, "CheckObject", ExpectationFailed)
	if err != nil {
		return "", err
	}
	var a *Activities
	var found string
	err = workflow.ExecuteActivity(actx, a.CheckObject, spec).Get(ctx, &found)
	return found, cause(err)
}

// Fail journals that it ran, then refuses.
func Fail(ctx workflow.Context, p Params) (string, error) {
	if err := step(ctx, p, "fail"); err != nil {
		return "", err
	}
	msg := p.ActivityParams["fail"]["message"]
	if msg == "" {
		msg = "the hook refused"
	}
	return "", temporal.NewNonRetryableApplicationError(msg, HookRefused, nil)
}

// Steps journals step1, waits for the continue signal, then journals step2.
func Steps(ctx workflow.Context, p Params) (string, error) {
	if err := step(ctx, p, "step1"); err != nil {
		return "", err
	}
	workflow.GetSignalChannel(ctx, ContinueSignal).Receive(ctx, nil)
	if err := step(ctx, p, "step2"); err != nil {
		return "", err
	}
	return "done", nil
}

func step(ctx workflow.Context, p Params, what string) error {
	actx, err := p.activityContext(ctx, "Step")
	if err != nil {
		return err
	}
	var a *Activities
	return cause(workflow.ExecuteActivity(actx, a.Step, p.entry(what)).Get(ctx, nil))
}

// cause returns an activity's application error itself, so that the hook fails with its
// message and type rather than with the activity's wrapping.
func cause(err error) error {
	var app *temporal.ApplicationError
	if errors.As(err, &app) {
		return app
	}
	return err
}

func badParams(err error) error {
	return temporal.NewNonRetryableApplicationError(err.Error(), BadParams, nil)
}

// CheckSpec is what CheckObject reads and expects, and where it journals success.
type CheckSpec struct {
	Kubeconfig, Namespace, Kind, Name string
	Expect                            string // absent, present or ready
	Replicas                          *int32 // spec.replicas must equal it when set
	Entry                             Entry
}

func (c CheckSpec) String() string {
	return fmt.Sprintf("%s %s/%s", strings.ToLower(c.Kind), c.Namespace, c.Name)
}

// parseCheck reads activityParams["check"].
func parseCheck(m map[string]string) (CheckSpec, error) {
	c := CheckSpec{Kubeconfig: m["kubeconfig"], Namespace: m["namespace"], Kind: m["kind"], Name: m["name"], Expect: m["expect"]}
	if c.Namespace == "" {
		c.Namespace = "default"
	}
	switch {
	case c.Kind == "" || strings.EqualFold(c.Kind, "Deployment"):
		c.Kind = "Deployment"
	case strings.EqualFold(c.Kind, "ConfigMap"):
		c.Kind = "ConfigMap"
	default:
		return c, fmt.Errorf("check: kind %q: only Deployment and ConfigMap", c.Kind)
	}
	if c.Kubeconfig == "" || c.Name == "" {
		return c, errors.New("check: kubeconfig and name are required")
	}
	if c.Expect != "absent" && c.Expect != "present" && c.Expect != "ready" {
		return c, fmt.Errorf("check: expect %q: absent, present or ready", c.Expect)
	}
	if s, ok := m["replicas"]; ok {
		n, err := strconv.ParseInt(s, 10, 32)
		if err != nil || n < 0 || c.Kind != "Deployment" || c.Expect == "absent" {
			return c, fmt.Errorf("check: replicas %q: a count, for a Deployment expected present or ready", s)
		}
		r := int32(n)
		c.Replicas = &r
	}
	return c, nil
}
