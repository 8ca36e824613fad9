package api

import (
	"context"
	"net/http"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"
	"golang.org/x/sync/errgroup"

	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/digstate"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/model"
	"github.com/temco/temco/internal/core/store"
)

// The fleet's grid (dashboard/README.md): every registered cluster with the worst state
// of what the caller's DIGs run there and how many of them do. Its reads do not grow with
// the objects: the clusters' names (a query per provider, Store.Names), read while the
// DIGs (a query per project) and then the batch documents of their current contexts (one
// query, appctx.Grid) are. The answer
// is parallel arrays: 10,000 clusters are one name, three small numbers each.

const (
	routeFleetClusters = routeFleet + "/clusters"
	// gridNone is the state of a cluster where nothing of the caller's runs.
	gridNone = "none"
)

var (
	fleetClustersParams = []string{"state", "provider", "placed"}
	// gridStates are the states of the answer, worst first; a cluster's is an index.
	gridStates = append(slices.Clone(appctx.GridStates), gridNone)
)

type fleetClusters struct {
	// States names the states, worst first: Failed, Retrying, Pending, Applied, none.
	States []string `json:"states"`
	// Counts counts the clusters by state, every state named (the state and placed
	// filters narrow the clusters listed, not these).
	Counts    map[string]int `json:"counts"`
	Providers []string       `json:"providers"`
	Clusters  gridColumns    `json:"clusters"`
	Total     int            `json:"total"` // the clusters counted
	DIGs      int            `json:"digs"`  // the caller's DIGs with a current context
}

// gridColumns are the clusters as parallel arrays, sorted by provider and name.
type gridColumns struct {
	Provider []int    `json:"provider"` // an index of Providers
	Name     []string `json:"name"`
	State    []int    `json:"state"` // an index of States
	DIGs     []int    `json:"digs"`  // the caller's DIGs placed there
}

func (s *Server) registerFleetClusters(g *echo.Group) {
	s.route(g, opDoc{method: http.MethodGet, path: routeFleetClusters, summary: "The fleet's clusters: each one's worst state across the caller's DIGs, and how many are placed there",
		description: "temco's own (the dashboard's grid). Every registered cluster, a tenant's counting its projects' DIGs alone; parallel arrays. " +
			"Filters: state (Failed, Retrying, Pending, Applied or none), provider, placed=true (only clusters where a DIG runs).",
		code: http.StatusOK, response: typeOf[fleetClusters](), query: fleetClustersParams}, s.fleetClusters)
}

type fleetClustersQuery struct {
	state, provider string
	placed          bool
}

func parseFleetClustersQuery(c echo.Context) (fleetClustersQuery, error) {
	var q fleetClustersQuery
	for k := range c.QueryParams() {
		if !slices.Contains(fleetClustersParams, k) {
			return q, badRequest("unknown query parameter %q: use %s", k, strings.Join(fleetClustersParams, ", "))
		}
	}
	if q.state = c.QueryParam("state"); q.state != "" && !slices.Contains(gridStates, q.state) {
		return q, badRequest("state=%q is invalid: use one of %s", q.state, strings.Join(gridStates, ", "))
	}
	if q.provider = c.QueryParam("provider"); q.provider != "" {
		if err := model.ValidateName("provider", q.provider); err != nil {
			return q, badRequest("%v", err)
		}
	}
	switch v := c.QueryParam("placed"); v {
	case "", "false":
	case "true":
		q.placed = true
	default:
		return q, badRequest("placed=%q is invalid: use true or false", v)
	}
	return q, nil
}

func (s *Server) fleetClusters(c echo.Context) error {
	q, err := parseFleetClustersQuery(c)
	if err != nil {
		return err
	}
	projects := callerProjects(c)
	ctx := c.Request().Context()
	var providers []string
	var clusters [][]string
	var ids []string // the current contexts of the caller's DIGs
	var placed map[string]*appctx.GridCluster
	// The clusters are listed while the DIGs, then their contexts' batches, are read.
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) {
		providers, clusters, err = s.registeredClusters(gctx, q.provider)
		return err
	})
	g.Go(func() error {
		digs, err := s.projectDIGs(gctx, projects)
		if err != nil {
			return err
		}
		for _, d := range digs {
			if info, err := digstate.Parse(d); err == nil && info.ContextID() != "" {
				ids = append(ids, info.ContextID())
			}
		}
		placed, err = s.Contexts.Grid(gctx, ids)
		return err
	})
	if err := g.Wait(); err != nil {
		return err
	}
	if q.provider != "" && len(providers) == 0 {
		return httpErr(http.StatusNotFound, "cluster provider %q does not exist", q.provider)
	}
	out := fleetClusters{States: gridStates, Counts: map[string]int{}, Providers: providers, DIGs: len(ids),
		Clusters: gridColumns{Provider: []int{}, Name: []string{}, State: []int{}, DIGs: []int{}}}
	for _, st := range gridStates {
		out.Counts[st] = 0
	}
	want := slices.Index(gridStates, q.state)
	for pi, cs := range clusters {
		for _, name := range cs {
			state, n := gridNone, 0
			if g := placed[lifecycle.ClusterKey(providers[pi], name)]; g != nil {
				state, n = g.State, g.Contexts
			}
			si := slices.Index(gridStates, state)
			out.Counts[state]++
			out.Total++
			if want >= 0 && si != want || q.placed && n == 0 {
				continue
			}
			col := &out.Clusters
			col.Provider, col.Name, col.State, col.DIGs = append(col.Provider, pi), append(col.Name, name), append(col.State, si), append(col.DIGs, n)
		}
	}
	return c.JSON(http.StatusOK, out)
}

// registeredClusters lists the cluster providers (only provider when named) and each
// one's clusters' names (not their documents): a query per provider, four at a time.
func (s *Server) registeredClusters(ctx context.Context, provider string) ([]string, [][]string, error) {
	pq := store.Query{Kind: model.KindClusterProvider}
	if provider != "" {
		pq.Name = provider
	}
	ps, err := s.Store.List(ctx, pq)
	if err != nil {
		return nil, nil, err
	}
	names := make([]string, len(ps))
	each := make([][]string, len(ps))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(4)
	for i, p := range ps {
		names[i] = p.Name
		g.Go(func() (err error) {
			each[i], err = s.Store.Names(gctx, store.Query{Parent: p.ID, Kind: model.KindCluster})
			return err
		})
	}
	return names, each, g.Wait()
}
