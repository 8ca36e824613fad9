package remote

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/temco/temco/contract"
)

// fakeAPI answers the controller routes for context c1, step 2, and records the edits.
type fakeAPI struct {
	put     *StepEdits
	putCode int
	token   string
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.token = r.Header.Get("Authorization")
	switch r.Method + " " + r.URL.Path {
	case "GET /v2/contexts/c1/steps/2/apps":
		_ = json.NewEncoder(w).Encode([]contract.App{{Name: "web", Clusters: []string{"p+c1"}}})
	case "GET /v2/contexts/c1/steps/2/apps/web/resources":
		if r.URL.Query().Get("cluster") != "p+c1" {
			http.Error(w, `{"message":"cluster"}`, http.StatusBadRequest)
			return
		}
		_ = json.NewEncoder(w).Encode([]contract.Resource{{APIVersion: "v1", Kind: "ConfigMap", Name: "cfg"}})
	case "PUT /v2/contexts/c1/steps/2/edits":
		f.put = &StepEdits{}
		_ = json.NewDecoder(r.Body).Decode(f.put)
		if f.putCode != 0 {
			w.WriteHeader(f.putCode)
			_, _ = w.Write([]byte(`{"message":"edit refused"}`))
			return
		}
		w.WriteHeader(http.StatusNoContent)
	default:
		http.NotFound(w, r)
	}
}

// patchAll patches every object of every app on its clusters.
var patchAll = contract.Func(func(ctx context.Context, c contract.Context) error {
	apps, err := c.Apps(ctx)
	if err != nil {
		return err
	}
	for _, a := range apps {
		objs, err := c.Resources(ctx, a.Name, a.Clusters[0])
		if err != nil {
			return err
		}
		for _, o := range objs {
			if err := c.Edit(contract.Edit{Op: contract.EditPatch, App: a.Name, Kind: o.Kind, Name: o.Name,
				Type: contract.PatchMerge, Data: json.RawMessage(`{}`)}); err != nil {
				return err
			}
		}
	}
	return nil
})

func run(t *testing.T, f *fakeAPI, ctrl contract.Controller) (contract.Result, error) {
	t.Helper()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	Register(env, API{URL: srv.URL, Token: "tok"}, ctrl)
	v, err := env.ExecuteActivity(contract.ActivityName, contract.Input{Controller: "lab", ContextID: "c1", Step: 2})
	var res contract.Result
	if err == nil {
		err = v.Get(&res)
	}
	return res, err
}

func TestActivityRecordsEditsThroughTheAPI(t *testing.T) {
	f := &fakeAPI{}
	res, err := run(t, f, patchAll)
	if err != nil {
		t.Fatal(err)
	}
	if res.Edits != 1 || f.put == nil || f.put.Controller != "lab" || f.put.Attempt != 1 || len(f.put.Edits) != 1 ||
		f.put.Edits[0].Name != "cfg" {
		t.Errorf("result %+v, recorded %+v", res, f.put)
	}
	if f.token != "Bearer tok" {
		t.Errorf("Authorization %q", f.token)
	}
}

// A refusal, and edits the API rejects, fail the operation; a server error is retried.
func TestRefusalsAreNotRetried(t *testing.T) {
	for name, tc := range map[string]struct {
		f         *fakeAPI
		ctrl      contract.Controller
		retryable bool
	}{
		"refusal": {&fakeAPI{}, contract.Func(func(context.Context, contract.Context) error {
			return contract.Refuse("no cluster has a GPU")
		}), false},
		"rejected edits": {&fakeAPI{putCode: http.StatusBadRequest}, patchAll, false},
		"server error":   {&fakeAPI{putCode: http.StatusServiceUnavailable}, patchAll, true},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := run(t, tc.f, tc.ctrl)
			var app *temporal.ApplicationError
			if !errors.As(err, &app) {
				t.Fatalf("error %v is not an application error", err)
			}
			if app.NonRetryable() == tc.retryable {
				t.Errorf("%v: non-retryable %v, want %v", err, app.NonRetryable(), !tc.retryable)
			}
			if !tc.retryable && app.Type() != contract.ErrorRefused {
				t.Errorf("type %q", app.Type())
			}
		})
	}
}
