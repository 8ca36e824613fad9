package main

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
)

func newEnv(t *testing.T) *testsuite.TestWorkflowEnvironment {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	register(env)
	t.Cleanup(func() { env.AssertExpectations(t) })
	return env
}

func params(journal, hook string, more map[string]map[string]string) Params {
	p := Params{ActivityParams: map[string]map[string]string{
		"journal": {"path": journal},
		"emco":    {"hook": hook, "hookType": "pre-install", "operation": "instantiate"},
	}}
	for k, v := range more {
		p.ActivityParams[k] = v
	}
	return p
}

// journalLines are the journal's lines without their run ids.
func journalLines(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var out []string
	for _, l := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		before, run, ok := strings.Cut(l, " run=")
		require.True(t, ok && run != "", "line %q has no run id", l)
		out = append(out, before)
	}
	return out
}

func appError(t *testing.T, err error) *temporal.ApplicationError {
	t.Helper()
	var app *temporal.ApplicationError
	require.True(t, errors.As(err, &app), "not an application error: %v", err)
	return app
}

var readyWeb = map[string]map[string]string{"check": {"kubeconfig": "/k", "namespace": "apps", "name": "web", "expect": "ready", "replicas": "2"}}

func TestCheckReturnsWhatTheActivityFound(t *testing.T) {
	env := newEnv(t)
	var a *Activities
	env.OnActivity(a.CheckObject, mock.Anything, mock.MatchedBy(func(c CheckSpec) bool {
		return c.Kind == "Deployment" && c.Namespace == "apps" && c.Name == "web" && c.Expect == "ready" &&
			*c.Replicas == 2 && c.Entry == Entry{Journal: "/j", Hook: "h1", What: "check ready ok"}
	})).Return("deployment apps/web is ready with 2 replicas", nil).Once()

	env.ExecuteWorkflow(Check, params("/j", "h1", readyWeb))
	require.NoError(t, env.GetWorkflowError())
	var got string
	require.NoError(t, env.GetWorkflowResult(&got))
	assert.Equal(t, "deployment apps/web is ready with 2 replicas", got)
}

func TestCheckFailsAtOnceWhenTheExpectationDoesNotHold(t *testing.T) {
	env := newEnv(t)
	var a *Activities
	msg := "deployment default/web: expected absent, found present"
	env.OnActivity(a.CheckObject, mock.Anything, mock.Anything).
		Return("", temporal.NewNonRetryableApplicationError(msg, ExpectationFailed, nil)).Once()

	env.ExecuteWorkflow(Check, params("", "h1", map[string]map[string]string{"check": {"kubeconfig": "/k", "name": "web", "expect": "absent"}}))
	app := appError(t, env.GetWorkflowError())
	assert.Equal(t, ExpectationFailed, app.Type())
	assert.Equal(t, msg, app.Message())
}

func TestCheckRefusesParamsItCannotUse(t *testing.T) {
	for name, check := range map[string]map[string]string{
		"no kubeconfig": {"name": "web", "expect": "ready"},
		"bad expect":    {"kubeconfig": "/k", "name": "web", "expect": "running"},
		"other kind":    {"kubeconfig": "/k", "kind": "Service", "name": "web", "expect": "present"},
		"bad replicas":  {"kubeconfig": "/k", "name": "web", "expect": "ready", "replicas": "two"},
		"absent with n": {"kubeconfig": "/k", "name": "web", "expect": "absent", "replicas": "1"},
	} {
		t.Run(name, func(t *testing.T) {
			env := newEnv(t)
			env.ExecuteWorkflow(Check, params("", "h1", map[string]map[string]string{"check": check}))
			assert.Equal(t, BadParams, appError(t, env.GetWorkflowError()).Type())
		})
	}
}

func TestMismatchNamesWhatWasFound(t *testing.T) {
	two := int32(2)
	ready := Observed{Present: true, Generation: 3, ObservedGeneration: 3, Replicas: 2, ReadyReplicas: 2, UpdatedReplicas: 2}
	for _, tc := range []struct {
		name   string
		check  CheckSpec
		seen   Observed
		wanted string
	}{
		{"absent holds", CheckSpec{Expect: "absent"}, Observed{}, ""},
		{"absent but present", CheckSpec{Expect: "absent"}, ready, "present"},
		{"present but absent", CheckSpec{Kind: "Deployment", Expect: "present"}, Observed{}, "absent"},
		{"present, not ready", CheckSpec{Kind: "Deployment", Expect: "present"}, Observed{Present: true, Replicas: 2}, ""},
		{"replicas differ", CheckSpec{Kind: "Deployment", Expect: "present", Replicas: &two}, Observed{Present: true, Replicas: 1}, "1 replicas"},
		{"ready", CheckSpec{Kind: "Deployment", Expect: "ready", Replicas: &two}, ready, ""},
		{"generation not observed", CheckSpec{Kind: "Deployment", Expect: "ready"},
			Observed{Present: true, Generation: 4, ObservedGeneration: 3, Replicas: 2, ReadyReplicas: 2, UpdatedReplicas: 2},
			"generation 4 not yet observed (observed 3)"},
		{"not all ready", CheckSpec{Kind: "Deployment", Expect: "ready"},
			Observed{Present: true, Generation: 1, ObservedGeneration: 1, Replicas: 2, ReadyReplicas: 1, UpdatedReplicas: 2},
			"1/2 ready, 2/2 updated"},
		{"configmap ready when present", CheckSpec{Kind: "ConfigMap", Expect: "ready"}, Observed{Present: true}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.wanted, mismatch(tc.check, tc.seen))
		})
	}
}

