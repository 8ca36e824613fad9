package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/dev/testenv"
)

// rolloutView is the part of the status answer a rollout test reads.
type rolloutView struct {
	Status         string `json:"status"`
	DeployedStatus string `json:"deployedStatus"`
	Instance       string `json:"instance"`
	Error          string `json:"error"`
	Rollout        *struct {
		State  string `json:"state"`
		Cause  string `json:"cause"`
		Stages []struct {
			lifecycle.StageStatus
			ClusterNames []string `json:"clusterNames"`
		} `json:"stages"`
	} `json:"rollout"`
}

func (v rolloutView) stage(name string) lifecycle.StageStatus {
	if v.Rollout != nil {
		for _, s := range v.Rollout.Stages {
			if s.Name == name {
				return s.StageStatus
			}
		}
	}
	return lifecycle.StageStatus{}
}

func (d *deployment) rollout() rolloutView {
	d.t.Helper()
	var v rolloutView
	d.c.do("GET", d.dig()+"/status?status=deployed&output=summary", nil).must(d.t, 200).json(d.t, &v)
	if v.Status == "" {
		v.Status = v.DeployedStatus
	}
	return v
}

// awaitRollout polls the status until cond holds.
func (d *deployment) awaitRollout(what string, timeout time.Duration, cond func(rolloutView) bool) rolloutView {
	d.t.Helper()
	return awaitValue(d.t, what, timeout, d.rollout, cond)
}

// strategy stores the DIG's rollout strategy.
func (d *deployment) strategy(spec map[string]any) {
	d.t.Helper()
	d.c.do("POST", d.dig()+"/rollout-strategies", res("rings", spec)).must(d.t, 201)
}

// onEveryCluster places an app on cluster1, cluster2 and cluster3.
func onEveryCluster() map[string]any {
	var all []any
	for _, c := range []string{"cluster1", "cluster2", "cluster3"} {
		all = append(all, map[string]any{"clusterProvider": provider, "cluster": c})
	}
	return map[string]any{"allOf": all}
}

// present lists, by cluster index, whether the app's Deployment is on the cluster.
func present(t *testing.T, name string) []bool {
	t.Helper()
	out := make([]bool, 3)
	for i := range out {
		out[i] = liveObject(t, i, deployments, name) != nil
	}
	return out
}

// signal sends a signal to a workflow with the temporal CLI, as an operator would.
func signal(t *testing.T, workflowID, name, input string) {
	t.Helper()
	args := []string{"workflow", "signal", "--address", stack.Temporal.Address(), "--workflow-id", workflowID, "--name", name}
	if input != "" {
		args = append(args, "--input", input)
	}
	if out, err := exec.Command(binDir+"/temporal", args...).CombinedOutput(); err != nil {
		t.Fatalf("temporal workflow signal %s: %v: %s", name, err, out)
	}
}

