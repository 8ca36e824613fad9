package hub

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/temco/temco/hubapi/v1alpha1"
)

// digLook is a DIG stored in the fake API whose state the test chooses, and on a fake hub
// once looked at.
type digLook struct {
	api      *fakeAPI
	r        *Reconciler
	o        *v1.DeploymentIntentGroup
	n        *node
	path     string
	revision int    // its state's; 2 unless set
	instance string // its state's context; ctx-1 unless set
}

func newLifecycle(t *testing.T, want string) *digLook {
	t.Helper()
	api := newFakeAPI(t)
	o := dig()
	o.Spec.State = want
	o.Status.AppliedHash = "applied"
	n, err := digNode(context.Background(), files{}, o.Namespace, o)
	if err != nil {
		t.Fatal(err)
	}
	api.seed(n.path(), ownerOf("DeploymentIntentGroup", o), n.body)
	return &digLook{api: api, r: &Reconciler{API: api.client()}, o: o, n: n, path: n.path(), revision: 2, instance: "ctx-1"}
}

// temco says the DIG is in state (no actions: Created), deployedStatus, an operation
// running or not.
func (l *digLook) temco(state, deployed string, running bool) {
	v := map[string]any{"state": state, "contextStatus": deployed, "revision": l.revision, "contextId": l.instance,
		"apps": []string{"web", "db"}, "clusters": 3, "clusterStates": map[string]int{"Applied": 2, "Retrying": 1}, "objects": map[string]int{"Applied": 5},
		"appClusterStates": map[string]map[string]int{"web": {"Ready": 1, "Applied": 1, "Retrying": 1}}}
	if running {
		v["operation"] = map[string]any{"workflowId": "wf-running", "op": "update"}
	}
	l.api.setState(l.path, v)
}

func (l *digLook) after(t *testing.T) time.Duration {
	t.Helper()
	next, err := l.look(t)
	if err != nil {
		t.Fatal(err)
	}
	// Every cluster's record is read at most once a look (clusters=true), and the
	// dashboard, the operator's screen, never.
	counted := 0
	for _, c := range l.api.all() {
		if strings.HasSuffix(c.Path, "/dashboard") {
			t.Errorf("the hub read the dashboard: %s?%s", c.Path, c.Query)
		}
		if c.Method == http.MethodGet && strings.HasSuffix(c.Path, "/state") && c.Query == "clusters=true" {
			counted++
		}
	}
	if counted > 1 {
		t.Errorf("the clusters were counted %d times in one look", counted)
	}
	return next
}

// look runs digAfter once, with the object on the hub as the test set it up before its
// first look.
func (l *digLook) look(t *testing.T) (time.Duration, error) {
	t.Helper()
	if l.r.Kube == nil {
		l.r.Kube = newKube(t, l.o.DeepCopy())
		l.reread(t)
	}
	l.api.reset()
	return digAfter(context.Background(), l.r, l.o, l.n)
}

// reread takes the object as the hub has it: what a restarted hub would see.
func (l *digLook) reread(t *testing.T) {
	t.Helper()
	o := &v1.DeploymentIntentGroup{}
	if err := l.r.Kube.Get(context.Background(), client.ObjectKeyFromObject(l.o), o); err != nil {
		t.Fatal(err)
	}
	l.o = o
}

func (l *digLook) condition(t *testing.T, typ string) metav1.ConditionStatus {
	t.Helper()
	c := meta.FindStatusCondition(l.o.Status.Conditions, typ)
	if c == nil {
		t.Fatalf("no %s condition", typ)
	}
	return c.Status
}

func TestDigAfterApprovesThenInstantiatesACreatedDIG(t *testing.T) {
	l := newLifecycle(t, v1.StateInstantiated)
	l.temco("", "", false)
	if next := l.after(t); next != followRunning {
		t.Errorf("next look in %v, want %v", next, followRunning)
	}
	w := l.api.writes()
	wantCalls(t, w, "POST "+l.path+"/approve", "POST "+l.path+"/instantiate")
	for _, c := range w {
		if c.Owner != "hub:DeploymentIntentGroup/p1/shop-prod-k8s" {
			t.Errorf("%s owner %q", c, c.Owner)
		}
	}
	st := l.o.Status
	if st.DeployedHash != "applied" || st.Operation != "instantiate" || st.WorkflowID != "wf-instantiate" {
		t.Errorf("status deployedHash %q operation %q workflow %q", st.DeployedHash, st.Operation, st.WorkflowID)
	}
	if st.State != "Created" || st.Revision != 2 || st.ContextID != "ctx-1" {
		t.Errorf("status state %q revision %d context %q", st.State, st.Revision, st.ContextID)
	}
	if l.condition(t, v1.Progressing) != metav1.ConditionTrue || l.condition(t, v1.Ready) != metav1.ConditionFalse {
		t.Errorf("conditions %v", l.o.Status.Conditions)
	}
}

