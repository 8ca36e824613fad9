// Package remote runs an intent controller outside temco's process: a Temporal worker on
// the controller's own task queue implements the RunController activity, and the
// controller reads the context and records its edits through temco's REST API. It needs
// the Temporal frontend and the API's address (and a token when the API requires one),
// never temco's store.
//
//	c, _ := client.Dial(client.Options{HostPort: "temporal:7233"})
//	err := remote.Serve(ctx, c, "my-controller", remote.API{URL: "http://temco:9015"}, myController)
//
// Register it in /v2/controllers with spec.taskQueue "my-controller" and name it in a DIG's
// intents.
package remote

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"

	"github.com/temco/temco/contract"
)

// API is how a controller reaches temco's REST API.
type API struct {
	URL   string       // e.g. http://temco:9015
	Token string       // bearer token, when the API requires one
	HTTP  *http.Client // nil: http.DefaultClient
}

// StepEdits is the body of PUT /v2/contexts/{context}/steps/{step}/edits: the whole set of
// edits of one controller step, replacing what an earlier attempt recorded.
type StepEdits struct {
	Controller string          `json:"controller"`
	Parent     string          `json:"parent,omitempty"` // contract.Input.Parent
	Intent     string          `json:"intent,omitempty"`
	Attempt    int32           `json:"attempt"`
	Edits      []contract.Edit `json:"edits"`
}

// Paths of the API a controller uses.
func stepPath(ctxID string, step int) string {
	return "/v2/contexts/" + url.PathEscape(ctxID) + "/steps/" + strconv.Itoa(step)
}

// Serve runs a worker for c on taskQueue until ctx ends.
func Serve(ctx context.Context, c client.Client, taskQueue string, api API, ctrl contract.Controller) error {
	w := worker.New(c, taskQueue, worker.Options{})
	Register(w, api, ctrl)
	if err := w.Start(); err != nil {
		return err
	}
	<-ctx.Done()
	w.Stop()
	return nil
}

// Register registers ctrl as the RunController activity of w.
func Register(w worker.ActivityRegistry, api API, ctrl contract.Controller) {
	w.RegisterActivityWithOptions(Activity(api, ctrl), activity.RegisterOptions{Name: contract.ActivityName})
}

// Activity is ctrl as the RunController activity: it gives ctrl a view of the context
// served by the API, heartbeats while ctrl runs, and records its edits as the step's
// layer (hooks, which may not edit, record nothing). A refusal, or edits the API rejects, fail the operation without retries; any
// other error is retried by Temporal.
func Activity(api API, ctrl contract.Controller) func(context.Context, contract.Input) (contract.Result, error) {
	return func(ctx context.Context, in contract.Input) (contract.Result, error) {
		v := &view{api: api, in: in}
		stop := Heartbeat(ctx)
		err := contract.Dispatch(ctx, ctrl, v)
		stop()
		if err != nil {
			return contract.Result{}, refused(err)
		}
		if in.Hook != contract.HookRun {
			return contract.Result{Workflows: v.workflows}, nil
		}
		body := StepEdits{Controller: in.Controller, Parent: in.Parent, Intent: in.Intent, Attempt: activity.GetInfo(ctx).Attempt, Edits: v.edits}
		if body.Edits == nil {
			body.Edits = []contract.Edit{}
		}
		if err := api.do(ctx, http.MethodPut, stepPath(in.ContextID, in.Step)+"/edits", nil, body, nil); err != nil {
			return contract.Result{}, refused(err)
		}
		return contract.Result{Edits: len(v.edits), Workflows: v.workflows}, nil
	}
}

// refused makes a refusal and a rejected request non-retryable.
func refused(err error) error {
	var r *contract.Refusal
	var s *StatusError
	if errors.As(err, &r) || errors.As(err, &s) && s.Code >= 400 && s.Code < 500 && s.Code != http.StatusTooManyRequests {
		return temporal.NewNonRetryableApplicationError(err.Error(), contract.ErrorRefused, nil)
	}
	return err
}

// Heartbeat heartbeats a controller activity every 5 s until the returned func is called,
// so that a controller process that dies is noticed within the heartbeat timeout.
func Heartbeat(ctx context.Context) func() {
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(5 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				activity.RecordHeartbeat(ctx)
			}
		}
	}()
	return func() { close(done) }
}

// view is the contract.Context of one run, read through the API. Edits are checked by the
// API when the run records them, so an edit temco refuses fails the run at its end.
type view struct {
	api       API
	in        contract.Input
	edits     []contract.Edit
	workflows []contract.Workflow
}

func (v *view) Input() contract.Input { return v.in }

func (v *view) Apps(ctx context.Context) ([]contract.App, error) {
	var out []contract.App
	return out, v.api.do(ctx, http.MethodGet, stepPath(v.in.ContextID, v.in.Step)+"/apps", nil, nil, &out)
}

func (v *view) Resources(ctx context.Context, app, cluster string) ([]contract.Resource, error) {
	var out []contract.Resource
	q := url.Values{}
	if cluster != "" {
		q.Set("cluster", cluster)
	}
	path := stepPath(v.in.ContextID, v.in.Step) + "/apps/" + url.PathEscape(app) + "/resources"
	return out, v.api.do(ctx, http.MethodGet, path, q, nil, &out)
}

func (v *view) Clusters(ctx context.Context, provider, label string) ([]contract.Cluster, error) {
	var out []contract.Cluster
	q := url.Values{"provider": {provider}}
	if label != "" {
		q.Set("label", label)
	}
	return out, v.api.do(ctx, http.MethodGet, "/v2/contexts/"+url.PathEscape(v.in.ContextID)+"/clusters", q, nil, &out)
}

func (v *view) Edit(edits ...contract.Edit) error {
	if v.in.Hook != contract.HookRun {
		return contract.Refuse("controller %s: the %s hook sees the deployed context and may not edit it", v.in.Controller, v.in.Hook)
	}
	v.edits = append(v.edits, edits...)
	return nil
}

func (v *view) StartWorkflows(w ...contract.Workflow) error {
	if err := contract.CheckWorkflows(v.in, w); err != nil {
		return err
	}
	v.workflows = append(v.workflows, w...)
	return nil
}

// StatusError is an answer of the API other than success.
type StatusError struct {
	Code    int
	Message string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("temco API: %s (HTTP %d)", e.Message, e.Code)
}

// do sends a request with a JSON body (nil: none) and decodes a JSON answer into out.
func (a API) do(ctx context.Context, method, path string, q url.Values, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	u := a.URL + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if a.Token != "" {
		req.Header.Set("Authorization", "Bearer "+a.Token)
	}
	hc := a.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode >= 300 {
		var e struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(data, &e) != nil || e.Message == "" {
			e.Message = http.StatusText(resp.StatusCode)
		}
		return &StatusError{Code: resp.StatusCode, Message: e.Message}
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(data, out)
}
