package api

import (
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/temco/temco/internal/appctx"
	"github.com/temco/temco/internal/digstate"
	"github.com/temco/temco/internal/lifecycle"
	"github.com/temco/temco/internal/model"
)

// The DIG status answer, in the format of EMCO's resource lifecycle and status document.
type statusResult struct {
	Name                string              `json:"name"`
	Project             string              `json:"project"`
	CompositeApp        string              `json:"composite-app-name,omitempty"`
	CompositeAppVersion string              `json:"composite-app-version,omitempty"`
	CompositeProfile    string              `json:"composite-profile-name,omitempty"`
	State               lifecycle.StateInfo `json:"state"`
	Instance            string              `json:"instance,omitempty"` // the context shown
	Revision            int64               `json:"revision,omitempty"`
	Status              string              `json:"status,omitempty"` // the context's status
	Error               string              `json:"error,omitempty"`
	RsyncStatus         map[string]int      `json:"rsync-status"`
	ClusterStatus       map[string]int      `json:"cluster-status,omitempty"`
	Resources           []appStatus         `json:"resources,omitempty"`
}

type appStatus struct {
	App      string          `json:"app-name"`
	Clusters []clusterStatus `json:"clusters"`
}

type clusterStatus struct {
	Name        string           `json:"name"` // provider+cluster
	ReadyStatus string           `json:"readyStatus,omitempty"`
	Resources   []resourceStatus `json:"resources"`
}

type gvk struct {
	Group   string `json:"Group"`
	Version string `json:"Version"`
	Kind    string `json:"Kind"`
}

type resourceStatus struct {
	GVK           gvk             `json:"GVK"`
	Name          string          `json:"Name"`
	Namespace     string          `json:"Namespace,omitempty"`
	Metadata      json.RawMessage `json:"metadata,omitempty"`
	Spec          json.RawMessage `json:"spec,omitempty"`
	Status        json.RawMessage `json:"status,omitempty"`
	RsyncStatus   string          `json:"rsync-status"`
	Attempts      int32           `json:"attempts,omitempty"`
	LastError     string          `json:"error,omitempty"`
	ClusterStatus string          `json:"cluster-status,omitempty"`
	Ready         *bool           `json:"ready,omitempty"`
}

// statusQuery is a parsed status request.
type statusQuery struct {
	cluster  bool   // type=cluster: read live from the clusters
	output   string // summary | all | detail
	instance string
	apps     []string
	clusters []string
	names    []string
}

func parseStatusQuery(c echo.Context) (statusQuery, error) {
	q := statusQuery{output: "all"}
	switch t := c.QueryParam("type"); t {
	case "", "rsync":
	case "cluster":
		q.cluster = true
	default:
		return q, badRequest("type=%q is invalid: use rsync or cluster", t)
	}
	switch o := c.QueryParam("output"); o {
	case "":
	case "summary", "all", "detail":
		q.output = o
	default:
		return q, badRequest("output=%q is invalid: use summary, all or detail", o)
	}
	params := c.QueryParams()
	q.instance = c.QueryParam("instance")
	q.apps, q.names = params["app"], params["resource"]
	for _, cl := range params["cluster"] {
		// "provider+cluster": a '+' left unescaped in a query string arrives as a space.
		q.clusters = append(q.clusters, strings.ReplaceAll(cl, " ", "+"))
	}
	return q, nil
}

func (s *Server) status(target targetFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		t, err := target(c)
		if err != nil {
			return err
		}
		q, err := parseStatusQuery(c)
		if err != nil {
			return err
		}
		return s.writeStatus(c, t, q)
	}
}

