package workflowmgr

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/temco/temco/api"
	"github.com/temco/temco/contract"
	"github.com/temco/temco/internal/adapters/egress"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/store"
)

// Temporal reaches the Temporal servers the routes name: temco's own, or another one a
// request names (EMCO's temporalServer), dialled for that request only and only when an
// admin allowed its address.
type Temporal struct {
	// Own is temco's Temporal with plain payloads: users' workflows, whose workers hold
	// none of temco's keys.
	Own client.Client
	// Builtin is temco's Temporal opening temco's sealed payloads too: read for a Relocate
	// intent's own runs only (nil: Own).
	Builtin client.Client
	Rules   Rules
	// Egress are the Temporal servers and EMCO workflow clients requests may name (nil:
	// none).
	Egress *egress.Allow
	Log    *slog.Logger // the SDK's log of clients dialled for a request; nil: discarded
}

// clientTimeout bounds a call of an EMCO workflow client: it starts a workflow and
// answers.
const clientTimeout = 30 * time.Second

// checkStart refuses what the caller of ctx may not start from an intent of scope.
func (t *Temporal) checkStart(ctx context.Context, s *Spec, scope Scope, hook bool) error {
	if err := t.Rules.Check(s, scope, api.CallerIsAdmin(ctx), hook); err != nil {
		var f *FieldError
		if errors.As(err, &f) && f.Forbidden {
			return api.Forbidden("%v", err)
		}
		return api.BadRequest("%v", err)
	}
	// tac never calls a hook's workflow client (temco starts hooks itself), so only a
	// workflow intent's is dialled and checked.
	if c := s.WorkflowClient; c != nil && c.EndpointName != "" && !hook {
		if addr := net.JoinHostPort(c.EndpointName, strconv.Itoa(c.EndpointPort)); !t.Egress.AllowsAddr(addr) {
			return api.Forbidden("spec.workflowClient: %v", &egress.Refused{Host: addr})
		}
	}
	return nil
}

// CheckHook is checkStart for tac's hook intents.
func (t *Temporal) CheckHook(ctx context.Context, s *Spec, scope Scope) error {
	return t.checkStart(ctx, s, scope, true)
}

// dial returns the client for server ("" is temco's own; builtin: the one opening
// temco's payloads) and how to release it.
func (t *Temporal) dial(ctx context.Context, server string, builtin bool) (client.Client, func(), error) {
	if server == "" {
		c := t.Own
		if builtin && t.Builtin != nil {
			c = t.Builtin
		}
		if c == nil {
			return nil, nil, fmt.Errorf("this api has no Temporal client")
		}
		return c, func() {}, nil
	}
	if err := t.Egress.Check(server); err != nil {
		return nil, nil, err
	}
	l := t.Log
	if l == nil {
		l = slog.New(slog.DiscardHandler)
	}
	dctx, cancel := egress.WithDialTimeout(ctx)
	defer cancel()
	c, err := client.DialContext(dctx, client.Options{HostPort: server, Logger: log.NewStructuredLogger(l)})
	if err != nil {
		l.Warn("a Temporal server a request named did not answer", "server", server, "error", err)
		return nil, nil, &egress.Unreachable{Host: server, Err: err}
	}
	return c, c.Close, nil
}

// Started names the run start began (empty when an EMCO workflow client started it).
type Started struct {
	WorkflowID, RunID string
}

// start starts the intent's workflow, as id (under scope): through the EMCO workflow
// client it names, else on temco's Temporal.
func (t *Temporal) start(ctx context.Context, s *Spec, scope Scope, id string) (Started, error) {
	ts := *s.Temporal
	ts.StartOptions.ID = id
	if workflowType(&ts) == lifecycle.WorkflowRelocate {
		params, err := BindRelocate(ts.Params, scope)
		if err != nil {
			return Started{}, err
		}
		ts.Params = params
	}
	if c := s.WorkflowClient; c.EndpointName != "" {
		return Started{WorkflowID: ts.StartOptions.ID}, t.invoke(ctx, c, &ts)
	}
	opts, workflowType := startOptions(&ts)
	run, err := t.Own.ExecuteWorkflow(ctx, opts, workflowType, ts.Params)
	if err != nil {
		return Started{}, err
	}
	return Started{WorkflowID: run.GetID(), RunID: run.GetRunID()}, nil
}

