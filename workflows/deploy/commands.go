package deploy

import (
	"fmt"
	"strings"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/temco/temco/internal/core/lifecycle"
)

// takeRolloutCommands lets operators approve, pause, resume and roll back a staged
// rollout: as signals (`temporal workflow signal --name approve --input
// '{"stage":"canary"}'`), which are ignored with a warning when they do not fit, and as
// the update the API sends, whose validator refuses them with the reason.
func (o *operation) takeRolloutCommands(ctx workflow.Context) error {
	for _, name := range []string{lifecycle.SignalApprove, lifecycle.SignalPause, lifecycle.SignalResume, lifecycle.SignalRollback} {
		ch := workflow.GetSignalChannel(ctx, name)
		workflow.Go(ctx, func(ctx workflow.Context) {
			for {
				var cmd lifecycle.RolloutCommand
				if !ch.Receive(ctx, &cmd) {
					return
				}
				cmd.Action = name
				if err := o.checkCommand(cmd); err != nil {
					workflow.GetLogger(ctx).Warn("rollout command ignored", "signal", name, "stage", cmd.Stage, "reason", err.Error())
					continue
				}
				o.command(cmd)
			}
		})
	}
	return workflow.SetUpdateHandlerWithOptions(ctx, lifecycle.UpdateRollout,
		func(ctx workflow.Context, cmd lifecycle.RolloutCommand) (lifecycle.RolloutStatus, error) {
			o.command(cmd)
			return o.rollout.snapshot(), nil
		},
		workflow.UpdateHandlerOptions{Validator: o.checkCommand})
}

// checkCommand tells why a command does not fit the rollout as it stands (nil: it does).
func (o *operation) checkCommand(cmd lifecycle.RolloutCommand) error {
	r := o.rollout
	refuse := func(format string, args ...any) error {
		return temporal.NewApplicationError(fmt.Sprintf(format, args...), lifecycle.ErrRefused)
	}
	switch {
	case r == nil:
		return refuse("the running %s has no rollout strategy (or has not reached its rollout yet)", o.progress.Op)
	case r.ended():
		return refuse("the rollout has ended (%s)", r.status.State)
	}
	switch cmd.Action {
	case lifecycle.RolloutApprove:
		if r.awaiting == "" {
			return refuse("no stage is waiting for an approval")
		}
		stage, when, _ := strings.Cut(r.awaiting, "/")
		if cmd.Stage != "" && cmd.Stage != stage {
			return refuse("stage %q is not waiting for an approval; stage %q is (%s it)", cmd.Stage, stage, when)
		}
	case lifecycle.RolloutPause:
		if r.paused {
			return refuse("the rollout is paused already")
		}
		if r.status.State != lifecycle.RolloutRunning {
			return refuse("the rollout is %s", r.status.State)
		}
	case lifecycle.RolloutResume:
		if !r.paused && r.status.State != lifecycle.RolloutAwaitingDecision {
			return refuse("the rollout is neither paused nor waiting for a decision")
		}
	case lifecycle.RolloutRollback:
		if r.rollback {
			return refuse("a rollback was asked for already")
		}
	default:
		return refuse("unknown rollout command %q (approve, pause, resume or rollback)", cmd.Action)
	}
	return nil
}

// command carries out a command checkCommand accepted.
func (o *operation) command(cmd lifecycle.RolloutCommand) {
	r := o.rollout
	switch cmd.Action {
	case lifecycle.RolloutApprove:
		r.approved[r.awaiting] = true
	case lifecycle.RolloutPause:
		r.paused = true
	case lifecycle.RolloutResume:
		if r.status.State == lifecycle.RolloutAwaitingDecision {
			r.decision = lifecycle.RolloutResume
		}
		r.paused = false
	case lifecycle.RolloutRollback:
		r.rollback = true
	}
	r.version++
}

// ended tells whether the rollout has come to an end.
func (r *rolloutRun) ended() bool {
	switch r.status.State {
	case lifecycle.RolloutSucceeded, lifecycle.RolloutFailed, lifecycle.RolloutRolledBack, lifecycle.RolloutRollingBack:
		return true
	}
	return false
}