func TestFailJournalsThenRefuses(t *testing.T) {
	for _, tc := range []struct{ given, wanted string }{{"", "the hook refused"}, {"not today", "not today"}} {
		journal := filepath.Join(t.TempDir(), "journal")
		env := newEnv(t)
		env.ExecuteWorkflow(Fail, params(journal, "gate", map[string]map[string]string{"fail": {"message": tc.given}}))
		app := appError(t, env.GetWorkflowError())
		assert.Equal(t, HookRefused, app.Type())
		assert.Equal(t, tc.wanted, app.Message())
		assert.True(t, app.NonRetryable())
		assert.Equal(t, []string{"gate fail"}, journalLines(t, journal))
	}
}

func TestStepsRunsStep2OnlyAfterContinue(t *testing.T) {
	journal := filepath.Join(t.TempDir(), "journal")
	env := newEnv(t)
	env.RegisterDelayedCallback(func() {
		assert.Equal(t, []string{"h2 step1"}, journalLines(t, journal), "before continue")
		env.SignalWorkflow(ContinueSignal, nil)
	}, time.Hour)

	env.ExecuteWorkflow(Steps, params(journal, "h2", nil))
	require.NoError(t, env.GetWorkflowError())
	var got string
	require.NoError(t, env.GetWorkflowResult(&got))
	assert.Equal(t, "done", got)
	assert.Equal(t, []string{"h2 step1", "h2 step2"}, journalLines(t, journal))
}

func TestJournalAppendsEachLineOnce(t *testing.T) {
	journal := filepath.Join(t.TempDir(), "journal")
	var a Activities
	for _, line := range []string{"h step1 run=r1", "h step1 run=r1", "h step1 run=r2", "h step1 run=r1"} {
		require.NoError(t, a.appendOnce(journal, line))
	}
	data, err := os.ReadFile(journal)
	require.NoError(t, err)
	assert.Equal(t, "h step1 run=r1\nh step1 run=r2\n", string(data))
}

func TestJournalKeepsATornLastLineApart(t *testing.T) {
	journal := filepath.Join(t.TempDir(), "journal")
	require.NoError(t, os.WriteFile(journal, []byte("h step1 run=r1\nh ste"), 0o644))
	var a Activities
	require.NoError(t, a.appendOnce(journal, "h step1 run=r1"))
	require.NoError(t, a.appendOnce(journal, "h step2 run=r1"))
	data, err := os.ReadFile(journal)
	require.NoError(t, err)
	assert.Equal(t, "h step1 run=r1\nh ste\nh step2 run=r1\n", string(data))
}

// fakeCluster serves one Deployment, apps/web, and a kubeconfig that points at it.
func fakeCluster(t *testing.T, deployment string) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path != "/apis/apps/v1/namespaces/apps/deployments/web" {
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`)
			return
		}
		fmt.Fprint(w, deployment)
	}))
	t.Cleanup(srv.Close)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(kubeconfig, fmt.Appendf(nil, `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: %q}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`, srv.URL), 0o600))
	return kubeconfig
}

func TestCheckObjectReadsTheClusterAndJournalsSuccess(t *testing.T) {
	kubeconfig := fakeCluster(t, `{"apiVersion":"apps/v1","kind":"Deployment",
		"metadata":{"name":"web","namespace":"apps","generation":2},"spec":{"replicas":2},
		"status":{"observedGeneration":2,"replicas":2,"readyReplicas":1,"updatedReplicas":2}}`)
	journal := filepath.Join(t.TempDir(), "journal")
	two := int32(2)
	for _, tc := range []struct {
		name, kind, obj, expect, wanted string
		replicas                        *int32
	}{
		{"present", "Deployment", "web", "present", "deployment apps/web is present", nil},
		{"replicas", "Deployment", "web", "present", "deployment apps/web is present with 2 replicas", &two},
		{"not ready", "Deployment", "web", "ready", "deployment apps/web: expected ready, found 1/2 ready, 2/2 updated", nil},
		{"not absent", "Deployment", "web", "absent", "deployment apps/web: expected absent, found present", nil},
		{"absent", "Deployment", "db", "absent", "deployment apps/db is absent", nil},
		{"configmap absent", "ConfigMap", "web", "present", "configmap apps/web: expected present, found absent", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s testsuite.WorkflowTestSuite
			env := s.NewTestActivityEnvironment()
			a := &Activities{}
			env.RegisterActivity(a)
			spec := CheckSpec{Kubeconfig: kubeconfig, Namespace: "apps", Kind: tc.kind, Name: tc.obj, Expect: tc.expect,
				Replicas: tc.replicas, Entry: Entry{Journal: journal, Hook: "h", What: tc.name}}
			v, err := env.ExecuteActivity(a.CheckObject, spec)
			if err != nil {
				app := appError(t, err)
				assert.Equal(t, ExpectationFailed, app.Type())
				assert.Equal(t, tc.wanted, app.Message())
				return
			}
			var got string
			require.NoError(t, v.Get(&got))
			assert.Equal(t, tc.wanted, got)
		})
	}
	assert.Equal(t, []string{"h present", "h replicas", "h absent"}, journalLines(t, journal))
}
