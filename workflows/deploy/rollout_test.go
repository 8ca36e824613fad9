package deploy

import (
	"context"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/rollout"
)

// Three stages: a (cp+a1), b (cp+b1, cp+b2) and c (cp+c1), one batch each, as placement
// lays them out.
var rolloutMembers = []rollout.Member{{Key: "cp+a1", Labels: []string{"ring=a"}}, {Key: "cp+b1", Labels: []string{"ring=b"}},
	{Key: "cp+b2", Labels: []string{"ring=b"}}, {Key: "cp+c1"}}

func stages(t *testing.T, spec rollout.Spec) *fakes {
	t.Helper()
	plan, batchOf, _, err := rollout.Layout("rings", spec, rolloutMembers, 50)
	if err != nil {
		t.Fatal(err)
	}
	f := newFakes()
	byBatch := map[int][]string{}
	for _, m := range rolloutMembers {
		byBatch[batchOf[m.Key]] = append(byBatch[batchOf[m.Key]], m.Key)
	}
	f.plan = lifecycle.Plan{Apps: 1, Clusters: len(rolloutMembers), Batches: len(byBatch), Rollout: &plan}
	f.clusters = func(b int) []string { return byBatch[b] }
	f.readOf = f.notReady()
	return f
}

func ring(name string, mod func(*rollout.Stage)) rollout.Stage {
	st := rollout.Stage{Name: name, ClusterLabels: []string{"ring=" + name}, ProgressDeadline: rollout.Duration(5 * time.Minute)}
	if name == "c" {
		st.ClusterLabels = nil // the rest
	}
	if mod != nil {
		mod(&st)
	}
	return st
}

// recorder keeps what the rollout records, and answers window questions as the activity does.
type recorder struct {
	mu      sync.Mutex
	records []lifecycle.RolloutStatus
}

func (r *recorder) register(env *testsuite.TestWorkflowEnvironment) {
	lifecycle.RegisterNoResult(env, lifecycle.RecordRollout, func(_ context.Context, in lifecycle.RolloutRecord) error {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.records = append(r.records, in.Status)
		return nil
	})
	lifecycle.Register(env, lifecycle.RolloutWindow, func(_ context.Context, in lifecycle.WindowInput) (rollout.Opening, error) {
		return in.Window.At(in.Now)
	})
}

func (r *recorder) last() lifecycle.RolloutStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.records[len(r.records)-1]
}

// saw reports whether some record had stage i in state.
func (r *recorder) saw(i int, state string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.records {
		if s.Stages[i].State == state {
			return true
		}
	}
	return false
}

// notReady reads as ReadCluster does: what was not applied counts as Failed, and the
// clusters named are not Ready.
func (f *fakes) notReady(clusters ...string) func(string) lifecycle.ClusterResult {
	return func(c string) lifecycle.ClusterResult {
		if f.applied[c] == 0 {
			return lifecycle.ClusterResult{Failed: 1, NotReady: 1}
		}
		for _, n := range clusters {
			if c == n {
				return lifecycle.ClusterResult{Done: 1, NotReady: 1}
			}
		}
		return lifecycle.ClusterResult{Done: 1}
	}
}