// startOptions maps the intent's options to the SDK's, and names the workflow type.
func startOptions(s *TemporalSpec) (client.StartWorkflowOptions, string) {
	o := s.StartOptions
	opts := client.StartWorkflowOptions{ID: o.ID, TaskQueue: o.TaskQueue,
		WorkflowExecutionTimeout: o.WorkflowExecutionTimeout, WorkflowRunTimeout: o.WorkflowRunTimeout,
		WorkflowTaskTimeout: o.WorkflowTaskTimeout, WorkflowIDReusePolicy: enumspb.WorkflowIdReusePolicy(o.WorkflowIDReusePolicy),
		WorkflowExecutionErrorWhenAlreadyStarted: o.WorkflowExecutionErrorWhenAlreadyStarted,
		RetryPolicy:                              o.RetryPolicy.sdk(), CronSchedule: o.CronSchedule, Memo: o.Memo}
	return opts, workflowType(s)
}

func (p *RetryPolicy) sdk() *temporal.RetryPolicy {
	if p == nil {
		return nil
	}
	return &temporal.RetryPolicy{InitialInterval: p.InitialInterval, BackoffCoefficient: p.BackoffCoefficient,
		MaximumInterval: p.MaximumInterval, MaximumAttempts: p.MaximumAttempts, NonRetryableErrorTypes: p.NonRetryableErrorTypes}
}

// invoke asks an EMCO workflow client to start the workflow, as EMCO does: it POSTs the
// temporal spec to /invoke/<workflowClientName> and expects 204. Only a client an admin
// allowed is called, without following redirects.
func (t *Temporal) invoke(ctx context.Context, c *ClientSpec, s *TemporalSpec) error {
	host := net.JoinHostPort(c.EndpointName, strconv.Itoa(c.EndpointPort))
	target := "http://" + host + "/invoke/" + url.PathEscape(s.WorkflowClientName)
	body, err := json.Marshal(s)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return &clientError{fmt.Sprintf("workflow client %s: the request cannot be made", host)}
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := t.Egress.HTTPClient(clientTimeout).Do(req)
	if err != nil {
		var refused *egress.Refused
		if errors.As(err, &refused) {
			return refused
		}
		if t.Log != nil {
			t.Log.Warn("an EMCO workflow client did not answer", "client", host, "error", err)
		}
		return &clientError{fmt.Sprintf("workflow client %s did not answer", host)}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		return &clientError{fmt.Sprintf("workflow client %s answered %s, not 204 No Content", host, resp.Status)}
	}
	return nil
}

// clientError is an EMCO workflow client that refused or did not answer (502).
type clientError struct{ msg string }

func (e *clientError) Error() string { return e.msg }

// Status is the answer of the status route, with EMCO's keys. The Temporal messages are
// in protojson (the Temporal CLI's JSON).
type Status struct {
	WorkflowID  string            `json:"workflowID"`
	RunID       string            `json:"runID,omitempty"`
	Description json.RawMessage   `json:"workflowExecutionDescription,omitempty"`
	History     []json.RawMessage `json:"workflowHistory,omitempty"`
	Result      any               `json:"workflowResult,omitempty"`
	QueryResult any               `json:"workflowQueryResult,omitempty"`
	// Error is how the workflow failed, when waitForResult found it failed, canceled,
	// terminated or timed out.
	Error string `json:"workflowError,omitempty"`
}

