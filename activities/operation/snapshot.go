package operation

import (
	"cmp"
	"context"
	"time"

	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/snapshot"
)

// snapshotted runs begin and, once it succeeded, records the snapshot of the revision it
// produced: where the revision's number and context are decided, whichever process asked
// for the operation (the API, a migrate, relocate, tac's worker DIGs). An update's or an
// instantiate's is the DIG's configuration now, read while begin runs (the operation
// waits for both); a rollback's is the snapshot of the revision it copies. A retried
// begin finds its revision recorded already.
func (a *Activities) snapshotted(ctx context.Context, in lifecycle.BeginInput,
	begin func(context.Context, lifecycle.BeginInput) (lifecycle.BeginResult, error)) (lifecycle.BeginResult, error) {
	if a.Snapshots == nil || !in.Target.Kind().Apps {
		return begin(ctx, in)
	}
	type read struct {
		data []byte
		err  error
	}
	var config chan read
	if in.Op != lifecycle.OpRollback {
		config = make(chan read, 1)
		go func() {
			data, err := snapshot.Configuration(ctx, a.Store, in.Target.ID())
			config <- read{data, err}
		}()
	}
	res, err := begin(ctx, in)
	var data []byte
	if config != nil {
		r := <-config
		data, err = r.data, cmp.Or(err, r.err)
	}
	if err != nil {
		return res, err
	}
	rev := snapshot.Revision{Revision: res.Revision, ContextID: res.ContextID, Operation: in.Op, Time: time.Now().UTC()}
	_, err = a.Snapshots.Record(ctx, in.Target.ID(), rev, res.Source, data)
	return res, err
}
