package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"go.temporal.io/api/serviceerror"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/temco/temco/internal/core/lifecycle"
)

// A tenant of project A tries, through routes that are its own (workflow intents, hook
// intents, ca-certs under A's paths), to reach project B, temco's own workflows and the
// clusters' admin credentials. Every attempt is refused with a 4xx naming the field, and
// nothing of B changes: not its resources, not its workflows in Temporal, not its objects
// on the cluster.
func TestTenantCannotEscapeItsProject(t *testing.T) {
	a := startAuthAPI(t, "TEMCO_CA_CERT_ORGANIZATIONS=edge-team")
	admin := a.as(a.iss.Token("root", []string{"admin"}, nil))

	// Project B: an instantiated DIG on cluster1, set up by the admin.
	b := newDeployment(t, app{name: "bweb", chart: webChart("bweb"), placement: clusterNamed("cluster1")})
	b.project += "-b"
	b.c = admin
	b.create()
	b.operate("instantiate")
	b.await("B Instantiated", 2*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusInstantiated })
	// Project A: the tenant's, over a logical cloud of cluster2 alone.
	ad := newDeployment(t, app{name: "aweb", chart: webChart("aweb"), placement: clusterNamed("cluster2")})
	ad.c, ad.logicalCloud = admin, "edge"
	ad.setUpCloud = func(d *deployment) { d.cloud("edge", map[string]any{"level": "0"}, "cluster2") }
	ad.create()
	alice := a.as(a.iss.Token("alice", []string{"project:" + ad.project}, nil))

	tc := dialTemporal(t)
	defer tc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	bDIG, bCloud := b.ref().WorkflowID(), lifecycle.Target{Project: b.project, LogicalCloud: "default"}.WorkflowID()
	type run struct{ runID, status string }
	runOf := func(id string) run {
		d, err := tc.DescribeWorkflowExecution(ctx, id, "")
		var notFound *serviceerror.NotFound
		if errors.As(err, &notFound) {
			return run{status: "absent"}
		}
		if err != nil {
			t.Fatalf("describe %s: %v", id, err)
		}
		i := d.WorkflowExecutionInfo
		return run{i.Execution.RunId, i.Status.String()}
	}
	cs, err := stack.Clusters[0].Clientset()
	if err != nil {
		t.Fatal(err)
	}
	// What a write to B's Deployment would change: its spec (generation), labels or
	// annotations. Not its resourceVersion: the cluster's deployment controller moves that
	// with every status update while the rollout settles (2683 -> 2691 in one loaded run),
	// and sets the revision annotation.
	liveVersion := func() string {
		dep, err := cs.AppsV1().Deployments("default").Get(ctx, "bweb", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("B's Deployment on cluster1: %v", err)
		}
		delete(dep.Annotations, "deployment.kubernetes.io/revision")
		return fmt.Sprintf("generation %d, labels %v, annotations %v", dep.Generation, dep.Labels, dep.Annotations)
	}
	bBefore := admin.do("GET", b.dig(), nil).must(t, 200).body
	digBefore, cloudBefore, liveBefore := runOf(bDIG), runOf(bCloud), liveVersion()

	intents := ad.dig() + "/temporal-workflow-intents"
	hooks := ad.dig() + "/temporal-action-controller"
	intent := func(name, typ, queue, id string, relocate map[string]string) map[string]any {
		spec := map[string]any{"workflowClient": map[string]any{}, "temporal": map[string]any{
			"workflowClientName":   typ,
			"workflowStartOptions": map[string]any{"ID": id, "TaskQueue": queue, "WorkflowExecutionTimeout": int64(time.Minute)},
			"workflowParams":       map[string]any{"activityParams": map[string]any{"relocate": relocate}},
		}}
		return res(name, spec)
	}
	refused := func(what string, r response, code int, field string) {
		t.Helper()
		r.must(t, code)
		if !bytes.Contains(r.body, []byte(field)) || !bytes.HasPrefix(bytes.TrimSpace(r.body), []byte("{")) {
			t.Errorf("%s: answer %s does not name %q", what, r.body, field)
		}
	}
	queue, relocateType := "temco", lifecycle.WorkflowRelocate
	moveB := map[string]string{"project": b.project, "compositeApp": "ca", "compositeAppVersion": "v1",
		"deploymentIntentGroup": "dig", "app": "bweb", "from": provider + "+cluster1", "to": provider + "+cluster2"}

	// temco's built-in Relocate, on temco's queue, moving B's app under B's DIG workflow id.
	refused("Relocate of B's DIG", alice.do("POST", intents, intent("steal", relocateType, queue, bDIG, moveB)), 403,
		"activityParams.relocate.project")
	// temco's own workflow types and task queue.
	refused("temco's lifecycle type", alice.do("POST", intents, intent("own", lifecycle.WorkflowDIG, queue, "", nil)), 403,
		"workflowStartOptions.TaskQueue")
	refused("temco's type on another queue", alice.do("POST", intents, intent("own2", lifecycle.WorkflowUpdate, ad.project, "", nil)), 403,
		"workflowClientName")
	// B's task queue (B's workers would run A's input).
	refused("B's task queue", alice.do("POST", intents, intent("queue", "Greet", b.project, "", nil)), 403,
		"workflowStartOptions.TaskQueue")
	// The same through tac's hook intents, which run inside A's own operations.
	hook := intent("hook", lifecycle.WorkflowDIG, queue, bDIG, nil)
	hook["spec"].(map[string]any)["hookType"] = "pre-install"
	refused("a hook on temco's queue", alice.do("POST", hooks, hook), 403, "workflowStartOptions.TaskQueue")
	// EMCO's temporalServer and workflow client: hosts no admin allowed.
	remote := intent("remote", "Greet", ad.project, "", nil)
	remote["spec"].(map[string]any)["workflowClient"] = map[string]any{"clientEndpointName": "127.0.0.1", "clientEndpointPort": 9015}
	refused("a workflow client", alice.do("POST", intents, remote), 403, "spec.workflowClient")

	// An intent A may have, naming B's DIG workflow as its id: it runs under A's prefix.
	alice.do("POST", intents, intent("mine", "Greet", ad.project, bDIG, nil)).must(t, 201)
	alice.do("POST", intents+"/mine/start", nil).must(t, 204)
	mine := "user/" + ad.project + "/ca/v1/dig/" + bDIG
	if r := runOf(mine); r.status != "Running" {
		t.Errorf("A's intent's run %s is %s, want Running (no worker polls %q)", mine, r.status, ad.project)
	}
	// Reading or cancelling B's or temco's workflows through it reaches A's prefix only.
	var st struct {
		WorkflowID string `json:"workflowID"`
	}
	alice.do("GET", intents+"/mine/status?runDescribeWfExec=true&workflowID="+bDIG, nil).must(t, 200).json(t, &st)
	if st.WorkflowID != mine {
		t.Errorf("workflowID=%s answered %s, want A's own %s", bDIG, st.WorkflowID, mine)
	}
	for _, id := range []string{bCloud, "user/" + b.project + "/ca/v1/dig/x", "dig/" + b.project + "/ca/v1/dig/instantiate"} {
		r := alice.do("GET", intents+"/mine/status?runDescribeWfExec=true&getWfHistory=true&workflowID="+id, nil)
		r.must(t, 404)
		if bytes.Contains(r.body, []byte("WORKFLOW_EXECUTION_STATUS")) || bytes.Contains(r.body, []byte("bweb")) {
			t.Errorf("status of %s: %s", id, r.body)
		}
		alice.do("POST", intents+"/mine/cancel", map[string]any{"spec": map[string]any{"workflowID": id, "terminate": true}}).must(t, 404)
	}
	refused("temporalServer", alice.do("GET", intents+"/mine/status?runDescribeWfExec=true&temporalServer="+stack.Temporal.Address(), nil),
		403, stack.Temporal.Address())
	alice.do("POST", intents+"/mine/cancel", map[string]any{"spec": map[string]any{"terminate": true, "reason": "e2e"}}).must(t, 204)
	if r := runOf(mine); r.status != "Terminated" {
		t.Errorf("A's own run is %s after its cancel, want Terminated", r.status)
	}

	// ca-certs: signed only on A's clusters, with subjects an admin allowed.
	certs := "/projects/" + ad.project + "/ca-certs"
	cert := certIntent("escape") // issuing cluster1, which no cloud of A references
	subject := func(org string) {
		cert["spec"].(map[string]any)["csrInfo"].(map[string]any)["subject"] = map[string]any{
			"organization": map[string]any{"names": []string{org}}}
	}
	subject("edge-team")
	refused("a certificate signed on B's cluster", alice.do("POST", certs, cert), 403, "spec.issuingCluster")
	cert["spec"].(map[string]any)["issuingCluster"] = map[string]any{"cluster": "cluster2", "clusterProvider": provider}
	subject("system:masters")
	refused("a certificate for system:masters", alice.do("POST", certs, cert), 403, "system:masters")
	subject("edge-team")
	alice.do("POST", certs, cert).must(t, 201) // what the admin allowed
	alice.do("DELETE", certs+"/escape", nil).must(t, 204)
	admin.do("GET", certs+"/escape", nil).must(t, 404)

	// Nothing refused was stored, and nothing of B changed.
	for _, name := range []string{"steal", "own", "own2", "queue", "remote"} {
		admin.do("GET", intents+"/"+name, nil).must(t, 404)
	}
	admin.do("GET", hooks+"/hook", nil).must(t, 404)
	if after := admin.do("GET", b.dig(), nil).must(t, 200).body; !bytes.Equal(bBefore, after) {
		t.Errorf("B's DIG changed:\n%s\n%s", bBefore, after)
	}
	if got := runOf(bDIG); got != digBefore {
		t.Errorf("B's DIG workflow %s: %+v, was %+v", bDIG, got, digBefore)
	}
	if got := runOf(bCloud); got != cloudBefore {
		t.Errorf("B's logical cloud workflow %s: %+v, was %+v", bCloud, got, cloudBefore)
	}
	if got := liveVersion(); got != liveBefore {
		t.Errorf("B's Deployment on cluster1 changed: %s, was %s", got, liveBefore)
	}
	if s := b.status(""); s.Status != lifecycle.StatusInstantiated {
		t.Errorf("B is %s", s.Status)
	}
	b.operate("terminate")
	b.await("B Terminated", 2*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusTerminated })
}
