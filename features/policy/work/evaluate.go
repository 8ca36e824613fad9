package work

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/temco/temco/contract"
	"github.com/temco/temco/controllers/workflowmgr"
	"github.com/temco/temco/features/policy/flow"
	"github.com/temco/temco/internal/adapters/policyengine"
	"github.com/temco/temco/internal/adapters/sandbox"
	"github.com/temco/temco/internal/core/events"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/model"
	"github.com/temco/temco/internal/core/policy"
	"github.com/temco/temco/internal/core/store"
)

// evaluationTimeout bounds one evaluation, embedded or external.
const evaluationTimeout = 10 * time.Second

// maxAnswerBytes bounds what an external engine's answer may be.
const maxAnswerBytes = 1 << 20

// EvaluatePolicy evaluates the event's policy intent as it is stored now: Gone when it no
// longer exists or names another event; else the verdict and the workflow intent it names.
// A policy that cannot be evaluated (it does not compile, its answer is not a verdict, its
// engine is not allowed) fails without retry.
func (a *Activities) EvaluatePolicy(ctx context.Context, in flow.PolicyEvaluateInput) (flow.PolicyVerdict, error) {
	id := in.DIG.ID() + "/policy-intents/" + in.Event.Intent
	d, err := a.Store.Get(ctx, id)
	if store.CodeOf(err) == store.ErrNotFound {
		return flow.PolicyVerdict{Gone: true}, nil
	}
	if err != nil {
		return flow.PolicyVerdict{}, err
	}
	r, err := model.Decode[policy.Intent](d.Body)
	if err != nil {
		return flow.PolicyVerdict{}, permanent(err.Error())
	}
	spec := r.Spec
	if !spec.Event.Matches(in.Event.EventID, in.Event.Source) || spec.ActorArg == nil {
		return flow.PolicyVerdict{Gone: true}, nil // changed since the event came
	}
	keys := policy.IntentKeys{PolicyIntentID: d.Name, Project: in.DIG.Project, CompositeApp: in.DIG.CompositeApp,
		CompositeAppVersion: in.DIG.Version, DeploymentIntentGroup: in.DIG.DIG}
	input, err := policy.Input(keys, spec, in.Event.AgentSpec, in.Event.Payload)
	if err != nil {
		return flow.PolicyVerdict{}, permanent(err.Error())
	}
	var out flow.PolicyVerdict
	var answer []byte
	out.Engine, answer, err = a.ask(ctx, in.DIG.Project, spec.Policy, input)
	if err != nil {
		return out, err
	}
	v, err := policy.VerdictOf(answer, spec.Policy.NamespaceOrDefault())
	if err != nil {
		return out, permanent(err.Error())
	}
	out.ActionRequired, out.Workflow = v.ActionRequired, spec.ActorArg.WorkFlowName
	if v.WorkflowName != "" {
		out.Workflow = v.WorkflowName
	}
	return out, nil
}

// ask evaluates input with the intent's engine (which it names, for the record): the
// project's policies when the intent names none or names an OPA server they stand in for,
// else that server, on an allowed host only.
func (a *Activities) ask(ctx context.Context, project string, e policy.Engine, input json.RawMessage) (string, []byte, error) {
	if e.EngineURL == "" {
		query, _ := e.Path() // validated when the intent was stored
		answer, err := a.evaluateEmbedded(ctx, project, query, input)
		return "embedded", answer, err
	}
	u, err := e.URL()
	if err != nil {
		return e.EngineURL, nil, permanent(err.Error())
	}
	ps, err := a.policies(ctx, project)
	if err != nil {
		return u.String(), nil, err
	}
	if policy.StandsIn(ps.standsInFor, u) {
		engine := "embedded, for " + u.Host
		query, err := e.StandInPath()
		if err != nil {
			return engine, nil, permanent(err.Error())
		}
		answer, err := a.evaluate(ctx, project, ps.modules, query, input)
		return engine, answer, err
	}
	ectx, cancel := context.WithTimeout(ctx, evaluationTimeout)
	defer cancel()
	return a.external(ectx, e, input)
}

