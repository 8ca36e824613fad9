// Package workflowmgr is EMCO's workflowmgr in temco: temporal-workflow-intents under a
// DIG, each naming a user's Temporal workflow, and routes to start it, read its status and
// cancel or terminate it. It is a service of its own, not an intent controller: creating
// an intent does not touch the DIG's lifecycle.
package workflowmgr

import (
	"fmt"
	"time"
)

// Spec is a workflow intent's spec, with EMCO's keys. Bodies are decoded
// case-insensitively (encoding/json), so EMCO's examples' "id" and "taskqueue" match.
type Spec struct {
	// WorkflowClient is EMCO's HTTP workflow client; when it names an endpoint, start asks
	// it to start the workflow, as EMCO does. Without one temco starts it on its Temporal.
	WorkflowClient *ClientSpec   `json:"workflowClient"`
	Temporal       *TemporalSpec `json:"temporal"`
}

// ClientSpec names an EMCO workflow client: POST http://<name>:<port>/invoke/<workflowClientName>.
type ClientSpec struct {
	EndpointName string `json:"clientEndpointName,omitempty"`
	EndpointPort int    `json:"clientEndpointPort,omitempty"`
}

// TemporalSpec is what EMCO sends a workflow client: the workflow's start options and
// its parameters. temco starts the workflow type WorkflowClientName (the task queue when
// empty, as EMCO's sample client does) with Params as its one argument.
type TemporalSpec struct {
	WorkflowClientName string         `json:"workflowClientName,omitempty"`
	StartOptions       StartOptions   `json:"workflowStartOptions"`
	Params             WorkflowParams `json:"workflowParams"`
}

// StartOptions are the keys of Temporal's client.StartWorkflowOptions, which EMCO embeds
// untagged: Go field names, durations in integer nanoseconds.
type StartOptions struct {
	ID                                       string         `json:"ID,omitempty"`
	TaskQueue                                string         `json:"TaskQueue"`
	WorkflowExecutionTimeout                 time.Duration  `json:"WorkflowExecutionTimeout,omitempty"`
	WorkflowRunTimeout                       time.Duration  `json:"WorkflowRunTimeout,omitempty"`
	WorkflowTaskTimeout                      time.Duration  `json:"WorkflowTaskTimeout,omitempty"`
	WorkflowIDReusePolicy                    int32          `json:"WorkflowIDReusePolicy,omitempty"`
	WorkflowExecutionErrorWhenAlreadyStarted bool           `json:"WorkflowExecutionErrorWhenAlreadyStarted,omitempty"`
	RetryPolicy                              *RetryPolicy   `json:"RetryPolicy,omitempty"`
	CronSchedule                             string         `json:"CronSchedule,omitempty"`
	Memo                                     map[string]any `json:"Memo,omitempty"`
}

// RetryPolicy is Temporal's temporal.RetryPolicy, untagged as EMCO has it.
type RetryPolicy struct {
	InitialInterval        time.Duration `json:"InitialInterval"`
	BackoffCoefficient     float64       `json:"BackoffCoefficient"`
	MaximumInterval        time.Duration `json:"MaximumInterval"`
	MaximumAttempts        int32         `json:"MaximumAttempts"`
	NonRetryableErrorTypes []string      `json:"NonRetryableErrorTypes"`
}

// WorkflowParams is the workflow's argument: activity options by activity name
// (workflow.ActivityOptions' keys) and string parameters by activity name.
type WorkflowParams struct {
	ActivityOptions map[string]ActivityOptions   `json:"activityOptions,omitempty"`
	ActivityParams  map[string]map[string]string `json:"activityParams,omitempty"`
}

// ActivityOptions are the keys of Temporal's workflow.ActivityOptions in EMCO's schema.
type ActivityOptions struct {
	TaskQueue              string        `json:"TaskQueue"`
	ScheduleToCloseTimeout time.Duration `json:"ScheduleToCloseTimeout"`
	ScheduleToStartTimeout time.Duration `json:"ScheduleToStartTimeout"`
	StartToCloseTimeout    time.Duration `json:"StartToCloseTimeout"`
	HeartbeatTimeout       time.Duration `json:"HeartbeatTimeout"`
	WaitForCancellation    bool          `json:"WaitForCancellation"`
	ActivityID             string        `json:"ActivityID"`
	RetryPolicy            *RetryPolicy  `json:"RetryPolicy"`
}

// Validate checks a spec as EMCO's schema means it: workflowClient and temporal present,
// a task queue, no negative duration, a usable retry policy.
func (s *Spec) Validate() error {
	if s.WorkflowClient == nil {
		return fmt.Errorf("spec.workflowClient is required")
	}
	if s.Temporal == nil {
		return fmt.Errorf("spec.temporal is required")
	}
	if c := s.WorkflowClient; c.EndpointPort < 0 || c.EndpointPort > 65535 {
		return fmt.Errorf("spec.workflowClient.clientEndpointPort %d is not a port", c.EndpointPort)
	}
	o := s.Temporal.StartOptions
	const opts = "spec.temporal.workflowStartOptions"
	if o.TaskQueue == "" {
		return fmt.Errorf("%s.TaskQueue is required", opts)
	}
	for name, d := range map[string]time.Duration{"WorkflowExecutionTimeout": o.WorkflowExecutionTimeout,
		"WorkflowRunTimeout": o.WorkflowRunTimeout, "WorkflowTaskTimeout": o.WorkflowTaskTimeout} {
		if d < 0 {
			return fmt.Errorf("%s.%s must not be negative (integer nanoseconds), got %d", opts, name, d)
		}
	}
	if o.WorkflowIDReusePolicy < 0 || o.WorkflowIDReusePolicy > 4 {
		return fmt.Errorf("%s.WorkflowIDReusePolicy must be 0 to 4 (Temporal's WorkflowIdReusePolicy), got %d", opts, o.WorkflowIDReusePolicy)
	}
	if err := o.RetryPolicy.validate(opts + ".RetryPolicy"); err != nil {
		return err
	}
	for name, a := range s.Temporal.Params.ActivityOptions {
		at := fmt.Sprintf("spec.temporal.workflowParams.activityOptions[%q]", name)
		for field, d := range map[string]time.Duration{"ScheduleToCloseTimeout": a.ScheduleToCloseTimeout,
			"ScheduleToStartTimeout": a.ScheduleToStartTimeout, "StartToCloseTimeout": a.StartToCloseTimeout,
			"HeartbeatTimeout": a.HeartbeatTimeout} {
			if d < 0 {
				return fmt.Errorf("%s.%s must not be negative (integer nanoseconds), got %d", at, field, d)
			}
		}
		if err := a.RetryPolicy.validate(at + ".RetryPolicy"); err != nil {
			return err
		}
	}
	return nil
}

func (p *RetryPolicy) validate(at string) error {
	switch {
	case p == nil:
		return nil
	case p.InitialInterval < 0 || p.MaximumInterval < 0:
		return fmt.Errorf("%s intervals must not be negative (integer nanoseconds)", at)
	case p.BackoffCoefficient != 0 && p.BackoffCoefficient < 1:
		return fmt.Errorf("%s.BackoffCoefficient must be at least 1, got %g", at, p.BackoffCoefficient)
	case p.MaximumAttempts < 0:
		return fmt.Errorf("%s.MaximumAttempts must not be negative, got %d", at, p.MaximumAttempts)
	case p.MaximumInterval != 0 && p.MaximumInterval < p.InitialInterval:
		return fmt.Errorf("%s.MaximumInterval must not be below InitialInterval", at)
	}
	return nil
}