// restartTemco kills the worker and the API, as a crash would, and starts them again.
func restartTemco(t *testing.T) {
	t.Helper()
	stack.Worker.Kill()
	stack.API.Kill()
	if err := stack.StartWorker(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := stack.StartAPI(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// Three stages, one cluster each: the first bakes, the second waits for an approval.
// The worker and the API are killed during the bake and during the approval wait; the
// rollout goes on from where it was, no cluster is changed twice, and an approval for
// the wrong stage is refused.
func TestRolloutThreeStagesWithAnApprovalSurvivesRestarts(t *testing.T) {
	d := newDeployment(t, app{name: "ringweb", chart: webChart("ringweb"), placement: onEveryCluster()})
	d.create()
	d.strategy(map[string]any{"stages": []any{
		map[string]any{"name": "canary", "clusters": []string{"cluster1"}, "minSuccessTime": "15s", "progressDeadline": "2m"},
		map[string]any{"name": "early", "clusters": []string{"cluster2"}, "before": []any{map[string]any{"type": "approval"}}},
		map[string]any{"name": "rest"},
	}})
	acc := d.operate(lifecycle.OpInstantiate)

	d.awaitRollout("canary baking", 2*time.Minute, func(v rolloutView) bool { return v.stage("canary").State == lifecycle.StageBaking })
	canary := snapshot(t, acc.ContextID, "ringweb") // taken before both restarts
	restartTemco(t)
	v := d.awaitRollout("early waiting for its approval", 2*time.Minute, func(v rolloutView) bool {
		return v.stage("early").State == lifecycle.StageWaitingForApproval
	})
	if c := v.stage("canary"); c.State != lifecycle.StageSucceeded || c.Ready != 1 || c.Changed != 1 {
		t.Errorf("canary after its bake: %+v", c)
	}
	if got := present(t, "ringweb"); !slices.Equal(got, []bool{true, false, false}) {
		t.Fatalf("before the approval the Deployment is on clusters %v, want cluster1 only", got)
	}
	restartTemco(t)

	var refusal struct{ Message string }
	d.c.do("POST", d.dig()+"/rollout/approve", map[string]any{"stage": "rest"}).must(t, 409).json(t, &refusal)
	if m := refusal.Message; !strings.Contains(m, `stage "rest" is not waiting for an approval; stage "early" is`) {
		t.Errorf("approval of the wrong stage: %q", m)
	}
	d.c.do("POST", d.dig()+"/rollout/approve", map[string]any{"stage": "early"}).must(t, 200)
	v = d.awaitRollout("Instantiated", 3*time.Minute, func(v rolloutView) bool { return v.Status == lifecycle.StatusInstantiated })
	if v.Rollout.State != lifecycle.RolloutSucceeded || !slices.Equal(v.stage("early").Approved, []string{"before"}) {
		t.Errorf("rollout %s", pretty(v.Rollout))
	}
	if got := present(t, "ringweb"); !slices.Equal(got, []bool{true, true, true}) {
		t.Errorf("after the rollout the Deployment is on clusters %v, want all three", got)
	}
	after := snapshot(t, acc.ContextID, "ringweb")
	if len(canary) == 0 {
		t.Fatal("nothing of ringweb on the canary's cluster while it baked")
	}
	for k, was := range canary {
		if after[k] != was {
			t.Errorf("%s was changed again after its stage: %s → %s", k, was, after[k])
		}
	}
	recordHistory(t, acc.WorkflowID, "Instantiate-rollout-approval-restarts")
}

// webChartOn is webChart whose Deployment can be pinned to AVX-512 nodes (only cluster1
// has them), so that an update makes it unschedulable, never Ready, elsewhere.
func webChartOn(name string) []byte {
	return testenv.Chart(name, "message: default\navx512: false\n", map[string]string{"all.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Chart.Name }}-config
data:
  message: {{ .Values.message | quote }}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Chart.Name }}
spec:
  replicas: 1
  selector: {matchLabels: {app: {{ .Chart.Name }}}}
  template:
    metadata: {labels: {app: {{ .Chart.Name }}}}
    spec:
      {{- if eq (toString .Values.avx512) "true" }}
      nodeSelector: {feature.node.kubernetes.io/cpu-cpuid.AVX512F: "true"}
      {{- end }}
      containers: [{name: main, image: registry.local/{{ .Chart.Name }}:1}]
`})
}

// An update whose second stage never becomes Ready fails at the stage's deadline: the
// clusters of both stages it reached are back on revision 1 (checked live), the third
// was never touched, and revision 1 is the DIG's current revision again.
func TestRolloutDeadlineRollsAnUpdateBack(t *testing.T) {
	d := newDeployment(t, app{name: "rbweb", chart: webChartOn("rbweb"), placement: onEveryCluster()})
	d.create()
	first := d.operate(lifecycle.OpInstantiate)
	d.await("Instantiated", 2*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusInstantiated })
	before := snapshot(t, first.ContextID, "rbweb")
	d.strategy(map[string]any{"stages": []any{
		map[string]any{"name": "one", "clusters": []string{"cluster1"}, "progressDeadline": "30s"},
		map[string]any{"name": "two", "clusters": []string{"cluster2"}, "progressDeadline": "20s"},
		map[string]any{"name": "three"},
	}})
	d.c.do("PUT", d.dig(), res("dig", map[string]any{"compositeProfile": "prof", "version": "r1", "logicalCloud": "default",
		"overrideValues": []any{map[string]any{"app": "rbweb", "values": map[string]string{"message": "r2", "avx512": "true"}}}})).must(t, 200)
	upd := d.operate(lifecycle.OpUpdate)

	d.awaitRollout("the update rolled back", 3*time.Minute, func(v rolloutView) bool { return v.Instance == first.ContextID })
	var failed rolloutView
	eventually(t, "the failed revision recorded", 30*time.Second, func() error {
		d.c.do("GET", d.dig()+"/status?status=deployed&output=summary&instance="+upd.ContextID, nil).must(t, 200).json(t, &failed)
		if failed.DeployedStatus != lifecycle.StatusUpdateFailed {
			return fmt.Errorf("revision 2 is %s", failed.DeployedStatus)
		}
		return nil
	})
	s := d.status("")
	if last := s.States.Actions[len(s.States.Actions)-1]; last.ContextID != first.ContextID || last.Revision != 1 || last.State != lifecycle.StateInstantiated {
		t.Errorf("the DIG's current revision after the rollback: %+v, want revision 1 (%s)", last, first.ContextID)
	}
	if r := failed.Rollout; r == nil || r.State != lifecycle.RolloutRolledBack ||
		!strings.Contains(r.Cause, "stage two: 1 of 1 clusters not Ready by its progress deadline (20s), more than its budget of 0") {
		t.Fatalf("the failed revision's rollout: %s", pretty(failed))
	}
	for name, want := range map[string]string{"one": lifecycle.StageRolledBack, "two": lifecycle.StageRolledBack, "three": lifecycle.StagePending} {
		if got := failed.stage(name).State; got != want {
			t.Errorf("stage %s is %s, want %s", name, got, want)
		}
	}
	for i := range 3 {
		dep, cm := liveObject(t, i, deployments, "rbweb"), liveObject(t, i, configMaps, "rbweb-config")
		spec, _ := dep["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
		if sel := spec["nodeSelector"]; sel != nil {
			t.Errorf("cluster%d still has the update's nodeSelector %v", i+1, sel)
		}
		if msg := cm["data"].(map[string]any)["message"]; msg != "from-rbweb-profile" {
			t.Errorf("cluster%d's ConfigMap says %v, want revision 1's", i+1, msg)
		}
	}
	after := snapshot(t, first.ContextID, "rbweb")
	for k, was := range before {
		if strings.HasPrefix(k, "cluster3/") && after[k] != was {
			t.Errorf("%s, in the stage never reached, was changed: %s → %s", k, was, after[k])
		}
	}
	recordHistory(t, upd.WorkflowID, "Update-rollout-deadline-rollback")
}

// A pause during a bake holds the next stage until a resume; resume and approval here
// are signals from the temporal CLI. A stage whose maintenance window is closed waits for
// it, a durable timer shown in the status with the time it opens.
func TestRolloutPauseResumeAndAClosedWindow(t *testing.T) {
	d := newDeployment(t, app{name: "winweb", chart: webChart("winweb"), placement: onEveryCluster()})
	d.create()
	// The window opens at a whole minute 2 to 3 minutes away, in New York: after the
	// first two stages are done.
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	opens := time.Now().Add(2 * time.Minute).In(ny).Truncate(time.Minute).Add(time.Minute)
	d.strategy(map[string]any{"stages": []any{
		map[string]any{"name": "one", "clusters": []string{"cluster1"}, "minSuccessTime": "10s"},
		map[string]any{"name": "two", "clusters": []string{"cluster2"}, "before": []any{map[string]any{"type": "approval"}}},
		map[string]any{"name": "three", "window": map[string]any{"cron": fmt.Sprintf("%d %d * * *", opens.Minute(), opens.Hour()),
			"duration": "10m", "timeZone": "America/New_York"}},
	}})
	acc := d.operate(lifecycle.OpInstantiate)
	d.awaitRollout("stage one baking", 2*time.Minute, func(v rolloutView) bool { return v.stage("one").State == lifecycle.StageBaking })
	var paused rolloutView
	d.c.do("POST", d.dig()+"/rollout/pause", nil).must(t, 200).json(t, &paused.Rollout)
	if paused.Rollout.State != lifecycle.RolloutPaused {
		t.Errorf("the pause answered %s", pretty(paused.Rollout))
	}
	m := d.c.do("POST", d.dig()+"/rollout/pause", nil).must(t, 409).body
	if !strings.Contains(string(m), "paused already") {
		t.Errorf("a second pause: %q", m)
	}
	d.awaitRollout("stage one done, the rollout paused", time.Minute, func(v rolloutView) bool {
		return v.stage("one").State == lifecycle.StageSucceeded && v.Rollout.State == lifecycle.RolloutPaused
	})
	if got := present(t, "winweb"); !slices.Equal(got, []bool{true, false, false}) {
		t.Fatalf("while paused the Deployment is on clusters %v, want cluster1 only", got)
	}
	signal(t, acc.WorkflowID, lifecycle.SignalResume, "")
	d.awaitRollout("stage two waiting for its approval", time.Minute, func(v rolloutView) bool {
		return v.stage("two").State == lifecycle.StageWaitingForApproval
	})
	signal(t, acc.WorkflowID, lifecycle.SignalApprove, `{"stage":"two"}`)
	v := d.awaitRollout("stage three waiting for its window", 90*time.Second, func(v rolloutView) bool {
		return v.stage("three").State == lifecycle.StageWaitingForWindow
	})
	if u := v.stage("three").Until; u == nil || !u.Equal(opens) {
		t.Errorf("stage three waits until %v, want %v", u, opens.UTC())
	}
	if got := present(t, "winweb"); !slices.Equal(got, []bool{true, true, false}) {
		t.Fatalf("while the window is closed the Deployment is on clusters %v, want cluster1 and cluster2", got)
	}
	v = d.awaitRollout("Instantiated", 4*time.Minute, func(v rolloutView) bool { return v.Status == lifecycle.StatusInstantiated })
	if st := v.stage("three").Started; st == nil || st.Before(opens) {
		t.Errorf("stage three started at %v, before its window opened at %v", st, opens)
	}
	if got := present(t, "winweb"); !slices.Equal(got, []bool{true, true, true}) {
		t.Errorf("after the rollout the Deployment is on clusters %v", got)
	}
	recordHistory(t, acc.WorkflowID, "Instantiate-rollout-pause-window")
}

// A rollback follows the DIG's stages too, laid out again from the clusters' labels: the
// clusters labelled edge first, one at a time with a bake, then the rest; every cluster
// is back on revision 1, checked live.
func TestRolloutRollbackFollowsTheStagesByLabel(t *testing.T) {
	d := newDeployment(t, app{name: "rlweb", chart: webChart("rlweb"), placement: onEveryCluster()})
	d.create()
	d.strategy(map[string]any{"stages": []any{
		map[string]any{"name": "edge", "clusterLabels": []string{"edge"}, "maxConcurrency": 1, "minSuccessTime": "5s"},
		map[string]any{"name": "rest"},
	}})
	message := func(want string) {
		t.Helper()
		for i := range 3 {
			if msg := liveObject(t, i, configMaps, "rlweb-config")["data"].(map[string]any)["message"]; msg != want {
				t.Errorf("cluster%d's ConfigMap says %v, want %s", i+1, msg, want)
			}
		}
	}
	d.operate(lifecycle.OpInstantiate)
	d.await("Instantiated", 2*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusInstantiated })
	d.c.do("PUT", d.dig(), res("dig", map[string]any{"compositeProfile": "prof", "version": "r1", "logicalCloud": "default",
		"overrideValues": []any{map[string]any{"app": "rlweb", "values": map[string]string{"message": "r2"}}}})).must(t, 200)
	d.update("update", nil)
	message("r2")

	back := d.update("rollback", map[string]any{"metadata": map[string]any{"name": "rb"}, "spec": map[string]any{"revision": "1"}})
	message("from-rlweb-profile")
	v := d.awaitRollout("the rollback's rollout recorded", 30*time.Second, func(v rolloutView) bool {
		return v.Instance == back.ContextID && v.Rollout != nil && v.Rollout.State == lifecycle.RolloutSucceeded
	})
	byName := map[string][]string{}
	for _, s := range v.Rollout.Stages {
		byName[s.Name] = s.ClusterNames
	}
	if !slices.Equal(byName["edge"], []string{provider + "+cluster1", provider + "+cluster2"}) || !slices.Equal(byName["rest"], []string{provider + "+cluster3"}) {
		t.Errorf("the rollback's stages: %v, want edge [cluster1 cluster2] then rest [cluster3]", byName)
	}
	edge, rest := v.stage("edge"), v.stage("rest")
	if edge.State != lifecycle.StageSucceeded || rest.State != lifecycle.StageSucceeded || edge.Changed != 2 || rest.Changed != 1 {
		t.Errorf("the rollback's stages: %s", pretty(v.Rollout))
	}
	if edge.Ended == nil || rest.Started == nil || rest.Started.Before(*edge.Ended) {
		t.Errorf("stage rest started at %v, before edge ended at %v", rest.Started, edge.Ended)
	}
	// What the stages' last reads stored: the gate of rest took cluster3's applied
	// ConfigMap as applied and read its Deployment; edge's bake read everything.
	ctx := context.Background()
	_, contexts := openStore(t)
	for cluster, asApplied := range map[string]bool{"cluster1": false, "cluster3": true} {
		placed, err := contexts.Placements(ctx, back.ContextID, appctx.Filter{Apps: []string{"rlweb"}, Clusters: []string{provider + "+" + cluster}})
		if err != nil || len(placed) != 1 || len(placed[0].Live) != len(placed[0].Resources) {
			t.Fatalf("%s: %v, %+v", cluster, err, placed)
		}
		kinds := 0
		for i, r := range placed[0].Resources {
			l := placed[0].Live[i]
			if r.Kind == "ConfigMap" || r.Kind == "Deployment" {
				kinds++
				if want := asApplied && r.Kind == "ConfigMap"; l.State != appctx.LivePresent || !l.Ready || l.Applied != want {
					t.Errorf("%s's %s: %+v, want Present, Ready, taken as applied %v", cluster, r.Kind, l, want)
				}
			}
		}
		if kinds != 2 {
			t.Errorf("%s's objects: %+v", cluster, placed[0].Resources)
		}
	}
	recordHistory(t, back.WorkflowID, "Rollback-rollout-by-label")
}
