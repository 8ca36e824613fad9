package api

import (
	"cmp"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"time"

	"github.com/labstack/echo/v4"
	"golang.org/x/sync/errgroup"

	"github.com/temco/temco/internal/core/capacity"
	"github.com/temco/temco/internal/core/digstate"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/model"
	"github.com/temco/temco/internal/core/store"
)

// The dashboard's view of one cluster (dashboard/README.md): what runs there — each DIG
// of the caller's projects placed on it, with a cell per app as on the DIG's page — its
// labels and the last error an apply or delete met there. One lookup per DIG's current
// context, a few at once.

type clusterView struct {
	ClusterProvider string   `json:"clusterProvider"`
	Cluster         string   `json:"cluster"`
	Labels          []string `json:"labels"`
	// States counts the DIGs placed here by the state of their worst app here.
	States map[string]int `json:"states"`
	DIGs   []clusterDIG   `json:"digs"`
	// LastError is the newest error of an object here (Retrying or Failed); null: none.
	LastError *clusterError `json:"lastError"`
	// Reachability is what the last probe of its API server found.
	Reachability reachability `json:"reachability"`
}

type clusterDIG struct {
	Project             string `json:"project"`
	CompositeApp        string `json:"compositeApp"`
	CompositeAppVersion string `json:"compositeAppVersion"`
	Name                string `json:"name"`
	DIGState            string `json:"digState"`
	ContextStatus       string `json:"contextStatus,omitempty"`
	// State is its worst app's here; Apps a cell per app, as on the DIG's page.
	State  string                   `json:"state"`
	ReadAt *time.Time               `json:"readAt,omitempty"`
	Apps   map[string]dashboardCell `json:"apps"`
	Retry  *dashboardRetry          `json:"retry,omitempty"`
	// Capacity is what the DIG's capacity placement (docs/autoscaling.md) last read of the
	// cluster and made of it; absent when the DIG has none or it has not read the cluster.
	Capacity *clusterCapacity `json:"capacity,omitempty"`
}

// clusterCapacity is one cluster as a DIG's autoscaler sees it.
type clusterCapacity struct {
	Placement string            `json:"placement"`
	State     capacity.State    `json:"state,omitempty"` // the cluster's member state ("": not a member)
	Since     *time.Time        `json:"since,omitempty"`
	Reason    string            `json:"reason,omitempty"`
	Signals   *capacity.Signals `json:"signals,omitempty"`
	Read      *time.Time        `json:"read,omitempty"` // when the signals were read
}

type clusterError struct {
	Project string    `json:"project"`
	DIG     string    `json:"dig"` // its path below /v2
	App     string    `json:"app"`
	Object  string    `json:"object"`
	Status  string    `json:"status"`
	Error   string    `json:"error"`
	Time    time.Time `json:"time"`
}

func (s *Server) registerClusterView(g *echo.Group) {
	s.route(g, opDoc{method: http.MethodGet, path: routeCluster + "/dashboard", summary: "What runs on one cluster: the DIGs placed there with each app's state",
		description: "temco's own (the dashboard's cluster view). A tenant sees its projects' DIGs only.",
		code:        http.StatusOK, response: typeOf[clusterView]()}, s.clusterDashboard)
}