func TestDigAfterLeavesAnUpToDateInstantiatedDIG(t *testing.T) {
	l := newLifecycle(t, v1.StateInstantiated)
	l.o.Status.DeployedHash = "applied"
	l.temco("Instantiated", "Instantiated", false)
	if next := l.after(t); next != 0 {
		t.Errorf("next look in %v, want the periodic recheck (0)", next)
	}
	wantCalls(t, l.api.writes())
	if l.condition(t, v1.Ready) != metav1.ConditionTrue || l.condition(t, v1.Progressing) != metav1.ConditionFalse {
		t.Errorf("conditions %v", l.o.Status.Conditions)
	}
	st := l.o.Status
	if st.Revision != 2 || st.ContextID != "ctx-1" || st.Apps != 2 || st.Clusters != (v1.Counts{Total: 3, Deployed: 2, Retrying: 1}) ||
		st.Objects != (v1.Counts{Total: 5, Deployed: 5}) {
		t.Errorf("status %+v: the state's revision, context and counts not copied", st)
	}
	// Each app's clusters by state; an app placed nowhere shows with none.
	if want := "[{db {0 0 0 0 0}} {web {3 2 0 0 1}}]"; fmt.Sprint(st.AppClusters) != want {
		t.Errorf("clusters by app %v, want %s", st.AppClusters, want)
	}
}

func TestDigAfterUpdatesWhenTheConfigurationChanged(t *testing.T) {
	l := newLifecycle(t, v1.StateInstantiated)
	l.o.Status.DeployedHash = "deployed-before"
	l.temco("Instantiated", "Instantiated", false)
	l.after(t)
	wantCalls(t, l.api.writes(), "POST "+l.path+"/update")
	if l.o.Status.DeployedHash != "applied" {
		t.Errorf("deployedHash %q, want applied", l.o.Status.DeployedHash)
	}
	l.after(t) // the update's done: the hashes agree now
	wantCalls(t, l.api.writes())
}

func TestDigAfterUpdatesOncePerUpdateAnnotation(t *testing.T) {
	l := newLifecycle(t, v1.StateInstantiated)
	l.o.Status.DeployedHash = "applied"
	l.o.Annotations = map[string]string{v1.AnnotationUpdate: "tag-moved-1"}
	l.temco("Instantiated", "Instantiated", false)
	l.after(t)
	wantCalls(t, l.api.writes(), "POST "+l.path+"/update")
	if l.o.Status.UpdateRequest != "tag-moved-1" {
		t.Errorf("updateRequest %q", l.o.Status.UpdateRequest)
	}
	l.after(t)
	wantCalls(t, l.api.writes())
	l.o.Annotations[v1.AnnotationUpdate] = "tag-moved-2"
	l.after(t)
	wantCalls(t, l.api.writes(), "POST "+l.path+"/update")
}

// A request the API did not take (a 5xx) is not recorded as carried out: the next look
// asks again.
func TestDigAfterKeepsAnUpdateRequestTheAPIDidNotTake(t *testing.T) {
	l := newLifecycle(t, v1.StateInstantiated)
	l.o.Status.DeployedHash = "applied"
	l.o.Annotations = map[string]string{v1.AnnotationUpdate: "tag-moved-1"}
	l.temco("Instantiated", "Instantiated", false)
	l.api.answer(http.MethodPost, l.path+"/update", http.StatusServiceUnavailable, `{"message":"later"}`)
	if _, err := l.look(t); err == nil {
		t.Fatal("no error from a 503")
	}
	if l.o.Status.UpdateRequest != "" {
		t.Errorf("updateRequest %q recorded though the update was not started", l.o.Status.UpdateRequest)
	}
}

