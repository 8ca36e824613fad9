package api

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/temco/temco/features/policy/flow"
	"github.com/temco/temco/internal/adapters/egress"
	"github.com/temco/temco/internal/adapters/policyengine"
	"github.com/temco/temco/internal/core/model"
	"github.com/temco/temco/internal/core/policy"
	"github.com/temco/temco/internal/core/store"
)

// EMCO's policy controller (internal/core/policy, docs/policy.md): agents registered at
// /policy/agents (admin only: temco dials them), a DIG's policy intents, and temco's own
// project policies, the Rego modules of the embedded engine.
const (
	routeAgents          = "/policy/agents"
	routeAgent           = routeAgents + "/:policyAgent"
	routePolicyIntents   = routeDIG + "/policy-intents"
	routeProjectPolicies = "/projects/:project/policies"
)

// PolicyAgents run the agents' listeners (the policy feature's Starter, features/policy).
type PolicyAgents interface {
	// WakePolicyAgent has the agent's listener open its stream anew (started if start and
	// none runs); without start it stops the listener.
	WakePolicyAgent(ctx context.Context, in flow.PolicyAgentInput, start bool) error
}

func (s *Server) registerPolicy(g *echo.Group) {
	s.route(g, opDoc{method: http.MethodPost, path: routeAgent, summary: "Register (or re-register) a policy agent: temco listens to its events service",
		body: typeOf[policy.Agent](), code: http.StatusCreated, response: typeOf[policy.Agent]()}, s.registerAgent)
	s.route(g, opDoc{method: http.MethodGet, path: routeAgent, summary: "Get a policy agent", code: http.StatusOK,
		response: typeOf[policy.Agent]()}, s.getAgent)
	s.route(g, listDoc(opDoc{method: http.MethodGet, path: routeAgents, summary: "List policy agents", code: http.StatusOK,
		response: typeOf[[]policy.Agent]()}), s.listAgents)
	s.route(g, opDoc{method: http.MethodDelete, path: routeAgent, summary: "Deregister a policy agent: temco stops listening to it",
		code: http.StatusOK}, s.deleteAgent)
	s.route(g, opDoc{method: http.MethodGet, path: routeAgent + "/status", code: http.StatusOK, response: typeOf[flow.PolicyAgentStatus](),
		summary: "Whether temco is connected to a policy agent, and what it sent"}, s.agentStatus)

	register(g, s, kind[policy.Intent]{name: model.KindPolicyIntent, coll: routePolicyIntents, item: routePolicyIntents + "/:policyIntent",
		check: checkPolicyIntent, postItem: true})
	s.route(g, opDoc{method: http.MethodGet, path: routePolicyIntents + "/:policyIntent/status", code: http.StatusOK,
		response: typeOf[policyStatus](), summary: "A policy intent's evaluations and the workflows its decisions started"}, s.policyStatus)
	register(g, s, kind[policy.Module]{name: model.KindPolicy, coll: routeProjectPolicies, item: routeProjectPolicies + "/:policy",
		check: checkPolicyModule})
}

// agentBody is EMCO's agent body ({addr}; the path names the agent) with temco's binding
// and authentication (clusters, tls, token; policy.Agent; without clusters the agent is
// stored unbound), and the metadata temco apply sends with every document.
type agentBody struct {
	Metadata *model.Metadata     `json:"metadata,omitempty"`
	ID       string              `json:"id,omitempty"`
	Addr     string              `json:"addr"`
	Clusters []policy.ClusterRef `json:"clusters"`
	TLS      *policy.AgentTLS    `json:"tls,omitempty"`
	Token    string              `json:"token,omitempty"`
}

