package digstate

import (
	"cmp"
	"fmt"

	"github.com/temco/temco/internal/core/lifecycle"
)

// PreviewRefused is a rollout preview the DIG's state does not allow, or (BadRevision)
// one asking for a revision its current instance does not have.
type PreviewRefused struct {
	Message     string
	BadRevision bool
}

func (e *PreviewRefused) Error() string { return e.Message }

// Preview is the operation a rollout preview of dig shows: a rollback to revision when it
// is set, else the instantiate or update its state allows next, with the running context
// and revision it would replace and the revision it would record.
func Preview(dig lifecycle.Target, info lifecycle.StateInfo, revision int64) (lifecycle.PreviewStart, error) {
	cur := info.Current()
	var last lifecycle.Action
	if n := len(info.Actions); n > 0 {
		last = info.Actions[n-1]
	}
	if revision > 0 {
		if _, err := lifecycle.DIGs.Machine.Start(dig.String(), lifecycle.OpRollback, cur); err != nil {
			return lifecycle.PreviewStart{}, &PreviewRefused{Message: err.Error()}
		}
		src, ok := info.RevisionContext(revision)
		if !ok {
			return lifecycle.PreviewStart{}, &PreviewRefused{BadRevision: true, Message: fmt.Sprintf(
				"%s has no revision %d in its current instance (revisions 1 to %d)", dig, revision, info.LatestRevision())}
		}
		return lifecycle.PreviewStart{Op: lifecycle.OpRollback, Previous: last.ContextID, Source: src, Current: last.Revision,
			Revision: info.LatestRevision() + 1}, nil
	}
	if _, err := lifecycle.DIGs.Machine.Start(dig.String(), lifecycle.OpInstantiate, cur); err == nil {
		return lifecycle.PreviewStart{Op: lifecycle.OpInstantiate, Revision: 1}, nil
	}
	if _, err := lifecycle.DIGs.Machine.Start(dig.String(), lifecycle.OpUpdate, cur); err == nil {
		return lifecycle.PreviewStart{Op: lifecycle.OpUpdate, Previous: last.ContextID, Current: last.Revision,
			Revision: info.LatestRevision() + 1}, nil
	}
	return lifecycle.PreviewStart{}, &PreviewRefused{Message: fmt.Sprintf(
		"%s is %s: a rollout preview shows its next instantiate (when it is Approved or Terminated) or update (when it is Instantiated)",
		dig, cmp.Or(cur, "new"))}
}
