package tac

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/temco/temco/contract"
	"github.com/temco/temco/controllers"
	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/digstate"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/store"
	"github.com/temco/temco/starter"
)

// workers instantiates the worker DIGs of an operation's hooks, waits until they are
// Ready, and terminates the ones it instantiated once the operation has finished. What it
// instantiated is recorded before it asks, so a retried controller call (the worker
// restarted, the wait outlived an attempt) finds its own work and repeats nothing.
type workers struct {
	st       *store.Store
	contexts *appctx.Store
	ops      *starter.Starter
	records  *mongo.Collection
}

func newWorkers(d controllers.Deps) *workers {
	w := &workers{st: d.Store, contexts: d.Contexts, ops: d.Ops}
	if d.Store != nil {
		w.records = d.Store.Database().Collection("tacWorkers")
	}
	return w
}

// record says tac instantiated a worker DIG for an operation on a context.
type record struct {
	ID        string           `bson:"_id"` // <context>/<operation><worker DIG id>
	Context   string           `bson:"context"`
	Operation string           `bson:"operation"`
	DIG       lifecycle.Target `bson:"dig"`
	Deadline  time.Time        `bson:"deadline"` // to be Ready by
}

// poll is how often a worker DIG's progress is read.
const poll = 3 * time.Second

// ensure makes the worker DIGs of the named hooks Ready.
func (w *workers) ensure(ctx context.Context, in contract.Input, dig lifecycle.Target, hooks []string) error {
	for _, h := range hooks {
		specs, err := controllers.List[WorkerSpec](ctx, w.st, store.Query{Parent: hookID(dig, h), Kind: KindWorker})
		if err != nil {
			return err
		}
		for _, s := range specs {
			target := lifecycle.Target{Project: in.Project, CompositeApp: s.Spec.CompositeApp, Version: s.Spec.CompositeAppVersion, DIG: s.Spec.DIG}
			if err := w.up(ctx, in, target, s.Spec.timeout()); err != nil {
				return fmt.Errorf("worker %s of hook %s: %w", s.Name, h, err)
			}
		}
	}
	return nil
}

// up instantiates target unless it runs already, then waits until it is Ready.
func (w *workers) up(ctx context.Context, in contract.Input, target lifecycle.Target, timeout time.Duration) error {
	if w.ops == nil {
		return errors.New("this worker cannot operate on DIGs")
	}
	rec := record{ID: in.ContextID + "/" + in.Operation + target.ID(), Context: in.ContextID, Operation: in.Operation, DIG: target,
		Deadline: time.Now().Add(timeout)}
	var earlier record
	err := store.FindOne(ctx, w.records, bson.D{{Key: "_id", Value: rec.ID}}, &earlier)
	switch {
	case err == nil: // an earlier attempt instantiated it
		rec = earlier
	case !errors.Is(err, mongo.ErrNoDocuments):
		return err
	}
	state, ctxID, err := w.state(ctx, target)
	if err != nil {
		return err
	}
	switch {
	case state == lifecycle.StateApproved || state == lifecycle.StateTerminated:
		if _, err := w.records.ReplaceOne(ctx, bson.D{{Key: "_id", Value: rec.ID}}, rec, options.Replace().SetUpsert(true)); err != nil {
			return err
		}
		acc, err := w.ops.Start(ctx, target, lifecycle.OpInstantiate)
		var refused *starter.Refused
		if errors.As(err, &refused) {
			return contract.Refuse("%s", refused.Message)
		}
		if err != nil {
			return err
		}
		ctxID = acc.ContextID
	case state == lifecycle.StateInstantiated: // running already; terminated after only if tac instantiated it
	default:
		return contract.Refuse("worker DIG %s is %s: it must be Approved, Terminated or Instantiated", target, state)
	}
	return w.awaitReady(ctx, target, ctxID, rec.Deadline)
}

// state is a DIG's lifecycle state and current context.
func (w *workers) state(ctx context.Context, target lifecycle.Target) (string, string, error) {
	_, info, err := digstate.Load(ctx, w.st, target.ID())
	if store.CodeOf(err) == store.ErrNotFound {
		return "", "", contract.Refuse("worker DIG %s does not exist", target)
	}
	if err != nil {
		return "", "", err
	}
	return info.Current(), info.ContextID(), nil
}

// awaitReady waits until the worker DIG's instantiate has ended and all its objects are
// Ready on their clusters, until deadline.
func (w *workers) awaitReady(ctx context.Context, target lifecycle.Target, ctxID string, deadline time.Time) error {
	for {
		h, err := w.contexts.Get(ctx, ctxID)
		if err != nil {
			return err
		}
		switch h.Status {
		case lifecycle.StatusInstantiating, lifecycle.StatusUpdating:
		case lifecycle.StatusInstantiated:
			res, err := w.ops.Readiness(ctx, target, ctxID)
			if err != nil {
				return err
			}
			if res.NotReady == 0 {
				return nil
			}
		default:
			return contract.Refuse("worker DIG %s is %s: %s", target, h.Status, h.Error)
		}
		if time.Now().After(deadline) {
			return contract.Refuse("worker DIG %s was not Ready by %s", target, deadline.UTC().Format(time.RFC3339))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(poll):
		}
	}
}

// release terminates the worker DIGs tac instantiated for the operation, and forgets them.
func (w *workers) release(ctx context.Context, in contract.Input) error {
	if w.records == nil {
		return nil
	}
	cur, err := w.records.Find(ctx, bson.D{{Key: "context", Value: in.ContextID}, {Key: "operation", Value: in.Operation}})
	if err != nil {
		return err
	}
	var recs []record
	if err := cur.All(ctx, &recs); err != nil {
		return err
	}
	for _, r := range recs {
		state, _, err := w.state(ctx, r.DIG)
		var refusal *contract.Refusal
		switch {
		case errors.As(err, &refusal): // deleted meanwhile
		case err != nil:
			return err
		case state == lifecycle.StateInstantiated:
			acc, err := w.ops.Start(ctx, r.DIG, lifecycle.OpTerminate)
			if err != nil {
				return fmt.Errorf("terminate worker DIG %s: %w", r.DIG, err)
			}
			if err := w.ops.Await(ctx, acc); err != nil {
				return fmt.Errorf("terminate worker DIG %s: %w", r.DIG, err)
			}
		}
		if _, err := w.records.DeleteOne(ctx, bson.D{{Key: "_id", Value: r.ID}}); err != nil {
			return err
		}
	}
	return nil
}
