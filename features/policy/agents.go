package policy

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/temco/temco/api"
	"github.com/temco/temco/features/policy/flow"
	"github.com/temco/temco/internal/core/model"
	"github.com/temco/temco/internal/core/policy"
	"github.com/temco/temco/internal/core/store"
)

// The policy agents' routes: EMCO's registration at /policy/agents/{name} (a POST that
// creates or replaces), with temco's binding to clusters and its sealed token, and the
// listener's status.

func (r routes) mountAgents() {
	agent := reflect.TypeFor[policy.Agent]()
	r.m.Route(api.Doc{Method: http.MethodPost, Path: routeAgent, Summary: "Register (or re-register) a policy agent: temco listens to its events service",
		Body: agent, Code: http.StatusCreated, Response: agent}, r.registerAgent)
	r.m.Route(api.Doc{Method: http.MethodGet, Path: routeAgent, Summary: "Get a policy agent", Code: http.StatusOK,
		Response: agent}, r.getAgent)
	r.m.Route(api.Doc{Method: http.MethodGet, Path: routeAgents, Summary: "List policy agents", Code: http.StatusOK,
		Response: reflect.TypeFor[[]policy.Agent](), List: true}, r.listAgents)
	r.m.Route(api.Doc{Method: http.MethodDelete, Path: routeAgent, Summary: "Deregister a policy agent: temco stops listening to it",
		Code: http.StatusOK}, r.deleteAgent)
	r.m.Route(api.Doc{Method: http.MethodGet, Path: routeAgent + "/status", Code: http.StatusOK, Response: reflect.TypeFor[flow.PolicyAgentStatus](),
		Summary: "Whether temco is connected to a policy agent, and what it sent"}, r.agentStatus)
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

func (r routes) registerAgent(c echo.Context) error {
	id, err := r.m.PathID(c, routeAgent)
	if err != nil {
		return err
	}
	var b agentBody
	if err := api.ReadJSON(c, &b); err != nil {
		return err
	}
	if r.agents == nil {
		return api.Unavailable("this temco runs no policy agents' listeners: feature policy is switched off (--disable-features)")
	}
	a := policy.Agent{ID: c.Param("policyAgent"), Addr: b.Addr, Clusters: b.Clusters, TLS: b.TLS, Token: b.Token}
	if a.Clusters == nil {
		a.Clusters = []policy.ClusterRef{} // EMCO's registration: unbound
	}
	if err := a.Validate(); err != nil {
		return api.BadRequest("%v", err)
	}
	ctx := c.Request().Context()
	if err := r.checkAgentClusters(ctx, a.Clusters); err != nil {
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
	// The listener's status stays with a registration replaced.
	if err := r.m.Upsert(ctx, id, model.KindPolicyAgent, a.ID, string(body), func(stored []byte) ([]byte, error) {
		return r.agentToken(id, token, stored)
	}); err != nil {
		return err
	}
	if err := r.wakeAgent(ctx, id, a.Bound()); err != nil {
		return err
	}
	return c.JSONBlob(http.StatusCreated, body)
}

// checkAgentClusters refuses clusters that are not registered: the agent's events would
// reach no DIG through them.
func (r routes) checkAgentClusters(ctx context.Context, clusters []policy.ClusterRef) error {
	for i, cl := range clusters {
		ok, err := r.m.Store().Exists(ctx, cl.ID())
		if err != nil {
			return err
		}
		if !ok {
			return api.BadRequest("clusters[%d]: cluster provider %q has no cluster %q", i, cl.ClusterProvider, cl.Cluster)
		}
	}
	return nil
}

// agentToken is the agent's token sealed for its document (nil: none): the mask keeps
// the stored one, as artifact credentials' passwords do; an empty token removes it.
func (r routes) agentToken(id, token string, stored []byte) ([]byte, error) {
	switch {
	case token == "":
		return nil, nil
	case token == policy.TokenMask && len(stored) == 0:
		return nil, api.BadRequest("token is the mask %q but no token is stored to keep", policy.TokenMask)
	case token == policy.TokenMask:
		return stored, nil
	}
	plain, err := json.Marshal(struct{ Token string }{token})
	if err != nil {
		return nil, err
	}
	return r.m.Keys().Seal(plain, []byte(id))
}

// wakeAgent has the agent's listener follow its registration: started anew for a bound
// agent, stopped for one deregistered or registered again without clusters (EMCO's body).
func (r routes) wakeAgent(ctx context.Context, id string, bound bool) error {
	if r.agents == nil {
		return nil
	}
	in := flow.PolicyAgentInput{Name: id[strings.LastIndex(id, "/")+1:]}
	return r.m.WakeAfterChange(ctx, id, "listener", func(ctx context.Context, start bool) error {
		return r.agents.WakePolicyAgent(ctx, in, start && bound)
	})
}

func (r routes) getAgent(c echo.Context) error {
	d, err := r.m.Get(c, routeAgent)
	if err != nil {
		return err
	}
	return c.JSONBlob(http.StatusOK, api.Shown(d))
}

func (r routes) listAgents(c echo.Context) error {
	return r.m.List(c, routeAgents, store.Query{Kind: model.KindPolicyAgent})
}

func (r routes) deleteAgent(c echo.Context) error {
	id, err := r.m.PathID(c, routeAgent)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	if err := r.m.Store().Delete(ctx, id); err != nil {
		return api.FromStore(err)
	}
	if err := r.wakeAgent(ctx, id, false); err != nil {
		return err
	}
	return c.NoContent(http.StatusOK) // EMCO's
}

func (r routes) agentStatus(c echo.Context) error {
	d, err := r.m.Get(c, routeAgent)
	if err != nil {
		return err
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