func TestRolloutWaitsForTheApprovalOfAStageAndRefusesOneForAnother(t *testing.T) {
	f := stages(t, rollout.Spec{Stages: []rollout.Stage{ring("a", nil),
		ring("b", func(s *rollout.Stage) { s.Before = []rollout.Task{{Type: rollout.TaskApproval}} }), ring("c", nil)}})
	rec := &recorder{}
	var before map[string]int
	var refused error
	err := run(t, f, Instantiate, func(env *testsuite.TestWorkflowEnvironment) {
		rec.register(env)
		env.RegisterDelayedCallback(func() {
			before = maps.Clone(f.applied)
			env.UpdateWorkflow(lifecycle.UpdateRollout, "wrong-stage", &testsuite.TestUpdateCallback{
				OnReject: func(err error) { refused = err }, OnAccept: func() {}, OnComplete: func(any, error) {},
			}, lifecycle.RolloutCommand{Action: lifecycle.RolloutApprove, Stage: "c"})
			env.SignalWorkflow(lifecycle.SignalApprove, lifecycle.RolloutCommand{Stage: "b"})
		}, 24*time.Hour)
	})
	if err != nil {
		t.Fatal(err)
	}
	if before["cp+a1"] != 1 || before["cp+b1"] != 0 || before["cp+c1"] != 0 {
		t.Errorf("before the approval applied %v, want stage a only", before)
	}
	if refused == nil || !strings.Contains(refused.Error(), `stage "c" is not waiting for an approval; stage "b" is`) {
		t.Errorf("an approval of the wrong stage: %v", refused)
	}
	for _, c := range []string{"cp+a1", "cp+b1", "cp+b2", "cp+c1"} {
		if f.applied[c] != 1 {
			t.Errorf("cluster %s applied %d times, want once: %v", c, f.applied[c], f.applied)
		}
	}
	if !rec.saw(1, lifecycle.StageWaitingForApproval) {
		t.Error("stage b was never recorded WaitingForApproval")
	}
	fin := f.finish(t)
	if fin.Status != lifecycle.StatusInstantiated || fin.Rollout == nil || fin.Rollout.State != lifecycle.RolloutSucceeded {
		t.Fatalf("finished %+v", fin)
	}
	if got := fin.Rollout.Stages[1].Approved; len(got) != 1 || got[0] != "before" {
		t.Errorf("stage b approvals %v", got)
	}
}

// A stage whose clusters never become Ready fails at its deadline: every cluster the
// instantiate changed (stages a and b) is emptied again, stage c is never touched.
func TestRolloutDeadlineRemovesAFirstInstantiateFromTheStagesItReached(t *testing.T) {
	f := stages(t, rollout.Spec{Stages: []rollout.Stage{ring("a", nil), ring("b", nil), ring("c", nil)}})
	f.readOf = f.notReady("cp+b2")
	rec := &recorder{}
	err := run(t, f, Instantiate, rec.register)
	if err == nil || !strings.Contains(err.Error(), "stage b: 1 of 2 clusters not Ready by its progress deadline (5m0s), more than its budget of 0") {
		t.Fatalf("error %v", err)
	}
	if got := f.deletedC["42"]; len(got) != 3 || f.deleted["cp+c1"] != 0 {
		t.Errorf("deleted %v, want a1, b1 and b2", got)
	}
	if f.applied["cp+c1"] != 0 {
		t.Error("stage c was applied")
	}
	fin := f.finish(t)
	if fin.Status != lifecycle.StatusInstantiateFailed || fin.Rollout.State != lifecycle.RolloutRolledBack || fin.Restored != "" {
		t.Errorf("finished %+v", fin)
	}
	states := []string{fin.Rollout.Stages[0].State, fin.Rollout.Stages[1].State, fin.Rollout.Stages[2].State}
	if strings.Join(states, ",") != "RolledBack,RolledBack,Pending" {
		t.Errorf("stage states %v", states)
	}
}

// An update that fails a stage returns the clusters it changed to the previous revision:
// that revision applied again over the new one, then what only the new one has pruned.
func TestRolloutDeadlineReturnsAnUpdateToThePreviousRevision(t *testing.T) {
	f := stages(t, rollout.Spec{Stages: []rollout.Stage{ring("a", nil), ring("b", nil), ring("c", nil)}})
	f.readOf = f.notReady("cp+b1", "cp+b2")
	in := opInput
	in.Previous = "41"
	err := runWith(t, f, Update, in, (&recorder{}).register)
	if err == nil || !strings.Contains(err.Error(), "rolled back on the 3 clusters it had changed") {
		t.Fatalf("error %v", err)
	}
	restored := map[string]bool{}
	for _, p := range f.pruned {
		if p.ContextID == "42" && p.Next == "41" {
			restored[p.Cluster] = true
		}
	}
	if len(restored) != 3 || restored["cp+c1"] {
		t.Errorf("new revision pruned back from %v, want a1, b1 and b2", restored)
	}
	if f.applied["cp+a1"] != 2 || f.previous["cp+a1"] != "42" || f.applied["cp+c1"] != 0 {
		t.Errorf("applied %v (last Previous %v): want a1 applied, then the previous revision over the new one", f.applied, f.previous)
	}
	fin := f.finish(t)
	if fin.Status != lifecycle.StatusUpdateFailed || fin.Restored != "41" || fin.Superseded != "" {
		t.Errorf("finished %+v", fin)
	}
}

