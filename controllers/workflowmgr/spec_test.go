package workflowmgr

import (
	"encoding/json"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
)

// EMCO's examples write Temporal's untagged keys in any case, durations in nanoseconds.
func TestSpecDecodesKeysCaseInsensitivelyAndDurationsAsNanoseconds(t *testing.T) {
	body := `{"workflowClient":{"clientEndpointName":"demo","clientEndpointPort":9090},
	  "temporal":{"workflowClientName":"migrate_workflowclient",
	    "workflowStartOptions":{"id":"migrate-1","taskqueue":"GREETING_TASK_QUEUE","workflowRunTimeout":60000000000,
	      "WorkflowIDReusePolicy":2,"retryPolicy":{"maximumAttempts":3,"initialInterval":1000000000,"backoffCoefficient":2}},
	    "workflowParams":{"activityOptions":{"all":{"StartToCloseTimeout":5000000000,"taskQueue":"q"}},
	      "activityParams":{"all":{"k":"v"}},"startToCloseTimeout":123}}}`
	var s Spec
	if err := json.Unmarshal([]byte(body), &s); err != nil {
		t.Fatal(err)
	}
	o := s.Temporal.StartOptions
	if o.ID != "migrate-1" || o.TaskQueue != "GREETING_TASK_QUEUE" || o.WorkflowRunTimeout != time.Minute || o.WorkflowIDReusePolicy != 2 {
		t.Errorf("start options = %+v", o)
	}
	if p := o.RetryPolicy; p == nil || p.MaximumAttempts != 3 || p.InitialInterval != time.Second || p.BackoffCoefficient != 2 {
		t.Errorf("retry policy = %+v", p)
	}
	if a := s.Temporal.Params.ActivityOptions["all"]; a.StartToCloseTimeout != 5*time.Second || a.TaskQueue != "q" {
		t.Errorf("activity options = %+v", a)
	}
	if s.Temporal.Params.ActivityParams["all"]["k"] != "v" || s.WorkflowClient.EndpointPort != 9090 {
		t.Errorf("spec = %+v", s)
	}
	if err := s.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
	// Stored with Temporal's field names, as EMCO stores them.
	out, _ := json.Marshal(s)
	for _, key := range []string{`"ID":"migrate-1"`, `"TaskQueue":"GREETING_TASK_QUEUE"`, `"WorkflowRunTimeout":60000000000`, `"MaximumAttempts":3`} {
		if !strings.Contains(string(out), key) {
			t.Errorf("encoded spec %s lacks %s", out, key)
		}
	}
}

func TestSpecDecodeRefusesDurationsThatAreNotIntegers(t *testing.T) {
	var s Spec
	err := json.Unmarshal([]byte(`{"temporal":{"workflowStartOptions":{"TaskQueue":"q","WorkflowRunTimeout":"1m"}}}`), &s)
	if err == nil {
		t.Fatal("a duration as a string was accepted")
	}
}

func TestValidate(t *testing.T) {
	valid := func() Spec {
		return Spec{WorkflowClient: &ClientSpec{}, Temporal: &TemporalSpec{StartOptions: StartOptions{TaskQueue: "q"}}}
	}
	for _, tc := range []struct {
		name string
		edit func(*Spec)
		want string // "" when valid
	}{
		{"minimal", func(*Spec) {}, ""},
		{"no workflowClient", func(s *Spec) { s.WorkflowClient = nil }, "spec.workflowClient is required"},
		{"no temporal", func(s *Spec) { s.Temporal = nil }, "spec.temporal is required"},
		{"no task queue", func(s *Spec) { s.Temporal.StartOptions.TaskQueue = "" }, "workflowStartOptions.TaskQueue is required"},
		{"bad port", func(s *Spec) { s.WorkflowClient.EndpointPort = 70000 }, "clientEndpointPort 70000 is not a port"},
		{"negative run timeout", func(s *Spec) { s.Temporal.StartOptions.WorkflowRunTimeout = -1 }, "WorkflowRunTimeout must not be negative"},
		{"unknown reuse policy", func(s *Spec) { s.Temporal.StartOptions.WorkflowIDReusePolicy = 9 }, "WorkflowIDReusePolicy must be 0 to 4"},
		{"backoff below 1", func(s *Spec) { s.Temporal.StartOptions.RetryPolicy = &RetryPolicy{BackoffCoefficient: 0.5} },
			"RetryPolicy.BackoffCoefficient must be at least 1"},
		{"negative attempts", func(s *Spec) { s.Temporal.StartOptions.RetryPolicy = &RetryPolicy{MaximumAttempts: -1} },
			"MaximumAttempts must not be negative"},
		{"maximum below initial", func(s *Spec) {
			s.Temporal.StartOptions.RetryPolicy = &RetryPolicy{InitialInterval: time.Minute, MaximumInterval: time.Second}
		}, "MaximumInterval must not be below InitialInterval"},
		{"negative activity timeout", func(s *Spec) {
			s.Temporal.Params.ActivityOptions = map[string]ActivityOptions{"a": {HeartbeatTimeout: -time.Second}}
		}, `activityOptions["a"].HeartbeatTimeout must not be negative`},
		{"activity retry policy", func(s *Spec) {
			s.Temporal.Params.ActivityOptions = map[string]ActivityOptions{"a": {RetryPolicy: &RetryPolicy{BackoffCoefficient: 0.1}}}
		}, `activityOptions["a"].RetryPolicy.BackoffCoefficient`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := valid()
			tc.edit(&s)
			err := s.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("error %v, want one saying %q", err, tc.want)
			}
		})
	}
}