// evaluateEmbedded evaluates the project's policies at query with the embedded engine.
func (a *Activities) evaluateEmbedded(ctx context.Context, project, query string, input json.RawMessage) ([]byte, error) {
	ps, err := a.policies(ctx, project)
	if err != nil {
		return nil, err
	}
	return a.evaluate(ctx, project, ps.modules, query, input)
}

// evaluate evaluates modules at query, in the sandbox when there is one. The same policy
// fails the same way again: its failures, its need of more memory or time than an
// evaluation may take included, are permanent; the sandbox failing to run is not the
// policy's and is tried again.
func (a *Activities) evaluate(ctx context.Context, project string, modules map[string]string, query string, input json.RawMessage) ([]byte, error) {
	if len(modules) == 0 {
		return nil, permanent(fmt.Sprintf("project %s has no policies for the embedded engine: create one (POST /v2/projects/%s/policies) or give spec.policy.engineUrl", project, project))
	}
	var answer []byte
	var err error
	if a.Sandbox != nil {
		answer, err = a.Sandbox.Evaluate(ctx, modules, query, input, evaluationTimeout)
	} else {
		ectx, cancel := context.WithTimeout(ctx, evaluationTimeout)
		defer cancel()
		answer, err = policyengine.Evaluate(ectx, modules, query, input)
	}
	switch {
	case err == nil:
		return answer, nil
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case errors.As(err, new(*sandbox.Fault)):
		return nil, fmt.Errorf("embedded policy engine: %w", err)
	}
	return nil, permanent(err.Error())
}

// projectPolicies are a project's policies: their modules for the embedded engine, and
// the OPA servers they stand in for.
type projectPolicies struct {
	modules     map[string]string
	standsInFor []string
}

// policies reads the project's policies.
func (a *Activities) policies(ctx context.Context, project string) (projectPolicies, error) {
	docs, err := a.Store.List(ctx, store.Query{Parent: "/projects/" + project, Kind: model.KindPolicy})
	if err != nil {
		return projectPolicies{}, err
	}
	ps := projectPolicies{modules: make(map[string]string, len(docs))}
	for _, d := range docs {
		r, err := model.Decode[policy.Module](d.Body)
		if err != nil {
			return projectPolicies{}, permanent(err.Error())
		}
		ps.modules["policies/"+d.Name] = r.Spec.Rego
		ps.standsInFor = append(ps.standsInFor, r.Spec.StandsInFor...)
	}
	return ps, nil
}

// external asks an OPA server on the allow-list, as EMCO does: POST {"input": ...} to
// <engineUrl>/<policyName>, 200 with the answer expected.
func (a *Activities) external(ctx context.Context, e policy.Engine, input json.RawMessage) (string, []byte, error) {
	u, err := e.URL()
	if err != nil {
		return "", nil, permanent(err.Error())
	}
	engine := u.String()
	if !a.Engines.AllowsURL(u) {
		return engine, nil, permanent(fmt.Sprintf("policy engine %s is not on the hosts an admin allowed (--policy-engine-allow)", u.Host))
	}
	body, err := json.Marshal(map[string]json.RawMessage{"input": input})
	if err != nil {
		return engine, nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, engine, bytes.NewReader(body))
	if err != nil {
		return engine, nil, permanent(err.Error())
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := a.Engines.HTTPClient(evaluationTimeout).Do(req)
	if err != nil {
		return engine, nil, fmt.Errorf("policy engine %s: %w", u.Host, err)
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes+1))
	switch {
	case err != nil:
		return engine, nil, fmt.Errorf("policy engine %s: read the answer: %w", u.Host, err)
	case len(answer) > maxAnswerBytes:
		return engine, nil, permanent(fmt.Sprintf("policy engine %s answered more than %d bytes", u.Host, maxAnswerBytes))
	case resp.StatusCode >= 500:
		return engine, nil, fmt.Errorf("policy engine %s answered %s", u.Host, resp.Status)
	case resp.StatusCode != http.StatusOK:
		return engine, nil, permanent(fmt.Sprintf("policy engine %s answered %s: %s", u.Host, resp.Status, bytes.TrimSpace(answer[:min(len(answer), 512)])))
	}
	return engine, answer, nil
}

