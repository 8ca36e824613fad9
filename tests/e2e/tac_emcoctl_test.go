package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// tacFiles are EMCO's test-tac files as their users write them (written anew): tac
// registered by host and port, the DIG's intents naming it, hooks whose start options
// use the lowercase keys of EMCO's examples (and workflowParams.startToCloseTimeout, which
// EMCO ignores), a worker intent; then a workflow intent started from a file.
const tacFiles = `version: emco/v2
resourceContext:
  anchor: controllers
metadata:
  name: tac-{{.Project}}
spec:
  host: tac
  port: 30465
  type: "action"
  priority: 1
---
version: emco/v2
resourceContext:
  anchor: {{.DIG}}/intents
metadata:
  name: tac-intents
spec:
  intent:
    tac-{{.Project}}: hooks
---
version: emco/v2
resourceContext:
  anchor: {{.DIG}}/temporal-action-controller
metadata:
  name: "pre-install-workflow-hook"
  description: "will run first"
spec:
  hookType: "pre-install"
  hookBlocking: true
  workflowClient:
     clientEndpointName: demo-workflowclient.demo.svc.cluster.local
     clientEndpointPort: 9090
  temporal:
     workflowClientName: "Check"
     workflowStartOptions:
       id: "pre-install-{{.Project}}"
       taskqueue: "{{.Queue}}"
       retryPolicy:
          maximumAttempts: 2
     workflowParams:
        startToCloseTimeout: 60000000000
        activityParams:
          check: {kubeconfig: "{{.Kubeconfig}}", name: tac-web, expect: absent}
          journal: {path: "{{.Journal}}"}
---
version: emco/v2
resourceContext:
  anchor: {{.DIG}}/temporal-action-controller
metadata:
  name: "post-workflow-intent"
spec:
  hookType: "post-install"
  hookBlocking: true
  hookBlockingTimeout: 300
  waitForReady: true
  workflowClient:
     clientEndpointName: demo-workflowclient.demo.svc.cluster.local
     clientEndpointPort: 9090
  temporal:
     workflowClientName: "Check"
     workflowStartOptions:
       taskqueue: "{{.Queue}}"
     workflowParams:
        activityParams:
          check: {kubeconfig: "{{.Kubeconfig}}", name: tac-web, expect: ready}
          journal: {path: "{{.Journal}}"}
---
version: emco/v2
resourceContext:
  anchor: {{.DIG}}/temporal-workflow-intents
metadata:
  name: check-now
spec:
  workflowClient: {}
  temporal:
    workflowClientName: "Check"
    workflowStartOptions:
      id: "check-now-{{.Project}}"
      taskqueue: "{{.Queue}}"
    workflowParams:
      activityParams:
        check: {kubeconfig: "{{.Kubeconfig}}", name: tac-web, expect: ready}
        journal: {path: "{{.Journal}}"}
`

const tacDeploy = `version: emco/v2
resourceContext:
  anchor: {{.DIG}}/approve
---
version: emco/v2
resourceContext:
  anchor: {{.DIG}}/instantiate
---
version: emco/v2
resourceContext:
  anchor: {{.DIG}}/temporal-workflow-intents/check-now/start
`

// EMCO users' tac and workflow-intent files run with temco's emcoctl-compatible client:
// applied, the instantiate runs the hooks (pre-install before the apply, post-install once
// Ready) and the file's start runs the workflow intent; deleting the files terminates the
// DIG and removes every resource.
func TestTACWithEMCOFiles(t *testing.T) {
	bin := buildHooks(t)
	d := newDeployment(t, app{name: "tac-web", chart: webChart("tac-web"), placement: clusterNamed("cluster1")})
	d.create()
	queue := "hooks-" + d.project
	startHooks(t, bin, queue)
	dir := t.TempDir()
	journalPath := filepath.Join(dir, "journal")
	values := "Project: " + d.project + "\nDIG: " + strings.TrimPrefix(d.dig(), "/") + "\nQueue: " + queue +
		"\nKubeconfig: " + stack.Clusters[0].Kubeconfig() + "\nJournal: " + journalPath + "\n"
	for name, data := range map[string]string{"03-define-workflow-intents.yaml": tacFiles, "04-instantiate-dig.yaml": tacDeploy, "values.yaml": values} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := temco(t, dir, "apply", "-f", "03-define-workflow-intents.yaml", "-v", "values.yaml"); err != nil {
		t.Fatalf("temco apply: %v\n%s", err, out)
	}
	stored := string(d.c.do("GET", d.dig()+"/temporal-action-controller/pre-install-workflow-hook", nil).must(t, 200).body)
	if !strings.Contains(stored, `"ID":"pre-install-`+d.project+`"`) || !strings.Contains(stored, `"TaskQueue":"`+queue+`"`) ||
		!strings.Contains(stored, `"MaximumAttempts":2`) || !strings.Contains(stored, `"hookBlocking":true`) {
		t.Errorf("hook intent as stored does not keep EMCO's lowercase keys' values: %s", stored)
	}
	if out, err := temco(t, dir, "apply", "-f", "04-instantiate-dig.yaml", "-v", "values.yaml", "--wait"); err != nil {
		t.Fatalf("temco apply: %v\n%s", err, out)
	}
	// The workflow intent's start comes right after the awaited instantiate.
	awaitJournal(t, journalPath, "- check ready ok", time.Minute)
	if got, want := journal(t, journalPath), []string{"pre-install-workflow-hook check absent ok", "post-workflow-intent check ready ok",
		"- check ready ok"}; !slices.Equal(got, want) {
		t.Errorf("journal %v, want %v", got, want)
	}
	if out, err := temco(t, dir, "delete", "-f", "04-instantiate-dig.yaml", "-f", "03-define-workflow-intents.yaml", "-v", "values.yaml"); err != nil {
		t.Fatalf("temco delete: %v\n%s", err, out)
	}
	for _, p := range []string{d.dig() + "/temporal-action-controller/pre-install-workflow-hook", d.dig() + "/temporal-workflow-intents/check-now",
		"/controllers/tac-" + d.project} {
		d.c.do("GET", p, nil).must(t, 404)
	}
	if liveObject(t, 0, deployments, "tac-web") != nil {
		t.Error("the Deployment is still on cluster1 after the files were deleted")
	}
}