// An update or rollback leaves the DIG's state as it was, so a hub killed after temco's
// 202 and before its status write must learn from the DIG's revisions that temco took it,
// and not ask a second time; one whose request never landed asks again.
func TestDigAfterAsksOnceForAnUpdateWhoseAnswerWasLost(t *testing.T) {
	for _, c := range []struct {
		name, op string
		setup    func(o *v1.DeploymentIntentGroup)
		carried  func(st v1.DeploymentIntentGroupStatus) bool
	}{
		{"changed configuration", "update", func(o *v1.DeploymentIntentGroup) { o.Status.DeployedHash = "deployed-before" },
			func(st v1.DeploymentIntentGroupStatus) bool { return st.DeployedHash == "applied" }},
		{"update annotation", "update", func(o *v1.DeploymentIntentGroup) {
			o.Status.DeployedHash = "applied"
			o.Annotations = map[string]string{v1.AnnotationUpdate: "tag-moved-1"}
		}, func(st v1.DeploymentIntentGroupStatus) bool { return st.UpdateRequest == "tag-moved-1" }},
		{"rollback annotation", "rollback", func(o *v1.DeploymentIntentGroup) {
			o.Status.DeployedHash = "applied"
			o.Annotations = map[string]string{v1.AnnotationRollback: "1"}
		}, func(st v1.DeploymentIntentGroupStatus) bool { return st.RollbackRequest == "1" }},
	} {
		t.Run(c.name, func(t *testing.T) {
			l := newLifecycle(t, v1.StateInstantiated)
			c.setup(l.o)
			l.temco("Instantiated", "Instantiated", false)
			l.after(t)
			wantCalls(t, l.api.writes(), "POST "+l.path+"/"+c.op)
			// Killed before its status write: the hub has what was written before the request.
			l.reread(t)
			if q := l.o.Status.Requested; q == nil || q.Op != c.op || q.Revision != 2 || q.Context != "ctx-1" {
				t.Fatalf("requested %+v on the hub before asking, want %s at revision 2, context ctx-1", q, c.op)
			}
			// temco took it: revision 3 (context ctx-3) came of it, and it ended.
			l.revision, l.instance = 3, "ctx-3"
			l.temco("Instantiated", "Instantiated", false)
			l.api.answer(http.MethodGet, l.path+"/snapshots", http.StatusOK,
				`[{"id":"b","revisions":[{"revision":3,"contextId":"ctx-3","operation":"`+c.op+`"}]},`+
					`{"id":"a","revisions":[{"revision":1,"contextId":"ctx-0","operation":"instantiate"},{"revision":2,"contextId":"ctx-1","operation":"update"}]}]`)
			l.after(t)
			wantCalls(t, l.api.writes())
			if st := l.o.Status; st.Requested != nil || st.Operation != c.op || !c.carried(st) {
				t.Errorf("status %+v: the operation temco took not recorded", st)
			}
		})
	}
	// The deployment replaced by another operation is not the update taken: here a
	// terminate and instantiate (revision numbers start again), beside an earlier
	// instance's update of the same number.
	t.Run("deployment made by another operation", func(t *testing.T) {
		l := newLifecycle(t, v1.StateInstantiated)
		l.o.Status.DeployedHash = "deployed-before"
		l.o.Status.Requested = &v1.RequestedOperation{Op: "update", Revision: 2, Context: "ctx-1", Hash: "applied"}
		l.revision, l.instance = 1, "ctx-9"
		l.temco("Instantiated", "Instantiated", false)
		l.api.answer(http.MethodGet, l.path+"/snapshots", http.StatusOK,
			`[{"id":"a","revisions":[{"revision":1,"contextId":"ctx-9","operation":"instantiate"}]},{"id":"old","revisions":[{"revision":3,"contextId":"ctx-old","operation":"update"}]}]`)
		l.after(t)
		wantCalls(t, l.api.writes(), "POST "+l.path+"/update")
	})
	t.Run("request never landed", func(t *testing.T) {
		l := newLifecycle(t, v1.StateInstantiated)
		l.o.Status.DeployedHash = "deployed-before"
		l.temco("Instantiated", "Instantiated", false)
		l.api.answer(http.MethodPost, l.path+"/update", http.StatusServiceUnavailable, `{"message":"later"}`)
		if _, err := l.look(t); err == nil {
			t.Fatal("no error from a 503")
		}
		l.reread(t)
		l.api.answer(http.MethodPost, l.path+"/update", 0, "")
		l.after(t)
		wantCalls(t, l.api.writes(), "POST "+l.path+"/update")
		if st := l.o.Status; st.Requested != nil || st.DeployedHash != "applied" {
			t.Errorf("status %+v after the update was asked again", st)
		}
	})
}

