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
	"strconv"
	"strings"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"google.golang.org/protobuf/encoding/protojson"
)

// Temporal reaches the Temporal servers the routes name: temco's own, or another one a
// request names (EMCO's temporalServer), dialled for that request only.
type Temporal struct {
	Own  client.Client
	HTTP *http.Client // for EMCO workflow clients; nil: http.DefaultClient
	Log  *slog.Logger // the SDK's log of clients dialled for a request; nil: discarded
}

// dial returns the client for server ("" is temco's own) and how to release it.
func (t *Temporal) dial(ctx context.Context, server string) (client.Client, func(), error) {
	if server == "" {
		if t.Own == nil {
			return nil, nil, fmt.Errorf("this api has no Temporal client")
		}
		return t.Own, func() {}, nil
	}
	l := t.Log
	if l == nil {
		l = slog.New(slog.DiscardHandler)
	}
	c, err := client.DialContext(ctx, client.Options{HostPort: server, Logger: log.NewStructuredLogger(l)})
	if err != nil {
		return nil, nil, &remoteError{server: server, err: err}
	}
	return c, c.Close, nil
}

// remoteError is a Temporal server named by a request that could not be reached.
type remoteError struct {
	server string
	err    error
}

func (e *remoteError) Error() string {
	return fmt.Sprintf("failed to connect to Temporal server %s: %v", e.server, e.err)
}

// Started names the run start began (empty when an EMCO workflow client started it).
type Started struct {
	WorkflowID, RunID string
}

// start starts the intent's workflow: through the EMCO workflow client it names, else on
// temco's Temporal. defaultID is the workflow id when the intent has none.
func (t *Temporal) start(ctx context.Context, s *Spec, defaultID string) (Started, error) {
	if c := s.WorkflowClient; c.EndpointName != "" {
		return Started{WorkflowID: s.Temporal.StartOptions.ID}, t.invoke(ctx, c, s.Temporal)
	}
	opts, workflowType := startOptions(s.Temporal, defaultID)
	run, err := t.Own.ExecuteWorkflow(ctx, opts, workflowType, s.Temporal.Params)
	if err != nil {
		return Started{}, err
	}
	return Started{WorkflowID: run.GetID(), RunID: run.GetRunID()}, nil
}

// startOptions maps the intent's options to the SDK's, and names the workflow type.
func startOptions(s *TemporalSpec, defaultID string) (client.StartWorkflowOptions, string) {
	o := s.StartOptions
	opts := client.StartWorkflowOptions{ID: o.ID, TaskQueue: o.TaskQueue,
		WorkflowExecutionTimeout: o.WorkflowExecutionTimeout, WorkflowRunTimeout: o.WorkflowRunTimeout,
		WorkflowTaskTimeout: o.WorkflowTaskTimeout, WorkflowIDReusePolicy: enumspb.WorkflowIdReusePolicy(o.WorkflowIDReusePolicy),
		WorkflowExecutionErrorWhenAlreadyStarted: o.WorkflowExecutionErrorWhenAlreadyStarted,
		RetryPolicy:                              o.RetryPolicy.sdk(), CronSchedule: o.CronSchedule, Memo: o.Memo}
	if opts.ID == "" {
		opts.ID = defaultID
	}
	workflowType := s.WorkflowClientName
	if workflowType == "" {
		workflowType = o.TaskQueue
	}
	return opts, workflowType
}

func (p *RetryPolicy) sdk() *temporal.RetryPolicy {
	if p == nil {
		return nil
	}
	return &temporal.RetryPolicy{InitialInterval: p.InitialInterval, BackoffCoefficient: p.BackoffCoefficient,
		MaximumInterval: p.MaximumInterval, MaximumAttempts: p.MaximumAttempts, NonRetryableErrorTypes: p.NonRetryableErrorTypes}
}

// invoke asks an EMCO workflow client to start the workflow, as EMCO does: it POSTs the
// temporal spec to /invoke/<workflowClientName> and expects 204.
func (t *Temporal) invoke(ctx context.Context, c *ClientSpec, s *TemporalSpec) error {
	url := "http://" + net.JoinHostPort(c.EndpointName, strconv.Itoa(c.EndpointPort)) + "/invoke/" + s.WorkflowClientName
	body, err := json.Marshal(s)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return &clientError{fmt.Sprintf("workflow client %s: %v", url, err)}
	}
	req.Header.Set("Content-Type", "application/json")
	hc := t.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return &clientError{fmt.Sprintf("workflow client %s did not answer: %v", url, err)}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		return &clientError{fmt.Sprintf("workflow client %s answered %s, not 204 No Content", url, resp.Status)}
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
func (t *Temporal) status(ctx context.Context, q StatusQuery) (*Status, error) {
	c, release, err := t.dial(ctx, q.TemporalServer)
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
			return nil, fmt.Errorf("decode the result of query %s: %w", q.QueryType, err)
		}
	}
	if q.WaitForResult {
		err := c.GetWorkflow(ctx, q.WorkflowID, q.RunID).Get(ctx, &out.Result)
		var failed *temporal.WorkflowExecutionError
		switch {
		case errors.As(err, &failed):
			out.Error = failed.Error()
		case err != nil:
			return nil, err
		}
	}
	return out, nil
}

// queryError is a query a workflow answered with nothing (400, as the query is the caller's).
type queryError struct{ msg string }

func (e *queryError) Error() string { return e.msg }

// cancel cancels, or terminates, the workflow r names.
func (t *Temporal) cancel(ctx context.Context, r CancelSpec) error {
	c, release, err := t.dial(ctx, r.TemporalServer)
	if err != nil {
		return err
	}
	defer release()
	if r.Terminate {
		return c.TerminateWorkflow(ctx, r.WorkflowID, r.RunID, r.Reason, r.Details...)
	}
	return c.CancelWorkflow(ctx, r.WorkflowID, r.RunID)
}

// DefaultWorkflowID is the workflow id of an intent that names none, so that status and
// cancel find the run without being told: <project>.<compositeApp>.<version>.<dig>.<intent>,
// in EMCO's name syntax. intentID is the intent's store id.
func DefaultWorkflowID(intentID string) string {
	seg := strings.Split(strings.TrimPrefix(intentID, "/"), "/")
	if len(seg) != 9 { // projects/p/composite-apps/ca/v/deployment-intent-groups/dig/<intents>/name
		return strings.ReplaceAll(strings.TrimPrefix(intentID, "/"), "/", ".")
	}
	return strings.Join([]string{seg[1], seg[3], seg[4], seg[6], seg[8]}, ".")
}
