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
	"github.com/temco/temco/internal/adapters/egress"
	"github.com/temco/temco/internal/adapters/policyengine"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/model"
	"github.com/temco/temco/internal/core/policy"
	"github.com/temco/temco/internal/core/store"
)

// EMCO's policy controller's part of the api (internal/core/policy, docs/policy.md):
// agents registered at /policy/agents (admin only: temco dials them; agents.go), a DIG's
// policy intents, and temco's own project policies, the Rego modules of the embedded
// engine.
const (
	routeAgents          = "/policy/agents"
	routeAgent           = routeAgents + "/:policyAgent"
	routePolicyIntents   = lifecycle.RouteDIG + "/policy-intents"
	routePolicyIntent    = routePolicyIntents + "/:policyIntent"
	routeProjectPolicies = "/projects/:project/policies"
)

// Agents run the agents' listeners: the Starter, or a test's.
type Agents interface {
	// WakePolicyAgent has the agent's listener open its stream anew (started if start and
	// none runs); without start it stops the listener.
	WakePolicyAgent(ctx context.Context, in flow.PolicyAgentInput, start bool) error
}

// Extension is policy intents' part of the api over ag, a policy intent naming an OPA
// server only if engines allows it (nil: none); ag nil: the feature is switched off, and
// registering an agent answers 503 (intents and policies are still served and checked).
func Extension(ag Agents, engines *egress.Allow) api.Extension {
	return api.Extension{Name: "policy", Mount: func(m *api.Mount) {
		r := routes{m: m, agents: ag, engines: engines}
		r.mountAgents()
		m.Kind(api.KindDef[policy.Intent]{Name: model.KindPolicyIntent, Path: "/policy-intents", Param: "policyIntent",
			Check: r.checkIntent, PostItem: true})
		m.Route(api.Doc{Method: http.MethodGet, Path: routePolicyIntent + "/status", Code: http.StatusOK,
			Response: reflect.TypeFor[intentStatus](), Summary: "A policy intent's evaluations and the workflows its decisions started"}, r.intentStatus)
		m.Kind(api.KindDef[policy.Module]{Name: model.KindPolicy, Root: true, Path: routeProjectPolicies, Param: "policy",
			Check: checkModule})
	}}
}

type routes struct {
	m       *api.Mount
	agents  Agents
	engines *egress.Allow
}

// checkIntent refuses what could never be evaluated or acted on: the intent's own checks,
// an external engine not on the admin's list, a workflow intent the DIG lacks (it is a
// reference: it cannot be deleted while the policy intent names it).
func (r routes) checkIntent(ctx context.Context, q *api.Request[policy.Intent]) error {
	spec := &q.Resource().Spec
	if err := spec.Validate(); err != nil {
		return api.BadRequest("%v", err)
	}
	if err := r.checkEngine(ctx, projectOf(q.Parent()), spec.Policy); err != nil {
		return err
	}
	wf := q.Parent() + "/temporal-workflow-intents/" + spec.ActorArg.WorkFlowName
	ok, err := q.Store().Exists(ctx, wf)
	if err != nil {
		return err
	}
	if !ok {
		return api.BadRequest("spec.actorArg.workFlowName: %s has no workflow intent %q: create it first (temporal-workflow-intents)", api.Describe(q.Parent()), spec.ActorArg.WorkFlowName)
	}
	q.Ref(wf)
	return nil
}

// checkEngine refuses an OPA server the intent names unless the project's policies stand
// in for it (then the path must be one they answer) or an admin allowed its host.
func (r routes) checkEngine(ctx context.Context, project string, e policy.Engine) error {
	if e.EngineURL == "" {
		return nil
	}
	u, _ := e.URL() // validated with the intent
	servers, err := r.standsInFor(ctx, project)
	if err != nil {
		return err
	}
	if policy.StandsIn(servers, u) {
		if _, err := e.StandInPath(); err != nil {
			return api.BadRequest("%v", err)
		}
		return nil
	}
	if !r.engines.AllowsURL(u) {
		return api.Forbidden("spec.policy.engineUrl: %v (--policy-engine-allow); without an engineUrl, or naming a server "+
			"the project's policies stand in for (their spec.standsInFor), temco evaluates the project's policies itself", &egress.Refused{Host: u.Host})
	}
	return nil
}

// standsInFor are the OPA servers the project's policies stand in for.
func (r routes) standsInFor(ctx context.Context, project string) ([]string, error) {
	docs, err := r.m.Store().List(ctx, store.Query{Parent: "/projects/" + project, Kind: model.KindPolicy})
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

// checkModule compiles the module with the project's others, as the embedded engine will
// evaluate them together.
func checkModule(ctx context.Context, q *api.Request[policy.Module]) error {
	res := q.Resource()
	if err := res.Spec.Validate(); err != nil {
		return api.BadRequest("%v", err)
	}
	docs, err := q.Store().List(ctx, store.Query{Parent: q.Parent(), Kind: model.KindPolicy})
	if err != nil {
		return err
	}
	others := make(map[string]string, len(docs))
	for _, d := range docs {
		if o, err := model.Decode[policy.Module](d.Body); err == nil {
			others["policies/"+d.Name] = o.Spec.Rego
		}
	}
	if err := policyengine.CheckWith("policies/"+res.Metadata.Name, res.Spec.Rego, others); err != nil {
		return api.BadRequest("spec.rego: %v", err)
	}
	return nil
}

// intentStatus answers GET .../policy-intents/{name}/status.
type intentStatus struct {
	Name string `json:"name"`
	flow.PolicyStatus
}

func (r routes) intentStatus(c echo.Context) error {
	d, err := r.m.Get(c, routePolicyIntent)
	if err != nil {
		return err
	}
	out := intentStatus{Name: d.Name}
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
