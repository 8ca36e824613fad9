package api

import (
	"context"
	"time"

	"github.com/temco/temco/internal/core/health"
)

// reachability is what the cluster probes found of one cluster (internal/core/health):
// State is Unknown until a probe ran. Error, which names the cluster's API server, is
// shown to administrators only.
type reachability struct {
	State   string     `json:"state"`
	Error   string     `json:"error,omitempty"`
	Since   *time.Time `json:"since,omitempty"`   // when a probe found State first
	Checked *time.Time `json:"checked,omitempty"` // every cluster was probed since
}

// reachabilityOf returns cluster key's reachability, its error only when admin.
func (s *Server) reachabilityOf(ctx context.Context, key string, admin bool) (reachability, error) {
	found, err := health.Open(s.Store.Database()).Of(ctx, []string{key})
	if err != nil {
		return reachability{}, err
	}
	c, ok := found[key]
	if !ok {
		return reachability{State: health.Unknown}, nil
	}
	r := reachability{State: c.State, Since: &c.Since}
	if !c.Checked.IsZero() {
		r.Checked = &c.Checked
	}
	if admin {
		r.Error = c.Error
	}
	return r, nil
}

// reachabilityCounts counts the clusters by reachability as the last round of probes
// ended (clusters never probed are not counted).
func (s *Server) reachabilityCounts(ctx context.Context) (map[string]int, error) {
	return health.Open(s.Store.Database()).Counts(ctx)
}
