package api

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"unicode"

	"github.com/labstack/echo/v4"

	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/model"
	"github.com/temco/temco/internal/core/store"
)

const (
	routeClusters = "/cluster-providers/:clusterProvider/clusters"
	routeCluster  = lifecycle.RouteCluster
)

func (s *Server) registerClm(g *echo.Group) {
	register(g, s, kind[model.Empty]{name: model.KindClusterProvider,
		coll: "/cluster-providers", item: "/cluster-providers/:clusterProvider"})

	clusters := clusterRes
	res := typeOf[model.Resource[model.ClusterSpec]]()
	s.route(g, opDoc{method: http.MethodPost, path: clusters.coll, summary: "Register a cluster (metadata + kubeconfig file)", multipart: true,
		code: http.StatusCreated, response: res, creates: true}, func(c echo.Context) error { return create(c, s, clusters) })
	s.route(g, listDoc(opDoc{method: http.MethodGet, path: clusters.coll, summary: "List clusters (?label: names only; ?withLabels=true: with labels)",
		code: http.StatusOK, response: typeOf[[]model.Resource[model.ClusterSpec]](), query: []string{"label", "withLabels"}}), s.listClusters)
	s.route(g, opDoc{method: http.MethodGet, path: clusters.item, summary: "Get a cluster (never its kubeconfig)", code: http.StatusOK, response: res},
		func(c echo.Context) error { return get(c, s, clusters) })
	// Refused while its network intents may have objects on it (ncm), with their contexts.
	s.route(g, opDoc{method: http.MethodDelete, path: clusters.item, summary: "Delete a cluster", code: http.StatusNoContent},
		s.deleteOperated(routeCluster, lifecycle.ClusterNetworks.Machine))

	s.route(g, opDoc{method: http.MethodPost, path: routeClusterImports, summary: "Register many clusters at once, with their labels and logical clouds' references (temco's own)",
		description: clusterImportDoc, body: typeOf[clusterImport](), bulk: true, code: http.StatusCreated, response: typeOf[clusterImported](), creates: true},
		s.importClusters)

	label := typeOf[model.ClusterLabel]()
	s.route(g, opDoc{method: http.MethodPost, path: routeCluster + "/labels", summary: "Label a cluster", body: label,
		code: http.StatusCreated, response: label, creates: true}, s.createLabel)
	s.route(g, listDoc(opDoc{method: http.MethodGet, path: routeCluster + "/labels", summary: "List a cluster's labels",
		code: http.StatusOK, response: typeOf[[]model.ClusterLabel]()}), s.listLabels)
	s.route(g, opDoc{method: http.MethodGet, path: routeCluster + "/labels/:label", summary: "Get a cluster label",
		code: http.StatusOK, response: label}, s.getLabel)
	s.route(g, opDoc{method: http.MethodDelete, path: routeCluster + "/labels/:label", summary: "Remove a cluster label",
		code: http.StatusNoContent}, s.deleteLabel)

	register(g, s, kind[model.KVSpec]{name: model.KindClusterKV, kvKey: true,
		coll: routeCluster + "/kv-pairs", item: routeCluster + "/kv-pairs/:kvPair"})
	register(g, s, kind[model.KVSpec]{name: model.KindClusterSyncObj, kvKey: true, check: checkSyncObject,
		coll: "/cluster-providers/:clusterProvider/cluster-sync-objects", item: "/cluster-providers/:clusterProvider/cluster-sync-objects/:syncObject"})
	register(g, s, kind[model.ControllerSpec]{name: model.KindClmController, check: checkClmController,
		coll: "/clm-controllers", item: "/clm-controllers/:controller"})
}

// clusterRes is a cluster: registered with its kubeconfig, never replaced.
var clusterRes = kind[model.ClusterSpec]{name: model.KindCluster, coll: routeClusters, item: routeCluster, noPut: true,
	check: checkCluster, file: &fileSpec[model.ClusterSpec]{attach: attachKubeconfig}}

// fieldGitOps marks clusters reached through GitOps (queried when placing apps), and
// fieldAccess those reached by an agent (model.AccessAgent).
const (
	fieldGitOps = "gitOps"
	fieldAccess = "access"
)