// maxFailures lets a stage through with that many clusters not Ready at its deadline.
func TestRolloutFailureBudgetLetsAStageThrough(t *testing.T) {
	f := stages(t, rollout.Spec{Stages: []rollout.Stage{ring("a", nil),
		ring("b", func(s *rollout.Stage) { s.MaxFailures = &rollout.IntOrPercent{Value: 50, Percent: true} }), ring("c", nil)}})
	f.readOf = f.notReady("cp+b2")
	if err := run(t, f, Instantiate, (&recorder{}).register); err != nil {
		t.Fatal(err)
	}
	fin := f.finish(t)
	if b := fin.Rollout.Stages[1]; b.State != lifecycle.StageSucceeded || b.NotReady != 1 || b.Ready != 1 || b.Budget != 1 {
		t.Errorf("stage b %+v", b)
	}
	if f.applied["cp+c1"] != 1 {
		t.Error("stage c was not applied")
	}
}

// pausedRun runs an instantiate paused at pause and resumed 48 h later; held is what
// was applied when it was resumed.
func pausedRun(t *testing.T, f *fakes, rec *recorder, pause time.Duration) (held map[string]int, err error) {
	t.Helper()
	err = run(t, f, Instantiate, func(env *testsuite.TestWorkflowEnvironment) {
		rec.register(env)
		env.RegisterDelayedCallback(func() { env.SignalWorkflow(lifecycle.SignalPause, nil) }, pause)
		env.RegisterDelayedCallback(func() {
			held = maps.Clone(f.applied)
			env.SignalWorkflow(lifecycle.SignalResume, nil)
		}, 48*time.Hour)
	})
	return held, err
}

// A pause holds the rollout before the next stage, however long; resume goes on.
func TestRolloutPauseHoldsTheNextStageUntilResumed(t *testing.T) {
	f := stages(t, rollout.Spec{Stages: []rollout.Stage{ring("a", nil),
		ring("b", func(s *rollout.Stage) {
			s.Before = []rollout.Task{{Type: rollout.TaskWait, Duration: rollout.Duration(10 * time.Minute)}}
		}),
		ring("c", nil)}})
	rec := &recorder{}
	held, err := pausedRun(t, f, rec, 5*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if held["cp+b1"] != 0 || held["cp+a1"] != 1 {
		t.Errorf("while paused applied %v, want stage a only", held)
	}
	if f.applied["cp+b1"] != 1 || f.applied["cp+c1"] != 1 {
		t.Errorf("after resume applied %v", f.applied)
	}
	paused := false
	for _, r := range rec.records {
		paused = paused || r.State == lifecycle.RolloutPaused
	}
	if !paused {
		t.Error("the pause was never recorded")
	}
}

// A stage waits for its maintenance window, a durable timer to its next opening in the
// window's time zone.
func TestRolloutWaitsForTheStagesWindow(t *testing.T) {
	f := stages(t, rollout.Spec{Stages: []rollout.Stage{ring("a", nil),
		ring("b", func(s *rollout.Stage) {
			s.Window = &rollout.Window{Cron: "0 2 * * *", Duration: rollout.Duration(time.Hour), TimeZone: "Europe/Paris"}
		}), ring("c", nil)}})
	rec := &recorder{}
	err := run(t, f, Instantiate, func(env *testsuite.TestWorkflowEnvironment) {
		env.SetStartTime(time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC))
		rec.register(env)
	})
	if err != nil {
		t.Fatal(err)
	}
	opens := time.Date(2026, 11, 25, 1, 0, 0, 0, time.UTC) // 02:00 in Paris (CET)
	if !rec.saw(1, lifecycle.StageWaitingForWindow) {
		t.Error("stage b never waited for its window")
	}
	b := f.finish(t).Rollout.Stages[1]
	if b.Started == nil || !b.Started.Equal(opens) {
		t.Errorf("stage b started at %v, want when its window opened, %v", b.Started, opens)
	}
}