// PolicyAction is the workflow a decision starts: workflow intent in.Workflow of the DIG
// (workflowmgr.Child), refused when it does not exist or may not start from here: on a
// task queue the DIG's project was not granted, whoever stored the intent.
func (a *Activities) PolicyAction(ctx context.Context, in flow.PolicyActionInput) (contract.Workflow, error) {
	id := in.DIG.ID() + "/temporal-workflow-intents/" + in.Workflow
	d, err := a.Store.Get(ctx, id)
	if store.CodeOf(err) == store.ErrNotFound {
		return contract.Workflow{}, permanent(fmt.Sprintf("%s has no workflow intent %s", in.DIG, in.Workflow))
	}
	if err != nil {
		return contract.Workflow{}, err
	}
	w, err := workflowmgr.Child(d, workflowmgr.Rules{OwnTaskQueue: a.OwnQueue, Grants: a.Grants})
	if err != nil {
		return contract.Workflow{}, permanent(err.Error())
	}
	return w, nil
}

// RecordPolicy adds a decision to its policy intent's record (none when the intent is
// gone); a write that lost to another is read and written again.
func (a *Activities) RecordPolicy(ctx context.Context, rec flow.PolicyRecord) error {
	id := rec.DIG.ID() + "/policy-intents/" + rec.Intent
	for {
		d, err := a.Store.Get(ctx, id)
		if store.CodeOf(err) == store.ErrNotFound {
			return nil
		}
		if err != nil {
			return err
		}
		var st flow.PolicyStatus
		if d.State != "" {
			_ = json.Unmarshal([]byte(d.State), &st) // a record that does not decode starts again
		}
		st.Evaluations++
		dec := rec.Decision
		st.Last = &dec
		if dec.ActionRequired {
			st.Actions++
			st.Decisions = append(st.Decisions, dec)
			if n := len(st.Decisions) - flow.PolicyDecisionsKept; n > 0 {
				st.Decisions = st.Decisions[n:]
			}
		}
		state, err := json.Marshal(st)
		if err != nil {
			return err
		}
		d.State = string(state)
		err = a.Store.SetState(ctx, d)
		if store.CodeOf(err) == store.ErrConflict {
			continue
		}
		if err != nil || !dec.ActionRequired {
			return err
		}
		return a.Events.Emit(ctx, actionEvent(rec))
	}
}

// actionEvent raises a decision that asked for action, with what it did; its id is the
// intent's and the policy event's.
func actionEvent(rec flow.PolicyRecord) events.Event {
	dec := rec.Decision
	e := events.Event{ID: events.ID(rec.DIG.ID(), rec.Intent, dec.EventID, dec.ContextID), Type: events.PolicyAction, Time: dec.At,
		Details: map[string]any{"policyIntent": rec.Intent, "eventId": dec.EventID, "agent": dec.Agent, "workflow": dec.Workflow,
			"workflowId": dec.WorkflowID, "outcome": dec.Outcome}}
	e.About(rec.DIG.ID())
	e.Summary = fmt.Sprintf("policy intent %q of %s asked for action (workflow %q): %s", rec.Intent, e.Name(), dec.Workflow, dec.Outcome)
	if dec.Error != "" {
		e.Details["error"] = dec.Error
		e.Summary += ": " + dec.Error
	}
	return e
}

func permanent(msg string) error {
	return temporal.NewNonRetryableApplicationError(msg, lifecycle.ErrInvalidInput, nil)
}
