// Drift on the agent's own cluster (docs/agent.md, "Drift"): each time the agent reads its
// cluster for a revision it holds (reportLive), it also compares the revision's objects
// with the live ones, with the drift check's own comparison (features/drift/detect), and
// sends the finding to the api only when it differs from the last one sent. temco's cost
// is one request per change, not one per agent per read; the drift checks read the last
// finding (features/drift/work).

package edgeagent

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	temco "github.com/temco/temco/client"
	"github.com/temco/temco/features/drift/detect"
	"github.com/temco/temco/internal/core/agent"
	"github.com/temco/temco/internal/core/appctx"
)

// driftSent is, by revision, the digest of the drift finding last sent (accepted, or
// refused for good).
type driftSent map[string][sha256.Size]byte

// reportDrift compares rev's applied objects with what the cluster has of them and sends
// the finding when it changed since the last sent for rev. A cluster it cannot compare is
// a finding too (its error), as a drift check records one. An error is a send that may
// pass later: the next read sends again.
func (a *Agent) reportDrift(ctx context.Context, rev *agent.Revision) error {
	rec := &appctx.ClusterDrift{}
	api, err := a.Local.API(rev.Header)
	if err == nil {
		err = detect.Cluster(ctx, api, rev.Placements, rev.Apps, rec)
	}
	if ctx.Err() != nil {
		return nil // stopping: a half-done comparison is no finding
	}
	if err != nil {
		rec = &appctx.ClusterDrift{Error: err.Error()}
	}
	d := driftReport(rec)
	b, err := json.Marshal(d)
	if err != nil {
		return err
	}
	sum, id := sha256.Sum256(b), rev.Header.ID
	if a.drift == nil {
		a.drift = driftSent{}
	}
	for held := range a.drift {
		if a.revisions[held] == nil { // no longer held: its finding goes with it
			delete(a.drift, held)
		}
	}
	if last, ok := a.drift[id]; ok && last == sum {
		return nil
	}
	err = a.API.SaveDrift(ctx, id, d)
	var e *temco.Error
	switch {
	case err == nil:
		a.Log.Info("agent: drift reported", "revision", id, "drifted", len(d.Objects), "inSync", d.InSync)
	case errors.As(err, &e) && (e.Code == http.StatusBadRequest || e.Code == http.StatusNotFound || e.Code == http.StatusRequestEntityTooLarge):
		// The same finding would be refused again: it is sent again once it changes.
		a.Log.Warn("agent: drift report refused", "revision", id, "error", err)
	default:
		return fmt.Errorf("report drift of %s: %w", id, err)
	}
	a.drift[id] = sum
	return nil
}

// driftReport is rec as the api takes it, within agent's bounds: fields past them are
// left out, and their object's error says how many.
func driftReport(rec *appctx.ClusterDrift) agent.Drift {
	d := agent.Drift{InSync: rec.InSync, Error: cut(rec.Error)}
	budget := agent.MaxDriftReportFields
	for _, o := range rec.Objects {
		x := agent.DriftObject{App: o.App, Ref: o.Ref, Missing: o.Missing, Error: cut(o.Error)}
		left := 0
		for _, f := range o.Fields {
			if len(x.Fields) >= min(agent.MaxDriftFields, budget) || len(f.Path) > agent.MaxDriftPath ||
				len(f.Live) > agent.MaxDriftValue || len(f.Desired) > agent.MaxDriftValue {
				left++
				continue
			}
			x.Fields = append(x.Fields, f)
		}
		budget -= len(x.Fields)
		if left > 0 {
			note := fmt.Sprintf("%d more fields differ, not reported (a report names at most %d of an object, %d in all)",
				left, agent.MaxDriftFields, agent.MaxDriftReportFields)
			if x.Error != "" {
				note = x.Error + "; " + note
			}
			x.Error = cut(note)
		}
		d.Objects = append(d.Objects, x)
	}
	return d
}

// cut bounds an error the agent sends.
func cut(s string) string {
	if len(s) > agent.MaxDriftError {
		return s[:agent.MaxDriftError]
	}
	return s
}