func (s *Server) writeStatus(c echo.Context, dig lifecycle.Target, q statusQuery) error {
	ctx := c.Request().Context()
	d, info, err := digstate.Load(ctx, s.Store, dig.ID())
	if err != nil {
		return fromStore(err)
	}
	out := &statusResult{Name: dig.DIG, Project: dig.Project, State: info, RsyncStatus: map[string]int{}}
	if dig.IsLogicalCloud() {
		out.Name = dig.LogicalCloud
	} else {
		spec, err := model.Decode[model.DIGSpec](d.Body)
		if err != nil {
			return err
		}
		out.CompositeApp, out.CompositeAppVersion, out.CompositeProfile = dig.CompositeApp, dig.Version, spec.Spec.CompositeProfile
	}
	ctxID := q.instance
	if ctxID == "" {
		ctxID = info.ContextID()
	} else if !slices.ContainsFunc(info.Actions, func(a lifecycle.Action) bool { return a.ContextID == ctxID }) {
		return httpErr(http.StatusNotFound, "instance %q is not a context of %s", ctxID, dig)
	}
	if ctxID == "" { // never instantiated
		return c.JSON(http.StatusOK, out)
	}
	header, err := s.Contexts.Get(ctx, ctxID)
	if errors.Is(err, appctx.ErrNotFound) {
		return httpErr(http.StatusNotFound, "the context %q of %s no longer exists", ctxID, dig)
	}
	if err != nil {
		return err
	}
	out.Instance, out.Revision, out.Status, out.Error = ctxID, header.Revision, header.Status, header.Error
	if q.cluster {
		if err := s.Ops.ReadClusters(ctx, dig, ctxID, q.output == "detail"); err != nil {
			return operationErr(err)
		}
		out.ClusterStatus = map[string]int{}
	}
	if q.output == "summary" && !q.cluster && len(q.clusters) == 0 && len(q.names) == 0 {
		// The dashboard query, at any scale: per-batch counts, not every cluster's document.
		if out.RsyncStatus, err = s.Contexts.Summary(ctx, ctxID, q.apps); err != nil {
			return err
		}
		return c.JSON(http.StatusOK, out)
	}
	placements, err := s.Contexts.Placements(ctx, ctxID, appctx.Filter{Apps: q.apps, Clusters: q.clusters})
	if err != nil {
		return err
	}
	var apps map[string]*appctx.App
	if q.output == "detail" && !q.cluster {
		if apps, err = s.Contexts.Apps(ctx, header); err != nil {
			return err
		}
	}
	for _, p := range placements {
		out.add(p, q, apps)
	}
	return c.JSON(http.StatusOK, out)
}

// add counts (and, unless output=summary, lists) one placement's resources.
func (out *statusResult) add(p *appctx.ClusterApp, q statusQuery, apps map[string]*appctx.App) {
	cs := clusterStatus{Name: p.Cluster, Resources: []resourceStatus{}}
	allReady := len(p.Live) > 0
	for i, r := range p.Resources {
		if len(q.names) > 0 && !slices.Contains(q.names, r.Name) {
			continue
		}
		out.RsyncStatus[r.Status]++
		rs := resourceStatus{GVK: gvk{r.Group, r.Version, r.Kind}, Name: r.Name, Namespace: r.Namespace,
			RsyncStatus: r.Status, Attempts: r.Attempts, LastError: r.Error}
		if q.cluster {
			live := appctx.Live{State: appctx.LiveUnknown}
			if i < len(p.Live) {
				live = p.Live[i]
			}
			out.ClusterStatus[live.State]++
			rs.ClusterStatus, allReady = live.State, allReady && live.Ready
			if live.State == appctx.LivePresent {
				rs.Ready = &live.Ready
			}
			if live.Error != "" && rs.LastError == "" {
				rs.LastError = live.Error
			}
			if q.output == "detail" && live.Detail != "" {
				var parts struct{ Metadata, Spec, Status json.RawMessage }
				if json.Unmarshal([]byte(live.Detail), &parts) == nil {
					rs.Metadata, rs.Spec, rs.Status = parts.Metadata, parts.Spec, parts.Status
				}
			}
		} else if apps != nil && apps[p.App] != nil && i < len(apps[p.App].Objects) {
			var parts struct{ Metadata, Spec json.RawMessage }
			if json.Unmarshal([]byte(apps[p.App].Objects[i].Manifest), &parts) == nil {
				rs.Metadata, rs.Spec = parts.Metadata, parts.Spec
			}
		}
		cs.Resources = append(cs.Resources, rs)
	}
	if q.output == "summary" || len(cs.Resources) == 0 {
		return
	}
	if q.cluster {
		cs.ReadyStatus = "NotReady"
		if allReady {
			cs.ReadyStatus = "Ready"
		}
	}
	if n := len(out.Resources); n == 0 || out.Resources[n-1].App != p.App {
		out.Resources = append(out.Resources, appStatus{App: p.App})
	}
	last := &out.Resources[len(out.Resources)-1]
	last.Clusters = append(last.Clusters, cs)
}
