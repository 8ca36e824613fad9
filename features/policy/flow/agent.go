// Package flow holds EMCO's policy controller as workflows (docs/policy.md): PolicyAgent
// keeps a registered agent's event stream open for as long as the agent is registered;
// Policy evaluates a DIG's policy intents as their events come and starts the workflow
// intent a policy asks for, once per decision. Workflow code only: features/policy/work does
// the I/O.
package flow

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/temco/temco/internal/core/lifecycle"
)

// listensPerRun bounds one run's history: PolicyAgent continues as new after them.
const listensPerRun = 100

// PolicyAgent listens to agent in.Name until it is deregistered or the workflow gets
// SignalStop; SignalWake (the agent was registered again, perhaps at another address)
// ends the current stream and opens a new one.
func PolicyAgent(ctx workflow.Context, in PolicyAgentInput) error {
	stop, wake := workflow.GetSignalChannel(ctx, lifecycle.SignalStop), workflow.GetSignalChannel(ctx, lifecycle.SignalWake)
	for n := 0; n < listensPerRun && !workflow.GetInfo(ctx).GetContinueAsNewSuggested(); n++ {
		actx, cancel := workflow.WithCancel(ctx)
		f := ListenPolicyAgent.Execute(listening(actx), in)
		var res PolicyListened
		var err error
		stopped, woken := false, false
		sel := workflow.NewSelector(ctx)
		sel.AddFuture(f.Future, func(workflow.Future) { err = f.Get(ctx, &res) })
		sel.AddReceive(stop, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, nil); stopped = true })
		sel.AddReceive(wake, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, nil); woken = true })
		sel.Select(ctx)
		if stopped || woken {
			cancel()
			_ = f.Get(ctx, nil) // the stream is closed before another opens
		}
		cancel()
		switch {
		case stopped:
			workflow.GetLogger(ctx).Info("policy agent listener stopped", "agent", in.Name)
			return nil
		case woken:
			continue
		case err != nil:
			return err
		case res.Gone:
			return nil
		}
	}
	return workflow.NewContinueAsNewError(ctx, PolicyAgent, in)
}

// listenFor is how long one listening attempt holds the stream before handing over to a
// new one: the history grows by one activity per period, whatever the traffic.
const listenFor = time.Hour

// listening is for the agent's stream: it heartbeats while open, so a dead worker's
// stream moves to another within the heartbeat timeout; an agent that cannot be reached
// is retried for as long as it is registered, at most every 30 s.
func listening(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: listenFor + time.Minute,
		HeartbeatTimeout: 30 * time.Second, WaitForCancellation: true,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, MaximumInterval: 30 * time.Second,
			NonRetryableErrorTypes: []string{lifecycle.ErrInvalidInput}}})
}