// A stage that falls out of Ready during its bake fails.
func TestRolloutBakeFailsAStageThatFallsOutOfReady(t *testing.T) {
	f := stages(t, rollout.Spec{Stages: []rollout.Stage{
		ring("a", func(s *rollout.Stage) { s.MinSuccessTime = rollout.Duration(10 * time.Minute) }), ring("b", nil), ring("c", nil)}})
	reads := 0
	f.readOf = func(string) lifecycle.ClusterResult {
		reads++
		if reads > 2 {
			return lifecycle.ClusterResult{Done: 1, NotReady: 1}
		}
		return lifecycle.ClusterResult{Done: 1}
	}
	err := run(t, f, Instantiate, (&recorder{}).register)
	if err == nil || !strings.Contains(err.Error(), "stage a: 1 of 1 clusters fell out of Ready during its bake (10m0s)") {
		t.Fatalf("error %v", err)
	}
	if f.applied["cp+b1"] != 0 || f.deleted["cp+a1"] != 1 {
		t.Errorf("applied %v, deleted %v", f.applied, f.deleted)
	}
}

// Under a manual policy a failed stage waits for an operator; a rollback then undoes it.
func TestRolloutManualPolicyWaitsForTheOperatorsRollback(t *testing.T) {
	f := stages(t, rollout.Spec{Rollback: rollout.RollbackManual,
		Stages: []rollout.Stage{ring("a", nil), ring("b", nil), ring("c", nil)}})
	f.readOf = f.notReady("cp+b1")
	rec := &recorder{}
	var waiting lifecycle.RolloutStatus
	var deletedBefore int
	err := run(t, f, Instantiate, func(env *testsuite.TestWorkflowEnvironment) {
		rec.register(env)
		env.RegisterDelayedCallback(func() {
			waiting, deletedBefore = rec.last(), len(f.deletedC["42"])
			env.SignalWorkflow(lifecycle.SignalRollback, nil)
		}, 72*time.Hour)
	})
	if err == nil || !strings.Contains(err.Error(), "rolled back") {
		t.Fatalf("error %v", err)
	}
	if waiting.State != lifecycle.RolloutAwaitingDecision || deletedBefore != 0 {
		t.Errorf("before the decision: %s, %d clusters deleted", waiting.State, deletedBefore)
	}
	if len(f.deletedC["42"]) != 3 {
		t.Errorf("deleted %v", f.deletedC["42"])
	}
}

// A stop during an approval wait ends the operation stopped, the rest untouched.
func TestRolloutStopDuringAnApproval(t *testing.T) {
	f := stages(t, rollout.Spec{Stages: []rollout.Stage{ring("a", nil),
		ring("b", func(s *rollout.Stage) { s.Before = []rollout.Task{{Type: rollout.TaskApproval}} }), ring("c", nil)}})
	err := run(t, f, Instantiate, func(env *testsuite.TestWorkflowEnvironment) {
		(&recorder{}).register(env)
		env.RegisterDelayedCallback(func() { env.SignalWorkflow(lifecycle.SignalStop, nil) }, time.Hour)
	})
	if err != nil {
		t.Fatal(err)
	}
	if fin := f.finish(t); fin.Status != lifecycle.StatusInstantiateStopped || f.applied["cp+b1"] != 0 || len(f.deletedC["42"]) != 0 {
		t.Errorf("finished %+v, applied %v, deleted %v", fin, f.applied, f.deletedC)
	}
}