// checkCluster requires a kubeconfig unless the cluster is reached through GitOps or by
// its agent, and records how it is reached (spec.access).
func checkCluster(_ context.Context, _ *Server, r *request[model.ClusterSpec]) error {
	sp := &r.res.Spec
	switch sp.Access {
	case "", model.AccessKubernetes, model.AccessGitOps, model.AccessAgent:
	default:
		return badRequest("spec.access %q is none of %q, %q and %q", sp.Access, model.AccessKubernetes, model.AccessGitOps, model.AccessAgent)
	}
	if sp.Access == model.AccessAgent {
		if sp.IsGitOps() {
			return badRequest("spec.access %q and spec.gitOps exclude each other: an agent cluster is reached by its agent alone", model.AccessAgent)
		}
		if r.hasFile {
			return badRequest("an agent cluster's kubeconfig stays in the cluster: send no \"file\" part with spec.access %q", model.AccessAgent)
		}
		r.field(fieldAccess, model.AccessAgent)
		return nil
	}
	if sp.Access != "" && sp.Access != sp.AccessOf() {
		return badRequest("spec.access %q does not match the registration: spec.gitOps makes it %q", sp.Access, sp.AccessOf())
	}
	sp.Access = sp.AccessOf()
	if sp.IsGitOps() {
		r.field(fieldGitOps, "true")
		return checkGitOps(sp.GitOps)
	}
	if !r.hasFile {
		return badRequest(`multipart part "file" (the cluster's kubeconfig) is missing`)
	}
	return nil
}

// attachKubeconfig validates the kubeconfig and stores it sealed, bound to the cluster's
// id. A GitOps cluster's file is ignored, as EMCO does: its clients send a placeholder.
func attachKubeconfig(_ context.Context, s *Server, r *request[model.ClusterSpec]) error {
	if r.res.Spec.IsGitOps() || r.res.Spec.Access == model.AccessAgent {
		return nil
	}
	sealed, err := sealKubeconfig(s, r.file, r.id)
	r.secret = sealed
	return err
}

// sealKubeconfig checks a kubeconfig and seals it, bound to the resource's id.
func sealKubeconfig(s *Server, file []byte, id string) ([]byte, error) {
	if err := CheckKubeconfig(file); err != nil {
		return nil, err
	}
	return s.Keys.Seal(file, []byte(id))
}

// listClusters lists clusters; ?label=X answers just the names of clusters with that
// label, ?withLabels=true adds each cluster's labels (both as in EMCO).
func (s *Server) listClusters(c echo.Context) error {
	coll, err := fill(c, routeClusters)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	provider := parentOf(coll)
	if err := s.mustExist(ctx, provider); err != nil {
		return err
	}
	page, err := parseListPage(c)
	if err != nil {
		return err
	}
	if label := c.QueryParam("label"); label != "" {
		keys := labelKeys(coll, label)
		labels, err := s.Store.List(ctx, page.query(store.Query{Scope: provider, Kind: model.KindClusterLabel, Name: label}, keys))
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, clusterNames(page.cut(c, labels, keys)))
	}
	keys := collKeys(coll)
	docs, err := s.Store.List(ctx, page.query(store.Query{Parent: provider, Kind: model.KindCluster}, keys))
	if err != nil {
		return err
	}
	docs = page.cut(c, docs, keys)
	if !strings.EqualFold(c.QueryParam("withLabels"), "true") {
		return c.JSONBlob(http.StatusOK, bodies(docs))
	}
	labels, err := s.Store.List(ctx, store.Query{Scope: provider, Kind: model.KindClusterLabel})
	if err != nil {
		return err
	}
	byCluster := map[string][]model.ClusterLabel{}
	for _, l := range labels {
		byCluster[l.Parent] = append(byCluster[l.Parent], model.ClusterLabel{Label: l.Name})
	}
	type withLabels struct {
		Metadata model.Metadata       `json:"metadata"`
		Labels   []model.ClusterLabel `json:"labels"`
	}
	out := make([]withLabels, 0, len(docs))
	for _, d := range docs {
		var r model.Resource[json.RawMessage]
		if err := json.Unmarshal([]byte(d.Body), &r); err != nil {
			return err
		}
		out = append(out, withLabels{Metadata: r.Metadata, Labels: append([]model.ClusterLabel{}, byCluster[d.ID]...)})
	}
	return c.JSON(http.StatusOK, out)
}

// clusterNames are the names of the clusters carrying labels.
func clusterNames(labels []*store.Doc) []string {
	names := make([]string, 0, len(labels))
	for _, l := range labels {
		names = append(names, l.Parent[strings.LastIndex(l.Parent, "/")+1:])
	}
	return names
}

func (s *Server) createLabel(c echo.Context) error {
	cluster, err := fill(c, routeCluster)
	if err != nil {
		return err
	}
	var l model.ClusterLabel
	if err := readJSON(c, &l); err != nil {
		return err
	}
	if err := model.ValidateName("clusterLabel", l.Label); err != nil {
		return badRequest("%v", err)
	}
	d := labelDoc(cluster, l.Label)
	d.Owner = ownerOf(c.Request().Context())
	if err := s.Store.Create(c.Request().Context(), d); err != nil {
		return fromStore(err)
	}
	return c.JSONBlob(http.StatusCreated, []byte(d.Body))
}

