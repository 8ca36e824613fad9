package tac

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/temco/temco/contract"
	"github.com/temco/temco/controllers"
	"github.com/temco/temco/internal/core/lifecycle"
)

// EMCO's example hook, as its files have it: lowercase start option keys, a retry policy,
// and workflowParams.startToCloseTimeout, which matches nothing.
const emcoHook = `{"hookType": "pre-install", "hookBlocking": true, "hookBlockingTimeout": 90,
 "workflowClient": {"clientEndpointName": "demo-workflowclient.demo.svc.cluster.local", "clientEndpointPort": 9090},
 "temporal": {"workflowClientName": "migrate_workflowclient",
   "workflowStartOptions": {"id": "pre-install-1", "taskqueue": "GREETING_TASK_QUEUE", "retryPolicy": {"maximumAttempts": 2}},
   "workflowParams": {"startToCloseTimeout": 60000000000, "activityParams": {"a": {"k": "v"}}}}}`

func decode(t *testing.T, body string) Spec {
	t.Helper()
	var s Spec
	if err := json.Unmarshal([]byte(body), &s); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestEMCOsHookBecomesTheWorkflowTheOperationRuns(t *testing.T) {
	s := decode(t, emcoHook)
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	in := contract.Input{Project: "p", CompositeApp: "ca", CompositeAppVersion: "v1", DeploymentIntentGroup: "dig",
		ContextID: "42", Operation: contract.OpInstantiate}
	dig := lifecycle.Target{Project: "p", CompositeApp: "ca", Version: "v1", DIG: "dig"}
	w, err := workflowOf(in, dig, controllers.Named[Spec]{Name: "pre", Spec: s}, contract.WhenNow, "temco")
	if err != nil {
		t.Fatal(err)
	}
	if w.Type != "migrate_workflowclient" || w.TaskQueue != "GREETING_TASK_QUEUE" || w.ID != "user/p/ca/v1/dig/pre-install-1" || !w.Blocking ||
		w.Timeout != 90*time.Second || w.Retry == nil || w.Retry.MaximumAttempts != 2 || w.Kind != PreInstall {
		t.Errorf("workflow %+v", w)
	}
	var arg struct {
		ActivityParams map[string]map[string]string `json:"activityParams"`
	}
	if err := json.Unmarshal(w.Arg, &arg); err != nil {
		t.Fatal(err)
	}
	emco := arg.ActivityParams["emco"]
	if arg.ActivityParams["a"]["k"] != "v" || emco["deploymentIntentGroup"] != "dig" || emco["appContextId"] != "42" ||
		emco["hookType"] != PreInstall || emco["hook"] != "pre" || emco["operation"] != contract.OpInstantiate {
		t.Errorf("argument %s", w.Arg)
	}
	if s.Temporal.Params.ActivityParams["emco"] != nil {
		t.Error("workflowOf changed the stored intent's parameters")
	}

	// Without an id the hook gets one per DIG and intent (status and cancel find it);
	// without a type, the task queue names it, as EMCO's sample client does.
	s.Temporal.StartOptions.ID, s.Temporal.WorkflowClientName = "", ""
	w, _ = workflowOf(in, dig, controllers.Named[Spec]{Name: "pre", Spec: s}, contract.WhenNow, "temco")
	if w.ID != "user/p/ca/v1/dig/hook/pre" || w.Type != "GREETING_TASK_QUEUE" {
		t.Errorf("defaults: id %q, type %q", w.ID, w.Type)
	}
}

// Whoever wrote a hook intent, and whatever the rules were then, the operation never
// runs a hook on temco's task queue, of temco's types, or outside the DIG's ids.
func TestHooksStayOutOfTemcosWorkflows(t *testing.T) {
	in := contract.Input{Project: "p", CompositeApp: "ca", CompositeAppVersion: "v1", DeploymentIntentGroup: "dig", Operation: contract.OpInstantiate}
	dig := lifecycle.Target{Project: "p", CompositeApp: "ca", Version: "v1", DIG: "dig"}
	for name, edit := range map[string]func(*Spec){
		"temco's queue":          func(s *Spec) { s.Temporal.StartOptions.TaskQueue = "temco" },
		"Relocate on its queue":  func(s *Spec) { s.Temporal.StartOptions.TaskQueue, s.Temporal.WorkflowClientName = "temco", "Relocate" },
		"temco's type elsewhere": func(s *Spec) { s.Temporal.WorkflowClientName = "DIGLifecycle" },
	} {
		s := decode(t, emcoHook)
		edit(&s)
		_, err := workflowOf(in, dig, controllers.Named[Spec]{Name: "pre", Spec: s}, contract.WhenNow, "temco")
		var refusal *contract.Refusal
		if !errors.As(err, &refusal) {
			t.Errorf("%s: %v, want a refusal", name, err)
		}
	}
	s := decode(t, emcoHook)
	s.Temporal.StartOptions.ID = "dig/other/ca/v1/dig"
	w, err := workflowOf(in, dig, controllers.Named[Spec]{Name: "pre", Spec: s}, contract.WhenNow, "temco")
	if err != nil || w.ID != "user/p/ca/v1/dig/dig/other/ca/v1/dig" {
		t.Errorf("id %q, %v: want it under the DIG's prefix", w.ID, err)
	}
}

func TestBadHookIntentsAreRefusedWithTheField(t *testing.T) {
	for body, want := range map[string]string{
		`{"hookType": "pre-deploy", "workflowClient": {}, "temporal": {"workflowStartOptions": {"TaskQueue": "q"}}}`:                               "spec.hookType",
		`{"hookType": "pre-install", "waitForReady": true, "workflowClient": {}, "temporal": {"workflowStartOptions": {"TaskQueue": "q"}}}`:        "waitForReady applies to",
		`{"hookType": "pre-install", "hookBlockingTimeout": "5m", "workflowClient": {}, "temporal": {"workflowStartOptions": {"TaskQueue": "q"}}}`: "needs spec.hookBlocking",
		`{"hookType": "pre-install", "workflowClient": {}, "temporal": {"workflowStartOptions": {}}}`:                                              "TaskQueue is required",
		`{"hookType": "pre-install", "temporal": {"workflowStartOptions": {"TaskQueue": "q"}}}`:                                                    "spec.workflowClient is required",
	} {
		s := decode(t, body)
		if err := s.Validate(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", body, err, want)
		}
	}
	for body, want := range map[string]string{
		`{"hookBlockingTimeout": 60000000000}`: "out of range",
		`{"hookBlockingTimeout": "soon"}`:      "neither seconds nor a duration",
		`{"hookBlockingTimeout": -1}`:          "out of range",
	} {
		var s Spec
		if err := json.Unmarshal([]byte(body), &s); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", body, err, want)
		}
	}
	var s Spec
	if err := json.Unmarshal([]byte(`{"hookBlockingTimeout": "1m30s"}`), &s); err != nil || time.Duration(s.HookBlockingTimeout) != 90*time.Second {
		t.Errorf("duration string: %v, %v", s.HookBlockingTimeout, err)
	}
}

func TestWorkerIntentsNeedTheirDIG(t *testing.T) {
	w := WorkerSpec{CompositeApp: "wca", CompositeAppVersion: "v1"}
	if err := w.validate(); err == nil || !strings.Contains(err.Error(), "spec.deploymentIntentGroup is required") {
		t.Errorf("error %v", err)
	}
	w.DIG = "wdig"
	if err := w.validate(); err != nil || w.timeout() != 1000*time.Second {
		t.Errorf("error %v, timeout %s (EMCO's default is 1000000 ms)", err, w.timeout())
	}
}