// A rollback follows the strategy as an update does: the copied revision reaches the
// stages in order, behind their gates.
func TestRollbackFollowsTheStages(t *testing.T) {
	f := stages(t, rollout.Spec{Stages: []rollout.Stage{ring("a", nil),
		ring("b", func(s *rollout.Stage) { s.Before = []rollout.Task{{Type: rollout.TaskApproval}} }), ring("c", nil)}})
	in := opInput
	in.Previous, in.Source = "41", "40"
	var before map[string]int
	err := runWith(t, f, Rollback, in, func(env *testsuite.TestWorkflowEnvironment) {
		(&recorder{}).register(env)
		env.RegisterDelayedCallback(func() {
			before = maps.Clone(f.applied)
			env.SignalWorkflow(lifecycle.SignalApprove, nil)
		}, time.Hour)
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(f.copied) != 1 || before["cp+a1"] != 1 || before["cp+b1"] != 0 || f.applied["cp+c1"] != 1 {
		t.Errorf("copied %v; before the approval applied %v, after %v", f.copied, before, f.applied)
	}
	if fin := f.finish(t); fin.Status != lifecycle.StatusInstantiated || fin.Superseded != "41" {
		t.Errorf("finished %+v", fin)
	}
}

// A stage's window is checked after its before tasks (release 5): an approval given
// after the window closed waits for its next opening. Runs of release 4 applied at the
// approval, as they recorded.
func TestRolloutApprovalAfterTheWindowClosedWaitsForItsNextOpening(t *testing.T) {
	start := time.Date(2026, 11, 25, 1, 10, 0, 0, time.UTC) // 02:10 in Paris: the window is open
	approved := start.Add(2 * time.Hour)                    // 04:10 in Paris: closed since 03:00
	for name, c := range map[string]struct {
		release workflow.Version
		started time.Time
	}{
		"release 5": {releaseStages, time.Date(2026, 11, 26, 1, 0, 0, 0, time.UTC)},
		"release 4": {releaseWorkflows, approved},
	} {
		t.Run(name, func(t *testing.T) {
			f := stages(t, rollout.Spec{Stages: []rollout.Stage{ring("a", nil),
				ring("b", func(s *rollout.Stage) {
					s.Before = []rollout.Task{{Type: rollout.TaskApproval}}
					s.Window = &rollout.Window{Cron: "0 2 * * *", Duration: rollout.Duration(time.Hour), TimeZone: "Europe/Paris"}
				}), ring("c", nil)}})
			rec := &recorder{}
			err := run(t, f, Instantiate, func(env *testsuite.TestWorkflowEnvironment) {
				env.OnGetVersion(changeRelease, workflow.DefaultVersion, releaseLatest).Return(c.release)
				env.SetStartTime(start)
				rec.register(env)
				env.RegisterDelayedCallback(func() {
					env.SignalWorkflow(lifecycle.SignalApprove, lifecycle.RolloutCommand{Stage: "b"})
				}, 2*time.Hour)
			})
			if err != nil {
				t.Fatal(err)
			}
			b := f.finish(t).Rollout.Stages[1]
			if b.State != lifecycle.StageSucceeded || b.Started == nil || !b.Started.Equal(c.started) {
				t.Errorf("stage b %s, started at %v, want at %v", b.State, b.Started, c.started)
			}
		})
	}
}

// groupedB is stage b applied one cluster at a time, each group waiting until the changed
// clusters are Ready (maxUnavailable 0); cp+b1 reads not Ready three times (t = 0, 2 s
// and 6 s), so stage b's second group cannot start before t = 14 s.
func groupedB(t *testing.T, window *rollout.Window) *fakes {
	f := stages(t, rollout.Spec{Stages: []rollout.Stage{ring("a", nil),
		ring("b", func(s *rollout.Stage) {
			s.MaxConcurrency = &rollout.IntOrPercent{Value: 1}
			s.MaxUnavailable = &rollout.IntOrPercent{Value: 0}
			s.Window = window
		}), ring("c", nil)}})
	var mu sync.Mutex
	slow := 0
	f.readOf = func(c string) lifecycle.ClusterResult {
		if f.applied[c] == 0 {
			return lifecycle.ClusterResult{Failed: 1, NotReady: 1}
		}
		mu.Lock()
		defer mu.Unlock()
		if c == "cp+b1" && slow < 3 {
			slow++
			return lifecycle.ClusterResult{Done: 1, NotReady: 1}
		}
		return lifecycle.ClusterResult{Done: 1}
	}
	return f
}

// A pause holds a started stage's next group, however long, and its progress deadline
// (5 min) does not run meanwhile; resume applies the rest.
func TestRolloutPauseHoldsAStartedStagesNextGroup(t *testing.T) {
	f := groupedB(t, nil)
	rec := &recorder{}
	held, err := pausedRun(t, f, rec, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if held["cp+b1"] != 1 || held["cp+b2"] != 0 || held["cp+c1"] != 0 {
		t.Errorf("while paused applied %v, want stage b's first group only", held)
	}
	fin := f.finish(t)
	if b := fin.Rollout.Stages[1]; fin.Rollout.State != lifecycle.RolloutSucceeded || b.State != lifecycle.StageSucceeded {
		t.Fatalf("rollout %s, stage b %+v", fin.Rollout.State, b)
	}
	if f.applied["cp+b2"] != 1 || f.applied["cp+c1"] != 1 {
		t.Errorf("after resume applied %v", f.applied)
	}
	stopped := false // a record of the paused stage without a deadline
	for _, r := range rec.records {
		stopped = stopped || (r.State == lifecycle.RolloutPaused && r.Stages[1].State == lifecycle.StageApplying && r.Stages[1].Until == nil)
	}
	if !stopped {
		t.Error("no record showed stage b held with its deadline stopped")
	}
}

// A stage whose window closes while it applies holds its next group until the window
// opens again; its deadline does not run meanwhile.
func TestRolloutWindowClosingHoldsAStartedStagesNextGroup(t *testing.T) {
	start := time.Date(2026, 11, 25, 1, 59, 50, 0, time.UTC) // 02:59:50 in Paris: 10 s of the window left
	f := groupedB(t, &rollout.Window{Cron: "0 2 * * *", Duration: rollout.Duration(time.Hour), TimeZone: "Europe/Paris"})
	rec := &recorder{}
	var held map[string]int
	err := run(t, f, Instantiate, func(env *testsuite.TestWorkflowEnvironment) {
		env.SetStartTime(start)
		rec.register(env)
		env.RegisterDelayedCallback(func() { held = maps.Clone(f.applied) }, 12*time.Hour)
	})
	if err != nil {
		t.Fatal(err)
	}
	if held["cp+b1"] != 1 || held["cp+b2"] != 0 {
		t.Errorf("after the window closed applied %v, want stage b's first group only", held)
	}
	if !rec.saw(1, lifecycle.StageWaitingForWindow) {
		t.Error("stage b never waited for its window")
	}
	fin := f.finish(t)
	if b := fin.Rollout.Stages[1]; b.State != lifecycle.StageSucceeded || f.applied["cp+b2"] != 1 {
		t.Fatalf("stage b %+v, applied %v", b, f.applied)
	}
	if end := fin.Rollout.Stages[1].Ended; end == nil || end.Before(time.Date(2026, 11, 26, 1, 0, 0, 0, time.UTC)) {
		t.Errorf("stage b ended at %v, before its window opened again", end)
	}
}

// With maxUnavailable 0 a stage's next group waits until the changed clusters are Ready.
func TestRolloutMaxUnavailableHoldsTheNextGroupUntilReady(t *testing.T) {
	f := groupedB(t, nil)
	var early map[string]int
	err := run(t, f, Instantiate, func(env *testsuite.TestWorkflowEnvironment) {
		(&recorder{}).register(env)
		env.RegisterDelayedCallback(func() { early = maps.Clone(f.applied) }, 10*time.Second)
	})
	if err != nil {
		t.Fatal(err)
	}
	if early["cp+b1"] != 1 || early["cp+b2"] != 0 {
		t.Errorf("while cp+b1 was not Ready applied %v, want cp+b2 waiting", early)
	}
	if f.applied["cp+b2"] != 1 || f.finish(t).Rollout.State != lifecycle.RolloutSucceeded {
		t.Errorf("applied %v", f.applied)
	}
}

// Under a manual policy an operator's resume goes on past the failed stage: the next
// stages are applied, the failed one stays failed, nothing is taken back.
func TestRolloutManualPolicyResumePastTheFailedStage(t *testing.T) {
	f := stages(t, rollout.Spec{Rollback: rollout.RollbackManual,
		Stages: []rollout.Stage{ring("a", nil), ring("b", nil), ring("c", nil)}})
	f.readOf = f.notReady("cp+b1")
	rec := &recorder{}
	var waiting lifecycle.RolloutStatus
	var appliedBefore map[string]int
	err := run(t, f, Instantiate, func(env *testsuite.TestWorkflowEnvironment) {
		rec.register(env)
		env.RegisterDelayedCallback(func() {
			waiting, appliedBefore = rec.last(), maps.Clone(f.applied)
			env.SignalWorkflow(lifecycle.SignalResume, nil)
		}, 72*time.Hour)
	})
	if err != nil {
		t.Fatal(err)
	}
	if waiting.State != lifecycle.RolloutAwaitingDecision || appliedBefore["cp+c1"] != 0 {
		t.Errorf("before the decision: %s, applied %v", waiting.State, appliedBefore)
	}
	fin := f.finish(t)
	if f.applied["cp+c1"] != 1 || len(f.deletedC["42"]) != 0 {
		t.Errorf("after resume applied %v, deleted %v", f.applied, f.deletedC)
	}
	if fin.Status != lifecycle.StatusInstantiated || fin.Rollout.State != lifecycle.RolloutSucceeded {
		t.Errorf("finished %s, rollout %s; want Instantiated, Succeeded (the operator went on)", fin.Status, fin.Rollout.State)
	}
	if b, c := fin.Rollout.Stages[1], fin.Rollout.Stages[2]; b.State != lifecycle.StageFailed || c.State != lifecycle.StageSucceeded {
		t.Errorf("stage b %s, stage c %s; want Failed, Succeeded", b.State, c.State)
	}
}

// An agent cluster whose agent is offline follows the strategy's offline policy, which
// reaches AwaitAgent with each stage's apply: skip lets its stage through (the cluster's
// reads count nothing, as ReadCluster answers for a skipped one); fail counts it against
// the stage's budget of 0, failing the stage and rolling the rollout back.
func TestRolloutOfflinePolicyReachesTheAgentsWait(t *testing.T) {
	for _, policy := range []string{rollout.OfflineSkip, rollout.OfflineFail} {
		t.Run(policy, func(t *testing.T) {
			spec := rollout.Spec{Stages: []rollout.Stage{ring("a", nil), ring("b", nil), ring("c", nil)},
				Offline: &rollout.Offline{Policy: policy, After: rollout.Duration(time.Minute)}}
			f := stages(t, spec)
			since := time.Date(2026, 12, 6, 8, 0, 0, 0, time.UTC)
			apply := f.apply
			f.apply = func(c string, n int32) (lifecycle.ClusterResult, error) {
				if c == "cp+b2" {
					return lifecycle.ClusterResult{Awaiting: &lifecycle.AgentWait{Cluster: c, Item: c + " i", Gen: 1}}, nil
				}
				return apply(c, n)
			}
			ready := f.readOf
			f.readOf = func(c string) lifecycle.ClusterResult { // as ReadCluster reads the cluster after AwaitAgent
				switch {
				case c != "cp+b2":
					return ready(c)
				case policy == rollout.OfflineSkip:
					return lifecycle.ClusterResult{Offline: &since}
				}
				return lifecycle.ClusterResult{Failed: 3}
			}
			var waits []lifecycle.AgentWait
			err := run(t, f, Instantiate, func(env *testsuite.TestWorkflowEnvironment) {
				(&recorder{}).register(env)
				lifecycle.Register(env, lifecycle.AwaitAgent, func(_ context.Context, in lifecycle.AgentWait) (lifecycle.ClusterResult, error) {
					waits = append(waits, in)
					if policy == rollout.OfflineFail {
						return lifecycle.ClusterResult{Failed: 3, Offline: &since}, nil
					}
					return lifecycle.ClusterResult{Offline: &since}, nil
				})
			})
			if len(waits) != 1 || waits[0].Offline != *spec.Offline || waits[0].Context != opInput.ContextID {
				t.Errorf("AwaitAgent ran for %+v, want once with the strategy's offline policy", waits)
			}
			fin := f.finish(t)
			switch policy {
			case rollout.OfflineSkip:
				if err != nil || fin.Status != lifecycle.StatusInstantiated || f.applied["cp+c1"] != 1 {
					t.Errorf("skip: error %v, finished %s, applies %v", err, fin.Status, f.applied)
				}
			case rollout.OfflineFail:
				if err == nil || fin.Rollout.Stages[1].State != lifecycle.StageRolledBack || fin.Rollout.Stages[1].Failed != 1 || f.applied["cp+c1"] != 0 {
					t.Errorf("fail: error %v, stage b %+v, applies %v", err, fin.Rollout.Stages[1], f.applied)
				}
			}
		})
	}
}