// labelDoc is the document of a cluster's label.
func labelDoc(cluster, label string) *store.Doc {
	body, _ := json.Marshal(model.ClusterLabel{Label: label})
	return &store.Doc{ID: cluster + "/labels/" + label, Parent: cluster, Scope: scopeOf(cluster),
		Kind: model.KindClusterLabel, Name: label, Body: string(body)}
}

func (s *Server) listLabels(c echo.Context) error {
	cluster, err := fill(c, routeCluster)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	if err := s.mustExist(ctx, cluster); err != nil {
		return err
	}
	page, err := parseListPage(c)
	if err != nil {
		return err
	}
	keys := collKeys(cluster + "/labels")
	docs, err := s.Store.List(ctx, page.query(store.Query{Parent: cluster, Kind: model.KindClusterLabel}, keys))
	if err != nil {
		return err
	}
	return listAnswer(c, page, docs, keys)
}

func (s *Server) getLabel(c echo.Context) error {
	id, err := fill(c, routeCluster+"/labels/:label")
	if err != nil {
		return err
	}
	d, err := s.Store.Get(c.Request().Context(), id)
	if err != nil {
		return fromStore(err)
	}
	return c.JSONBlob(http.StatusOK, shown(d))
}

func (s *Server) deleteLabel(c echo.Context) error {
	id, err := fill(c, routeCluster+"/labels/:label")
	if err != nil {
		return err
	}
	if err := s.Store.Delete(c.Request().Context(), id); err != nil {
		return fromStore(err)
	}
	return c.NoContent(http.StatusNoContent)
}

// checkController validates a controller registration.
// checkClmController: as in EMCO, cluster-lifecycle controllers need a host and a port.
func checkClmController(ctx context.Context, s *Server, r *request[model.ControllerSpec]) error {
	if r.res.Spec.Host == "" || r.res.Spec.Port == 0 {
		return badRequest("spec.host and spec.port are required")
	}
	return checkController(ctx, s, r)
}

func checkController(_ context.Context, _ *Server, r *request[model.ControllerSpec]) error {
	sp := r.res.Spec
	// As in EMCO, any type is accepted (rsync registers with none); only placement and
	// action controllers are run.
	switch {
	case len(sp.Type) > 48:
		return badRequest("spec.type is longer than 48 characters")
	case sp.Priority < 0 || sp.Priority > 100:
		return badRequest("spec.priority %d is out of range 0..100", sp.Priority)
	case sp.Port < 0 || sp.Port > 65535:
		return badRequest("spec.port %d is out of range 0..65535", sp.Port)
	case len(sp.TaskQueue) > 200 || strings.ContainsFunc(sp.TaskQueue, unicode.IsSpace):
		return badRequest("spec.taskQueue %q: a Temporal task queue name of at most 200 characters without spaces", sp.TaskQueue)
	}
	return nil
}

// secretMask replaces secret values (git tokens, client secrets) in answers.
const secretMask = "********"

// checkSyncObject: as in EMCO, a cluster sync object's values are strings (a GitOps
// repository's URL, branch, user and token, or a sync interval). Values of secret keys
// (token, secret, password) are sealed at rest and masked in every answer; a PUT that
// sends the mask back keeps the stored value.
func checkSyncObject(_ context.Context, s *Server, r *request[model.KVSpec]) error {
	if r.res.Spec.KV == nil {
		return badRequest("spec.kv is required: a list of single-key objects, e.g. [{\"branch\": \"main\"}]")
	}
	var old map[string]string
	if r.old != nil && len(r.old.Secret) > 0 {
		plain, err := s.Keys.Open(r.old.Secret, []byte(r.id))
		if err != nil {
			return err
		}
		if err := json.Unmarshal(plain, &old); err != nil {
			return err
		}
	}
	secrets := map[string]string{}
	for i, kv := range r.res.Spec.KV {
		for k, v := range kv {
			str, ok := v.(string)
			if !ok {
				return badRequest("spec.kv[%d].%s must be a string (quote numbers, e.g. \"60\")", i, k)
			}
			if !isSecretKey(k) {
				continue
			}
			if str == secretMask {
				if str, ok = old[k]; !ok {
					return badRequest("spec.kv[%d].%s is the mask %q but no value is stored to keep", i, k, secretMask)
				}
			}
			secrets[k] = str
			kv[k] = secretMask
		}
	}
	if len(secrets) == 0 {
		return nil
	}
	plain, err := json.Marshal(secrets)
	if err != nil {
		return err
	}
	r.secret, err = s.Keys.Seal(plain, []byte(r.id))
	return err
}

func isSecretKey(k string) bool {
	k = strings.ToLower(k)
	return strings.Contains(k, "token") || strings.Contains(k, "secret") || strings.Contains(k, "password")
}