func TestStartOptionsNameTheWorkflowAndDefaultTheID(t *testing.T) {
	s := &TemporalSpec{StartOptions: StartOptions{TaskQueue: "q", WorkflowIDReusePolicy: 3, WorkflowRunTimeout: time.Minute,
		RetryPolicy: &RetryPolicy{MaximumAttempts: 2}}}
	s.StartOptions.ID = "user/p/ca/v1/dig/wi"
	opts, typ := startOptions(s)
	if typ != "q" || opts.ID != "user/p/ca/v1/dig/wi" || opts.TaskQueue != "q" || opts.WorkflowRunTimeout != time.Minute ||
		opts.WorkflowIDReusePolicy != enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE ||
		!reflect.DeepEqual(opts.RetryPolicy, &temporal.RetryPolicy{MaximumAttempts: 2}) {
		t.Errorf("options %+v, type %q", opts, typ)
	}
	s.WorkflowClientName, s.StartOptions.ID = "Relocate", "mine"
	if opts, typ := startOptions(s); typ != "Relocate" || opts.ID != "mine" {
		t.Errorf("options %+v, type %q", opts, typ)
	}
}

func TestParseStatusQuery(t *testing.T) {
	for _, tc := range []struct {
		query string
		want  StatusQuery
		err   string
	}{
		{"", StatusQuery{}, ""},
		{"workflowID=w&runID=r&runDescribeWfExec=true&getWfHistory=true&waitForResult=false",
			StatusQuery{WorkflowID: "w", RunID: "r", Describe: true, History: true}, ""},
		{"temporalServer='10.0.0.1:7233'&queryType=step&queryParams=a&queryParams=b",
			StatusQuery{TemporalServer: "10.0.0.1:7233", QueryType: "step", QueryParams: []string{"a", "b"}}, ""},
		{`temporalServer="h:7233"&waitForResult=`, StatusQuery{TemporalServer: "h:7233"}, ""},
		{"waitForResult=yes", StatusQuery{}, "waitForResult must be a boolean but is yes"},
		{"getWfHistory=1", StatusQuery{}, "getWfHistory must be a boolean but is 1"},
		{"workflowId=w", StatusQuery{}, "Unknown query parameter: workflowId"},
	} {
		t.Run(tc.query, func(t *testing.T) {
			v, _ := url.ParseQuery(tc.query)
			got, err := ParseStatusQuery(v)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Errorf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

func TestDecodeCancel(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       CancelSpec
		err        string
	}{
		{"cancel", `{"spec":{}}`, CancelSpec{}, ""},
		{"terminate, keys in any case", `{"metadata":{"name":"c1"},"spec":{"TemporalServer":"h:7233","workflowId":"w-1","runid":"r","Terminate":true,"reason":"done","details":["x",1]}}`,
			CancelSpec{TemporalServer: "h:7233", WorkflowID: "w-1", RunID: "r", Terminate: true, Reason: "done", Details: []any{"x", 1.0}}, ""},
		{"empty", " ", CancelSpec{}, "empty workflow cancel request body"},
		{"malformed", `{"spec":`, CancelSpec{}, "malformed workflow cancel request"},
		{"terminate not a boolean", `{"spec":{"terminate":"yes"}}`, CancelSpec{}, "malformed workflow cancel request"},
		{"bad workflow id", `{"spec":{"workflowID":"-w"}}`, CancelSpec{}, `spec.workflowID "-w" is invalid`},
		{"a prefixed id", `{"spec":{"workflowID":"user/p/ca/v1/dig/w"}}`, CancelSpec{WorkflowID: "user/p/ca/v1/dig/w"}, ""},
		{"an empty segment", `{"spec":{"workflowID":"user//w"}}`, CancelSpec{}, `spec.workflowID`},
		{"bad name", `{"metadata":{"name":"a b"},"spec":{}}`, CancelSpec{}, `metadata.name "a b" is invalid`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeCancel(strings.NewReader(tc.body))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("error %v, want one saying %q", err, tc.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got.Spec, tc.want) {
				t.Errorf("got %+v, %v; want %+v", got.Spec, err, tc.want)
			}
		})
	}
}