func (s *Server) registerAgent(c echo.Context) error {
	id, err := fill(c, routeAgent)
	if err != nil {
		return err
	}
	var b agentBody
	if err := readJSON(c, &b); err != nil {
		return err
	}
	if s.PolicyAgents == nil {
		return httpErr(http.StatusServiceUnavailable, "this temco runs no policy agents' listeners: feature policy is switched off (--disable-features)")
	}
	a := policy.Agent{ID: c.Param("policyAgent"), Addr: b.Addr, Clusters: b.Clusters, TLS: b.TLS, Token: b.Token}
	if a.Clusters == nil {
		a.Clusters = []policy.ClusterRef{} // EMCO's registration: unbound
	}
	if err := a.Validate(); err != nil {
		return badRequest("%v", err)
	}
	ctx := c.Request().Context()
	if err := s.checkAgentClusters(ctx, a.Clusters); err != nil {
		return err
	}
	token := a.Token
	if token != "" {
		a.Token = policy.TokenMask
	}
	body, err := json.Marshal(a)
	if err != nil {
		return err
	}
	for attempt := 1; ; attempt++ {
		old, err := s.Store.Get(ctx, id)
		if err != nil && store.CodeOf(err) != store.ErrNotFound {
			return fromStore(err)
		}
		if err == nil {
			old.Body = string(body) // the listener's status stays
			if old.Secret, err = s.agentToken(id, token, old.Secret); err != nil {
				return err
			}
			err = s.Store.Update(ctx, old)
		} else {
			d := &store.Doc{ID: id, Scope: scopeOf(id), Kind: model.KindPolicyAgent, Name: a.ID, Body: string(body), Owner: ownerOf(ctx)}
			if d.Secret, err = s.agentToken(id, token, nil); err != nil {
				return err
			}
			err = s.Store.Create(ctx, d)
		}
		if lostTo(err, http.StatusOK) && attempt < maxReplaceAttempts {
			continue
		}
		if err != nil {
			return fromStore(err)
		}
		break
	}
	if err := s.wakeAgent(ctx, id, a.Bound()); err != nil {
		return err
	}
	return c.JSONBlob(http.StatusCreated, body)
}

// checkAgentClusters refuses clusters that are not registered: the agent's events would
// reach no DIG through them.
func (s *Server) checkAgentClusters(ctx context.Context, clusters []policy.ClusterRef) error {
	for i, cl := range clusters {
		ok, err := s.Store.Exists(ctx, cl.ID())
		if err != nil {
			return err
		}
		if !ok {
			return badRequest("clusters[%d]: cluster provider %q has no cluster %q", i, cl.ClusterProvider, cl.Cluster)
		}
	}
	return nil
}

// agentToken is the agent's token sealed for its document (nil: none): the mask keeps
// the stored one, as artifact credentials' passwords do; an empty token removes it.
func (s *Server) agentToken(id, token string, stored []byte) ([]byte, error) {
	switch {
	case token == "":
		return nil, nil
	case token == policy.TokenMask && len(stored) == 0:
		return nil, badRequest("token is the mask %q but no token is stored to keep", policy.TokenMask)
	case token == policy.TokenMask:
		return stored, nil
	}
	plain, err := json.Marshal(struct{ Token string }{token})
	if err != nil {
		return nil, err
	}
	return s.Keys.Seal(plain, []byte(id))
}

// wakeAgent has the agent's listener follow its registration: started anew for a bound
// agent, stopped for one deregistered or registered again without clusters (EMCO's body).
func (s *Server) wakeAgent(ctx context.Context, id string, bound bool) error {
	if s.PolicyAgents == nil {
		return nil
	}
	in := flow.PolicyAgentInput{Name: id[strings.LastIndex(id, "/")+1:]}
	return wakeAfterChange(ctx, s, id, "listener", func(ctx context.Context, start bool) error {
		return s.PolicyAgents.WakePolicyAgent(ctx, in, start && bound)
	})
}

func (s *Server) getAgent(c echo.Context) error {
	id, err := fill(c, routeAgent)
	if err != nil {
		return err
	}
	d, err := s.Store.Get(c.Request().Context(), id)
	if err != nil {
		return fromStore(err)
	}
	return c.JSONBlob(http.StatusOK, shown(d))
}

func (s *Server) listAgents(c echo.Context) error {
	page, err := parseListPage(c)
	if err != nil {
		return err
	}
	keys := collKeys(routeAgents)
	docs, err := s.Store.List(c.Request().Context(), page.query(store.Query{Kind: model.KindPolicyAgent}, keys))
	if err != nil {
		return err
	}
	return listAnswer(c, page, docs, keys)
}

func (s *Server) deleteAgent(c echo.Context) error {
	id, err := fill(c, routeAgent)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	if err := s.Store.Delete(ctx, id); err != nil {
		return fromStore(err)
	}
	if err := s.wakeAgent(ctx, id, false); err != nil {
		return err
	}
	return c.NoContent(http.StatusOK) // EMCO's
}

func (s *Server) agentStatus(c echo.Context) error {
	id, err := fill(c, routeAgent)
	if err != nil {
		return err
	}
	d, err := s.Store.Get(c.Request().Context(), id)
	if err != nil {
		return fromStore(err)
	}
	var a policy.Agent
	if err := json.Unmarshal([]byte(d.Body), &a); err != nil {
		return err
	}
	st := flow.PolicyAgentStatus{Addr: a.Addr}
	if d.State != "" {
		if err := json.Unmarshal([]byte(d.State), &st); err != nil {
			return err
		}
		st.Addr = a.Addr
	}
	if !a.Bound() { // its last listener's record, if it had one, is history
		st.Connected, st.LastError = false, a.ID+" is "+policy.Unbound
	}
	return c.JSON(http.StatusOK, st)
}

