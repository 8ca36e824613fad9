package feed

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/temco/temco/internal/core/events"
	"github.com/temco/temco/internal/core/model"
	"github.com/temco/temco/internal/core/store"
)

// Emitter raises events from the activities that find them: each is kept in the feed and
// handed to the delivery workflow of every receiver whose filter takes it. A nil Emitter
// raises nothing (tests of activities that do not look at events).
type Emitter struct {
	Store *store.Store
	Feed  *Feed
	// Deliver hands e to the delivery workflow of the receiver whose store id is receiver
	// (features/notify: a signal that starts it if need be). Nil: the notify feature is
	// off, and events are only kept in the feed.
	Deliver func(ctx context.Context, receiver string, e events.Event) error
}

// Emit raises evs. Its error is the caller's to return, so that its activity is retried:
// the events' ids are the same then, and nothing is told twice.
func (em *Emitter) Emit(ctx context.Context, evs ...events.Event) error {
	if em == nil || len(evs) == 0 {
		return nil
	}
	now := time.Now().UTC()
	for i := range evs {
		if evs[i].Time.IsZero() {
			evs[i].Time = now
		}
		// Each a time of its own, in the order raised: the feed is read, and paged, by time.
		if i > 0 && !evs[i].Time.After(evs[i-1].Time) {
			evs[i].Time = evs[i-1].Time.Add(time.Nanosecond)
		}
	}
	if err := em.Feed.Record(ctx, evs); err != nil {
		return err
	}
	if em.Deliver == nil {
		return nil
	}
	receivers, err := em.receiversOf(ctx, evs)
	if err != nil {
		return err
	}
	for _, d := range receivers {
		r, err := model.Decode[events.Receiver](d.Body)
		if err != nil {
			return err
		}
		scope := events.ScopeOf(d.ID)
		for _, e := range evs {
			if !r.Spec.Filter.Matches(scope, &e) {
				continue
			}
			if err := em.Deliver(ctx, d.ID, e); err != nil {
				return fmt.Errorf("hand event %s to receiver %s: %w", e.ID, d.ID, err)
			}
		}
	}
	return nil
}

// receiversOf lists the receivers that may take evs: the admins' (at the top level) and
// those of the projects evs are about. A store query lists one parent's children (no
// parent is the top level), so each project's are listed apart.
func (em *Emitter) receiversOf(ctx context.Context, evs []events.Event) ([]*store.Doc, error) {
	parents := []string{""}
	for _, e := range evs {
		if p := "/projects/" + e.Project; e.Project != "" && !slices.Contains(parents, p) {
			parents = append(parents, p)
		}
	}
	var out []*store.Doc
	for _, parent := range parents {
		docs, err := em.Store.List(ctx, store.Query{Kind: model.KindNotificationReceiver, Parent: parent})
		if err != nil {
			return nil, err
		}
		out = append(out, docs...)
	}
	return out, nil
}
