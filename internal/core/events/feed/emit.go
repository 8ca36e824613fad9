package feed

import (
	"context"
	"fmt"
	"slices"
	"time"

	"golang.org/x/sync/errgroup"

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
	// The feed's write and the receivers' reads at once: an operation raises an event as it
	// begins and as it ends, and waits for neither the receivers nor one round trip after
	// another.
	var receivers [][]*store.Doc
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return em.Feed.Record(gctx, evs) })
	if em.Deliver != nil {
		parents := parentsOf(evs)
		receivers = make([][]*store.Doc, len(parents))
		for i, parent := range parents {
			g.Go(func() (err error) {
				receivers[i], err = em.Store.List(gctx, store.Query{Kind: model.KindNotificationReceiver, Parent: parent})
				return err
			})
		}
	}
	if err := g.Wait(); err != nil {
		return err
	}
	for _, d := range slices.Concat(receivers...) {
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

// parentsOf are where the receivers that may take evs are: the top level (admins') and
// the projects evs are about (a store query lists one parent's children).
func parentsOf(evs []events.Event) []string {
	parents := []string{""}
	for _, e := range evs {
		if p := "/projects/" + e.Project; e.Project != "" && !slices.Contains(parents, p) {
			parents = append(parents, p)
		}
	}
	return parents
}