// checkPolicyIntent refuses what could never be evaluated or acted on: the intent's own
// checks, an external engine not on the admin's list, a workflow intent the DIG lacks
// (it is a reference: it cannot be deleted while the policy intent names it).
func checkPolicyIntent(ctx context.Context, s *Server, r *request[policy.Intent]) error {
	spec := &r.res.Spec
	if err := spec.Validate(); err != nil {
		return badRequest("%v", err)
	}
	if err := s.checkPolicyEngine(ctx, projectOf(r.parent), spec.Policy); err != nil {
		return err
	}
	wf := r.parent + "/temporal-workflow-intents/" + spec.ActorArg.WorkFlowName
	ok, err := s.Store.Exists(ctx, wf)
	if err != nil {
		return err
	}
	if !ok {
		return badRequest("spec.actorArg.workFlowName: %s has no workflow intent %q: create it first (temporal-workflow-intents)", describe(r.parent), spec.ActorArg.WorkFlowName)
	}
	r.ref(wf)
	return nil
}

// checkPolicyEngine refuses an OPA server the intent names unless the project's policies
// stand in for it (then the path must be one they answer) or an admin allowed its host.
func (s *Server) checkPolicyEngine(ctx context.Context, project string, e policy.Engine) error {
	if e.EngineURL == "" {
		return nil
	}
	u, _ := e.URL() // validated with the intent
	servers, err := s.standsInFor(ctx, project)
	if err != nil {
		return err
	}
	if policy.StandsIn(servers, u) {
		if _, err := e.StandInPath(); err != nil {
			return badRequest("%v", err)
		}
		return nil
	}
	if !s.PolicyEngines.AllowsURL(u) {
		return httpErr(http.StatusForbidden, "spec.policy.engineUrl: %v (--policy-engine-allow); without an engineUrl, or naming a server "+
			"the project's policies stand in for (their spec.standsInFor), temco evaluates the project's policies itself", &egress.Refused{Host: u.Host})
	}
	return nil
}

// standsInFor are the OPA servers the project's policies stand in for.
func (s *Server) standsInFor(ctx context.Context, project string) ([]string, error) {
	docs, err := s.Store.List(ctx, store.Query{Parent: "/projects/" + project, Kind: model.KindPolicy})
	if err != nil {
		return nil, err
	}
	var servers []string
	for _, d := range docs {
		if m, err := model.Decode[policy.Module](d.Body); err == nil {
			servers = append(servers, m.Spec.StandsInFor...)
		}
	}
	return servers, nil
}

// projectOf is the project of a resource below /projects/<project>.
func projectOf(id string) string {
	rest, _ := strings.CutPrefix(id, "/projects/")
	project, _, _ := strings.Cut(rest, "/")
	return project
}

// checkPolicyModule compiles the module with the project's others, as the embedded engine
// will evaluate them together.
func checkPolicyModule(ctx context.Context, s *Server, r *request[policy.Module]) error {
	if err := r.res.Spec.Validate(); err != nil {
		return badRequest("%v", err)
	}
	docs, err := s.Store.List(ctx, store.Query{Parent: r.parent, Kind: model.KindPolicy})
	if err != nil {
		return err
	}
	others := make(map[string]string, len(docs))
	for _, d := range docs {
		if o, err := model.Decode[policy.Module](d.Body); err == nil {
			others["policies/"+d.Name] = o.Spec.Rego
		}
	}
	if err := policyengine.CheckWith("policies/"+r.res.Metadata.Name, r.res.Spec.Rego, others); err != nil {
		return badRequest("spec.rego: %v", err)
	}
	return nil
}

// policyStatus answers GET .../policy-intents/{name}/status.
type policyStatus struct {
	Name string `json:"name"`
	flow.PolicyStatus
}

func (s *Server) policyStatus(c echo.Context) error {
	id, err := fill(c, routePolicyIntents+"/:policyIntent")
	if err != nil {
		return err
	}
	d, err := s.Store.Get(c.Request().Context(), id)
	if err != nil {
		return fromStore(err)
	}
	out := policyStatus{Name: d.Name}
	if d.State != "" {
		if err := json.Unmarshal([]byte(d.State), &out.PolicyStatus); err != nil {
			return err
		}
	}
	if out.Decisions == nil { // none asked for action yet
		out.Decisions = []flow.PolicyDecision{}
	}
	return c.JSON(http.StatusOK, out)
}