func TestDigAfterRollsBack(t *testing.T) {
	for _, c := range []struct {
		annotation string
		spec       map[string]any
	}{
		{"1", map[string]any{"revision": "1"}},
		{"snap-7f3a", map[string]any{"snapshot": "snap-7f3a"}},
	} {
		t.Run(c.annotation, func(t *testing.T) {
			l := newLifecycle(t, v1.StateInstantiated)
			l.o.Status.DeployedHash = "applied"
			l.o.Annotations = map[string]string{v1.AnnotationRollback: c.annotation}
			l.temco("Instantiated", "Instantiated", false)
			l.after(t)
			w := l.api.writes()
			wantCalls(t, w, "POST "+l.path+"/rollback")
			sameJSON(t, "rollback body", w[0].Body, map[string]any{"spec": c.spec})
			if l.o.Status.RollbackRequest != c.annotation || l.o.Status.Operation != "rollback" {
				t.Errorf("rollbackRequest %q operation %q", l.o.Status.RollbackRequest, l.o.Status.Operation)
			}
			l.after(t)
			wantCalls(t, l.api.writes())
		})
	}
}

func TestDigAfterStartsNothingWhileAnOperationRuns(t *testing.T) {
	for _, c := range []struct {
		name     string
		deployed string
		running  bool
	}{
		{"operation set", "Instantiated", true},
		{"deployedStatus Instantiating", "Instantiating", false},
		{"deployedStatus Updating", "Updating", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			l := newLifecycle(t, v1.StateInstantiated)
			l.o.Status.DeployedHash = "deployed-before" // an update is due, once the operation ends
			l.o.Annotations = map[string]string{v1.AnnotationRollback: "1"}
			l.temco("Instantiated", c.deployed, c.running)
			if next := l.after(t); next != followRunning {
				t.Errorf("next look in %v, want %v", next, followRunning)
			}
			wantCalls(t, l.api.writes())
			if l.condition(t, v1.Progressing) != metav1.ConditionTrue || l.condition(t, v1.Ready) != metav1.ConditionFalse {
				t.Errorf("conditions %v", l.o.Status.Conditions)
			}
			if c.running && l.o.Status.WorkflowID != "wf-running" {
				t.Errorf("workflowId %q", l.o.Status.WorkflowID)
			}
		})
	}
}

func TestDigAfterTerminates(t *testing.T) {
	l := newLifecycle(t, v1.StateTerminated)
	l.temco("Instantiated", "Instantiated", false)
	l.after(t)
	wantCalls(t, l.api.writes(), "POST "+l.path+"/terminate")
	if l.o.Status.Operation != "terminate" {
		t.Errorf("operation %q", l.o.Status.Operation)
	}
	l.temco("Terminated", "Terminated", false)
	l.after(t)
	wantCalls(t, l.api.writes())
	if l.condition(t, v1.Ready) != metav1.ConditionTrue {
		t.Errorf("Terminated as wanted, but not Ready: %v", l.o.Status.Conditions)
	}
}

func TestDigAfterReturnsARefusal(t *testing.T) {
	l := newLifecycle(t, v1.StateInstantiated)
	l.temco("Approved", "", false)
	l.api.answer(http.MethodPost, l.path+"/instantiate", http.StatusBadRequest, `{"message":"the logical cloud is not instantiated"}`)
	_, err := l.look(t)
	if r := mustRefuse(t, err, http.StatusBadRequest); r.Message != "the logical cloud is not instantiated" {
		t.Errorf("message %q", r.Message)
	}
	if l.o.Status.DeployedHash != "" {
		t.Errorf("deployedHash %q recorded for an instantiate that did not start", l.o.Status.DeployedHash)
	}
}

func TestDigAfterReportsAFailedOperationAsDegraded(t *testing.T) {
	l := newLifecycle(t, v1.StateInstantiated)
	l.o.Status.DeployedHash = "applied"
	l.temco("Instantiated", "InstantiateFailed", false)
	l.after(t)
	if l.condition(t, v1.Degraded) != metav1.ConditionTrue || l.condition(t, v1.Ready) != metav1.ConditionFalse {
		t.Errorf("conditions %v", l.o.Status.Conditions)
	}
}

