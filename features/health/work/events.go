package work

import (
	"context"
	"strings"
	"time"

	"github.com/temco/temco/internal/core/events"
	core "github.com/temco/temco/internal/core/health"
	"github.com/temco/temco/internal/core/model"
	"github.com/temco/temco/internal/core/store"
)

// raise raises a cluster's becoming unreachable, and its return, with its labels (what
// receivers' clusterLabels filters match). A probe retried after its save failed raises
// the same ids: each is the cluster's, the new state and since when the old one held.
func (a *Activities) raise(ctx context.Context, changes []core.Change) error {
	var evs []events.Event
	for _, c := range changes {
		typ := ""
		switch {
		case c.State == core.Unreachable:
			typ = events.ClusterUnreachable
		case c.From == core.Unreachable:
			typ = events.ClusterReachable
		default:
			continue
		}
		provider, name, _ := strings.Cut(c.Key, "+")
		labels, err := a.Store.Names(ctx, store.Query{Parent: "/cluster-providers/" + provider + "/clusters/" + name, Kind: model.KindClusterLabel})
		if err != nil {
			return err
		}
		e := events.Event{ID: events.ID(c.Key, c.State, c.FromSince.Format(time.RFC3339Nano)), Type: typ, Time: c.Since,
			Details: map[string]any{"state": c.State, "was": c.From}}
		e.AboutCluster(c.Key, labels)
		if typ == events.ClusterUnreachable {
			e.Summary = "cluster " + c.Key + " is unreachable: " + c.Error
			e.Details["error"] = c.Error
		} else {
			e.Summary = "cluster " + c.Key + " is reachable again (" + c.State + ")"
		}
		evs = append(evs, e)
	}
	return a.Events.Emit(ctx, evs...)
}