func (s *Server) clusterDashboard(c echo.Context) error {
	id, err := fill(c, routeCluster)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	if err := s.mustExist(ctx, id); err != nil {
		return err
	}
	provider, cluster := c.Param("clusterProvider"), c.Param("cluster")
	key := lifecycle.ClusterKey(provider, cluster)
	projects := callerProjects(c)
	docs, err := s.projectDIGs(ctx, projects)
	if err != nil {
		return err
	}
	var ids []string
	digOf := map[string]clusterDIG{}
	for _, d := range docs {
		info, err := digstate.Parse(d)
		if err != nil || info.ContextID() == "" {
			continue
		}
		t := lifecycle.DIGOfID(d.ID)
		ids = append(ids, info.ContextID())
		digOf[info.ContextID()] = clusterDIG{Project: t.Project, CompositeApp: t.CompositeApp, CompositeAppVersion: t.Version, Name: t.DIG,
			DIGState: info.Current()}
	}
	placed, err := s.Contexts.OnCluster(ctx, key, ids)
	if err != nil {
		return err
	}
	here := make([]string, 0, len(placed))
	for id := range placed {
		here = append(here, id)
	}
	outcomes, err := s.Contexts.Outcomes(ctx, here)
	if err != nil {
		return err
	}
	labels, err := s.clusterLabels(ctx, []string{key})
	if err != nil {
		return err
	}
	p := principal(c)
	reach, err := s.reachabilityOf(ctx, key, p == nil || p.Admin)
	if err != nil {
		return err
	}
	out := clusterView{ClusterProvider: provider, Cluster: cluster, Labels: labels[key], States: map[string]int{}, DIGs: []clusterDIG{},
		Reachability: reach}
	for _, id := range here {
		d := digOf[id]
		d.ContextStatus = outcomes[id].Status
		row := rowOf(key, placed[id], nil)
		d.State, d.ReadAt, d.Apps, d.Retry = row.State, row.ReadAt, row.Apps, row.Retry
		out.States[d.State]++
		out.DIGs = append(out.DIGs, d)
		for _, p := range placed[id] {
			for _, r := range p.Resources {
				if (r.Status == lifecycle.ResRetrying || r.Status == lifecycle.ResFailed) && r.Error != "" &&
					(out.LastError == nil || r.Updated.After(out.LastError.Time)) {
					out.LastError = &clusterError{Project: d.Project, DIG: "/v2" + digPathOf(d), App: p.App,
						Object: r.Ref.String(), Status: r.Status, Error: r.Error, Time: r.Updated}
				}
			}
		}
	}
	if err := s.capacityOnCluster(ctx, key, out.DIGs); err != nil {
		return err
	}
	slices.SortFunc(out.DIGs, func(a, b clusterDIG) int {
		return cmp.Or(cmp.Compare(a.Project, b.Project), cmp.Compare(a.CompositeApp, b.CompositeApp),
			cmp.Compare(a.CompositeAppVersion, b.CompositeAppVersion), cmp.Compare(a.Name, b.Name))
	})
	return c.JSON(http.StatusOK, out)
}

func digPathOf(d clusterDIG) string {
	return lifecycle.Target{Project: d.Project, CompositeApp: d.CompositeApp, Version: d.CompositeAppVersion, DIG: d.Name}.ID()
}

// capacityOnCluster fills in what each DIG's capacity placement made of cluster key: a
// query per DIG placed there, four at once.
func (s *Server) capacityOnCluster(ctx context.Context, key string, digs []clusterDIG) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(4)
	for i := range digs {
		g.Go(func() error {
			name, a, err := s.capacityOf(gctx, digPathOf(digs[i]))
			if err != nil || a == nil {
				return err
			}
			c := &clusterCapacity{Placement: name}
			for _, m := range a.Members {
				if m.Cluster == key {
					c.State, c.Since, c.Reason = m.State, &m.Since, m.Reason
				}
			}
			if a.Last != nil {
				if sig, ok := a.Last.Signals[key]; ok {
					c.Signals, c.Read = &sig, &a.Last.At
				}
			}
			if c.State != "" || c.Signals != nil {
				digs[i].Capacity = c
			}
			return nil
		})
	}
	return g.Wait()
}

// capacityOf reads the DIG's capacity placement: its name and its autoscaler's record
// (features/autoscale; nil: the DIG has none).
func (s *Server) capacityOf(ctx context.Context, digID string) (string, *lifecycle.AutoscaleState, error) {
	docs, err := s.Store.List(ctx, store.Query{Parent: digID, Kind: model.KindCapacityPlacement})
	if err != nil || len(docs) == 0 {
		return "", nil, err
	}
	var st lifecycle.AutoscaleState
	if docs[0].State != "" {
		if err := json.Unmarshal([]byte(docs[0].State), &st); err != nil {
			return "", nil, err
		}
	}
	return docs[0].Name, &st, nil
}