// The plan of a look at an idle DIG: which operation its desired state, status and
// annotations ask for.
func TestNextDIGStep(t *testing.T) {
	cases := []struct {
		name, want, state     string
		deployed, update, rb  string // the deployed hash ("applied" unless set), the annotations
		updateReq, rollbackRq string // the requests carried out already
		op, request, body     string
		approveFirst          bool
	}{
		{name: "created wanted: nothing", want: v1.StateCreated, state: "Instantiated"},
		{name: "approved wanted of a created DIG", want: v1.StateApproved, state: "Created", op: "approve"},
		{name: "approved wanted of a terminated DIG", want: v1.StateApproved, state: "Terminated", op: "approve"},
		{name: "approved and approved", want: v1.StateApproved, state: "Approved"},
		{name: "approved wanted of a deployed DIG", want: v1.StateApproved, state: "Instantiated", op: "terminate"},
		{name: "terminated wanted of a stopped instantiate", want: v1.StateTerminated, state: "InstantiateStopped", op: "terminate"},
		{name: "terminated wanted of a created DIG", want: v1.StateTerminated, state: "Created"},
		{name: "terminated wanted of a stopped terminate", want: v1.StateTerminated, state: "TerminateStopped", op: "terminate"},
		// A migrated DIG's deployment lives on in its target: the hub leaves it, though the
		// machine would approve it.
		{name: "approved wanted of a migrated DIG", want: v1.StateApproved, state: "Migrated"},
		{name: "instantiated wanted of a migrated DIG", want: v1.StateInstantiated, state: "Migrated"},
		{name: "instantiated wanted of a created DIG: approved first", want: v1.StateInstantiated, state: "Created", op: "instantiate", approveFirst: true},
		{name: "instantiated wanted of an approved DIG", want: v1.StateInstantiated, state: "Approved", op: "instantiate"},
		{name: "instantiated wanted of a terminated DIG", want: v1.StateInstantiated, state: "Terminated", op: "instantiate"},
		{name: "instantiated and up to date", want: v1.StateInstantiated, state: "Instantiated"},
		{name: "instantiated, but its instantiate failed", want: v1.StateInstantiated, state: "InstantiateFailed", deployed: "old"},
		{name: "the configuration changed", want: v1.StateInstantiated, state: "Instantiated", deployed: "old", op: "update"},
		{name: "an update annotation", want: v1.StateInstantiated, state: "Instantiated", update: "u2", updateReq: "u1", op: "update", request: "u2"},
		{name: "an update annotation carried out", want: v1.StateInstantiated, state: "Instantiated", update: "u1", updateReq: "u1"},
		{name: "a rollback to a revision", want: v1.StateInstantiated, state: "Instantiated", rb: "3", op: "rollback", request: "3", body: `{"spec":{"revision":"3"}}`},
		{name: "a rollback to a snapshot, before an update", want: v1.StateInstantiated, state: "Instantiated", deployed: "old", rb: "snap-1",
			op: "rollback", request: "snap-1", body: `{"spec":{"snapshot":"snap-1"}}`},
		{name: "a rollback carried out", want: v1.StateInstantiated, state: "Instantiated", rb: "3", rollbackRq: "3"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := dig()
			o.Spec.State = c.want
			o.Status.State, o.Status.AppliedHash, o.Status.DeployedHash = c.state, "applied", cmpOr(c.deployed, "applied")
			o.Status.UpdateRequest, o.Status.RollbackRequest = c.updateReq, c.rollbackRq
			o.Annotations = map[string]string{}
			if c.update != "" {
				o.Annotations[v1.AnnotationUpdate] = c.update
			}
			if c.rb != "" {
				o.Annotations[v1.AnnotationRollback] = c.rb
			}
			step := nextDIGStep(o)
			body := ""
			if step.body != nil {
				b, _ := json.Marshal(step.body)
				body = string(b)
			}
			if step.q.Op != c.op || step.q.Request != c.request || body != c.body || step.approveFirst != c.approveFirst {
				t.Errorf("step %+v body %s, want op %q request %q body %s approve first %v", step.q, body, c.op, c.request, c.body, c.approveFirst)
			}
			if step.q.Op != "" && step.q.Hash != "applied" {
				t.Errorf("the request carries hash %q, not the applied one", step.q.Hash)
			}
		})
	}
}

func TestAppClustersListsEveryAppOnceByName(t *testing.T) {
	got := appClusters([]string{"web", "db"}, map[string]map[string]int{"web": {"Applied": 2, "Failed": 1}, "cache": {"Pending": 1}})
	if want := "[{cache {1 0 1 0 0}} {db {0 0 0 0 0}} {web {3 2 0 1 0}}]"; fmt.Sprint(got) != want {
		t.Errorf("%v, want %s", got, want)
	}
	if appClusters(nil, nil) != nil {
		t.Error("no apps: want none")
	}
}
