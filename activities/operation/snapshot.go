package operation

import (
	"context"
	"time"

	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/snapshot"
)

// snapshotted records, once a begin succeeded, the snapshot of the revision it produced:
// where the revision's number and context are decided, whichever process asked for the
// operation (the API, a migrate, relocate, tac's worker DIGs). An update's or an
// instantiate's is the DIG's configuration now; a rollback's is the snapshot of the
// revision it copies. A retried begin finds its revision recorded already.
func (a *Activities) snapshotted(ctx context.Context, t lifecycle.Target, op string, res lifecycle.BeginResult, err error) (lifecycle.BeginResult, error) {
	if err != nil || a.Snapshots == nil || !t.Kind().Apps {
		return res, err
	}
	rev := snapshot.Revision{Revision: res.Revision, ContextID: res.ContextID, Operation: op, Time: time.Now().UTC()}
	_, err = a.Snapshots.Take(ctx, a.Store, t.ID(), rev, res.Source)
	return res, err
}
