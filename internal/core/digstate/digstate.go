// Package digstate keeps the state history of every lifecycle target in the resource
// store, read and changed with optimistic concurrency so concurrent API replicas and
// workflows never lose an entry. Which operation may start from which state, and what
// it records, is the target's kind's machine (lifecycle.Kind); every such check is made
// here or by its callers on a history just read from the store, by the api or by an
// activity: workflows never check a state (they cannot read it deterministically),
// BeginOperation does it for them.
package digstate

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/store"
)

// Load returns the DIG's stored document and state history.
func Load(ctx context.Context, st *store.Store, digID string) (*store.Doc, lifecycle.StateInfo, error) {
	d, err := st.Get(ctx, digID)
	if err != nil {
		return nil, lifecycle.StateInfo{}, err
	}
	info, err := Parse(d)
	return d, info, err
}

// Parse decodes the state history of a DIG document.
func Parse(d *store.Doc) (lifecycle.StateInfo, error) {
	var info lifecycle.StateInfo
	if d.State == "" {
		return info, nil
	}
	if err := json.Unmarshal([]byte(d.State), &info); err != nil {
		return info, fmt.Errorf("decode state of %s: %w", d.ID, err)
	}
	return info, nil
}

// Encode renders a state history for storage.
func Encode(info lifecycle.StateInfo) string {
	b, _ := json.Marshal(info)
	return string(b)
}

// Change applies next to the current history and stores the result, retrying when
// another writer got there first. next returns the actions to append (none leaves the
// history unchanged); its error is returned as is.
func Change(ctx context.Context, st *store.Store, digID string, next func(lifecycle.StateInfo) ([]lifecycle.Action, error)) (lifecycle.StateInfo, error) {
	return ChangeFrom(ctx, st, digID, nil, next)
}

// ChangeFrom is Change starting from d, the DIG's document as the caller read it (nil: read
// it); a stale d costs one retry.
func ChangeFrom(ctx context.Context, st *store.Store, digID string, d *store.Doc, next func(lifecycle.StateInfo) ([]lifecycle.Action, error)) (lifecycle.StateInfo, error) {
	for {
		var info lifecycle.StateInfo
		var err error
		if d == nil {
			d, info, err = Load(ctx, st, digID)
		} else {
			info, err = Parse(d)
		}
		if err != nil {
			return info, err
		}
		add, err := next(info)
		if err != nil || len(add) == 0 {
			return info, err
		}
		now := time.Now().UTC()
		for _, a := range add {
			if a.TimeStamp.IsZero() {
				a.TimeStamp = now
			}
			info.Actions = append(info.Actions, a)
		}
		changed := *d
		changed.State = Encode(info)
		err = st.SetState(ctx, &changed)
		if store.CodeOf(err) == store.ErrConflict {
			d = nil
			continue
		}
		return info, err
	}
}

// NewHistory is the stored state history of a new target: Created, now.
func NewHistory() string {
	return Encode(lifecycle.StateInfo{Actions: []lifecycle.Action{{State: lifecycle.StateCreated, TimeStamp: time.Now().UTC()}}})
}