// status answers q as EMCO does, in its order: describe, history (waiting for the end if
// asked), query, result.
// builtin: the workflow is temco's (a Relocate intent's own), whose payloads are opened.
func (t *Temporal) status(ctx context.Context, q StatusQuery, builtin bool) (*Status, error) {
	c, release, err := t.dial(ctx, q.TemporalServer, builtin)
	if err != nil {
		return nil, err
	}
	defer release()
	out := &Status{WorkflowID: q.WorkflowID, RunID: q.RunID}
	if q.Describe {
		d, err := c.DescribeWorkflowExecution(ctx, q.WorkflowID, q.RunID)
		if err != nil {
			return nil, err
		}
		if out.Description, err = protojson.Marshal(d); err != nil {
			return nil, err
		}
	}
	if q.History {
		it := c.GetWorkflowHistory(ctx, q.WorkflowID, q.RunID, q.WaitForResult, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		out.History = []json.RawMessage{}
		for it.HasNext() {
			e, err := it.Next()
			if err != nil {
				return nil, err
			}
			b, err := protojson.Marshal(e)
			if err != nil {
				return nil, err
			}
			out.History = append(out.History, b)
		}
	}
	if q.QueryType != "" {
		args := make([]any, len(q.QueryParams))
		for i, p := range q.QueryParams {
			args[i] = p
		}
		resp, err := c.QueryWorkflowWithOptions(ctx, &client.QueryWorkflowWithOptionsRequest{WorkflowID: q.WorkflowID,
			RunID: q.RunID, QueryType: q.QueryType, Args: args, QueryRejectCondition: enumspb.QUERY_REJECT_CONDITION_NONE})
		if err != nil {
			return nil, fmt.Errorf("query %s: %w", q.QueryType, err)
		}
		if resp.QueryResult == nil || !resp.QueryResult.HasValue() {
			return nil, &queryError{fmt.Sprintf("query %s of workflow %s returned no result", q.QueryType, q.WorkflowID)}
		}
		if err := resp.QueryResult.Get(&out.QueryResult); err != nil {
			return nil, readable(fmt.Errorf("decode the result of query %s: %w", q.QueryType, err))
		}
	}
	if q.WaitForResult {
		err := c.GetWorkflow(ctx, q.WorkflowID, q.RunID).Get(ctx, &out.Result)
		var failed *temporal.WorkflowExecutionError
		switch {
		case errors.As(err, &failed):
			out.Error = failed.Error()
		case err != nil:
			return nil, readable(err)
		}
	}
	return out, nil
}

// unreadable is a payload sealed with temco's keys, which this route does not open
// (409): the workflow is temco's, not a user's.
type unreadable struct{}

func (unreadable) Error() string {
	return "its payloads are temco's own, sealed: this intent's routes read users' workflows only"
}

func readable(err error) error {
	if errors.Is(err, converter.ErrEncodingIsNotSupported) {
		return &unreadable{}
	}
	return err
}

// queryError is a query a workflow answered with nothing (400, as the query is the caller's).
type queryError struct{ msg string }

func (e *queryError) Error() string { return e.msg }

// cancel cancels, or terminates, the workflow r names.
func (t *Temporal) cancel(ctx context.Context, r CancelSpec) error {
	c, release, err := t.dial(ctx, r.TemporalServer, false)
	if err != nil {
		return err
	}
	defer release()
	if r.Terminate {
		return c.TerminateWorkflow(ctx, r.WorkflowID, r.RunID, r.Reason, r.Details...)
	}
	return c.CancelWorkflow(ctx, r.WorkflowID, r.RunID)
}

// Child is the workflow the workflow intent stored in d starts when a temco workflow
// starts it as a child (a policy intent's decision): the same type, task queue, id,
// options and argument as its start route, under the same rules (checked again: they may
// have changed since the intent was stored) as a tenant of the DIG's project: a policy
// acts for the project, whoever stored the intent. An intent that starts through an EMCO
// workflow client is refused: temco cannot make that call exactly once.
func Child(d *store.Doc, rules Rules) (contract.Workflow, error) {
	spec, err := specOf(d)
	if err != nil {
		return contract.Workflow{}, err
	}
	if spec.WorkflowClient.EndpointName != "" {
		return contract.Workflow{}, fmt.Errorf("workflow intent %s starts through the EMCO workflow client %s, which a policy cannot call exactly once: give it no spec.workflowClient endpoint",
			d.Name, spec.WorkflowClient.EndpointName)
	}
	scope := ScopeOf(d.ID)
	if err := rules.Check(spec, scope, false, false); err != nil {
		return contract.Workflow{}, fmt.Errorf("workflow intent %s: %w", d.Name, err)
	}
	t := spec.Temporal
	params := t.Params
	if workflowType(t) == lifecycle.WorkflowRelocate {
		if params, err = BindRelocate(params, scope); err != nil {
			return contract.Workflow{}, err
		}
	}
	arg, err := json.Marshal(params)
	if err != nil {
		return contract.Workflow{}, err
	}
	o := t.StartOptions
	w := contract.Workflow{Name: d.Name, Kind: "workflow intent", Type: workflowType(t), TaskQueue: o.TaskQueue,
		ID: intentWorkflowID(spec, scope, d), Arg: arg, ExecutionTimeout: o.WorkflowExecutionTimeout,
		RunTimeout: o.WorkflowRunTimeout, TaskTimeout: o.WorkflowTaskTimeout, IDReusePolicy: o.WorkflowIDReusePolicy}
	if p := o.RetryPolicy; p != nil {
		w.Retry = &contract.RetryPolicy{InitialInterval: p.InitialInterval, BackoffCoefficient: p.BackoffCoefficient,
			MaximumInterval: p.MaximumInterval, MaximumAttempts: p.MaximumAttempts, NonRetryableErrorTypes: p.NonRetryableErrorTypes}
	}
	return w, nil
}
