package e2e

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.temporal.io/api/serviceerror"
	temporalclient "go.temporal.io/sdk/client"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/temco/temco/features/drift/flow"
	"github.com/temco/temco/internal/adapters/codec"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/seal"
)

// driftView is the drift section of a DIG's status.
type driftView struct {
	Drift *struct {
		Check           string    `json:"check"`
		Started         time.Time `json:"started"`
		CorrectDrift    bool      `json:"correctDrift"`
		ClustersChecked int       `json:"clustersChecked"`
		InSync          int       `json:"inSync"`
		Drifted         int       `json:"drifted"`
		Missing         int       `json:"missing"`
		Corrected       int       `json:"corrected"`
		APIRequests     int       `json:"apiRequests"`
		Objects         []struct {
			Cluster string                `json:"cluster"`
			GVK     struct{ Kind string } `json:"GVK"`
			Name    string                `json:"name"`
			Missing bool                  `json:"missing"`
			Fields  []struct {
				Path    string `json:"path"`
				Live    string `json:"live"`
				Desired string `json:"desired"`
			} `json:"fields"`
			Corrected bool   `json:"corrected"`
			Error     string `json:"error"`
		} `json:"objects"`
	} `json:"drift"`
}

var (
	deploymentsGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	configMapsGVR  = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
)

// awaitDriftCheck triggers the DIG's drift schedule until the status shows a check that
// started after since, and returns it. A trigger while a check runs is skipped (overlap
// policy Skip), hence the repeats.
func (d *deployment) awaitDriftCheck(sched temporalclient.ScheduleHandle, since time.Time) driftView {
	t := d.t
	t.Helper()
	var v driftView
	var next time.Time
	for deadline := time.Now().Add(3 * time.Minute); ; time.Sleep(300 * time.Millisecond) {
		if time.Now().After(next) {
			if err := sched.Trigger(context.Background(), temporalclient.ScheduleTriggerOptions{}); err != nil {
				t.Fatalf("trigger the drift schedule: %v", err)
			}
			next = time.Now().Add(10 * time.Second)
		}
		v = driftView{}
		d.c.do("GET", d.dig()+"/status", nil).must(t, 200).json(t, &v)
		if v.Drift != nil && v.Drift.Started.After(since) {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("no drift check started after %s shows in the status: %s", since, pretty(v))
		}
	}
}

// Drift detection: a DIG with spec.driftDetection gets a Temporal Schedule; a check
// (triggered here rather than waited for) finds a Deployment scaled by hand and a
// ConfigMap deleted by hand, naming the field with its live and desired values, leaves
// them as they are; with correctDrift the next check applies them again. The schedule
// goes with the DIG.
func TestDriftDetectedThenCorrected(t *testing.T) {
	d := newDeployment(t, app{name: "web", chart: webChart("web"), placement: map[string]any{"allOf": []any{
		map[string]any{"clusterProvider": provider, "cluster": "cluster1"},
		map[string]any{"clusterProvider": provider, "cluster": "cluster2"},
		map[string]any{"clusterProvider": provider, "cluster": "cluster3"},
	}}})
	d.create()
	spec := map[string]any{"compositeProfile": "prof", "version": "r1", "logicalCloud": d.logicalCloud,
		"driftDetection": map[string]any{"interval": "1m"}}
	d.c.do("PUT", d.dig(), res("dig", spec)).must(t, 200)

	keys, err := seal.LoadKeyFile(stack.KeyFile) // the checks' results are encrypted
	if err != nil {
		t.Fatal(err)
	}
	dc := codec.DataConverter(keys)
	tc, err := temporalclient.Dial(temporalclient.Options{HostPort: stack.Temporal.Address(), Logger: quiet{},
		DataConverter: dc, FailureConverter: codec.FailureConverter(dc)})
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	sched := tc.ScheduleClient().GetHandle(context.Background(), flow.ScheduleID(d.ref()))
	desc, err := sched.Describe(context.Background())
	if err != nil {
		t.Fatalf("the DIG's drift schedule: %v", err)
	}
	if iv := desc.Schedule.Spec.Intervals; len(iv) != 1 || iv[0].Every != time.Minute {
		t.Errorf("schedule intervals %+v", iv)
	}
	// Not instantiated yet (the PUT withdrew the approval): a check finds nothing to do.
	if err := sched.Trigger(context.Background(), temporalclient.ScheduleTriggerOptions{}); err != nil {
		t.Fatal(err)
	}
	skipped := runsOf(t, "project = '"+d.project+"' AND operation = 'drift'")
	var skip flow.DriftResult
	if err := tc.GetWorkflow(context.Background(), skipped[0], "").Get(context.Background(), &skip); err != nil || skip.Skipped == "" {
		t.Fatalf("a check of a DIG not instantiated: %+v, %v", skip, err)
	}
	recordHistory(t, skipped[0], "Drift-skipped-not-instantiated")

	d.c.do("POST", d.dig()+"/approve", nil).must(t, 202)
	d.operate(lifecycle.OpInstantiate)
	d.await("Instantiated", 2*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusInstantiated })

	c1, c2 := dynClientNamed(t, "cluster1"), dynClientNamed(t, "cluster2")
	ctx := context.Background()
	if _, err := c1.Resource(deploymentsGVR).Namespace("default").Patch(ctx, "web", types.MergePatchType, []byte(`{"spec":{"replicas":3}}`),
		metav1.PatchOptions{FieldManager: "operator-by-hand"}); err != nil {
		t.Fatal(err)
	}
	if err := c2.Resource(configMapsGVR).Namespace("default").Delete(ctx, "web-config", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	changed := time.Now().UTC()

	v := d.awaitDriftCheck(sched, changed)
	dr := v.Drift
	if dr.ClustersChecked != 3 || dr.Drifted != 2 || dr.Missing != 1 || dr.Corrected != 0 || dr.InSync != 3*3-2 || dr.CorrectDrift {
		t.Errorf("drift check: %s", pretty(v))
	}
	// One LIST per resource and namespace on each cluster: 3 kinds in "default".
	if dr.APIRequests != 3*3 {
		t.Errorf("API requests of the check: %d, want %d (one LIST per kind and cluster)", dr.APIRequests, 3*3)
	}
	found := map[string]bool{}
	for _, o := range dr.Objects {
		switch {
		case o.Cluster == "cluster1" && o.GVK.Kind == "Deployment" && o.Name == "web" && !o.Missing && !o.Corrected &&
			len(o.Fields) == 1 && o.Fields[0].Path == "spec.replicas" && o.Fields[0].Live == "3" && o.Fields[0].Desired == "1":
			found["scaled"] = true
		case o.Cluster == "cluster2" && o.GVK.Kind == "ConfigMap" && o.Name == "web-config" && o.Missing && !o.Corrected:
			found["deleted"] = true
		}
	}
	if !found["scaled"] || !found["deleted"] {
		t.Fatalf("drifted objects found %v: %s", found, pretty(v))
	}
	recordHistory(t, dr.Check, "Drift-detects-two-clusters-of-three")
	// Detection alone changes nothing.
	if u, err := c1.Resource(deploymentsGVR).Namespace("default").Get(ctx, "web", metav1.GetOptions{}); err != nil || liveReplicas(u.Object) != 3 {
		t.Errorf("cluster1's web after the check: %v replicas, %v", liveReplicas(u.Object), err)
	}

	spec["driftDetection"] = map[string]any{"interval": "1m", "correctDrift": true}
	d.c.do("PUT", d.dig(), res("dig", spec)).must(t, 200)
	if s := d.status(""); s.state() != lifecycle.StateInstantiated {
		t.Fatalf("DIG after setting correctDrift: %s", s.state())
	}
	v = d.awaitDriftCheck(sched, time.Now().UTC())
	if dr := v.Drift; dr.Drifted != 2 || dr.Corrected != 2 || !dr.CorrectDrift {
		t.Errorf("correcting check: %s", pretty(v))
	}
	recordHistory(t, v.Drift.Check, "Drift-corrects")
	u, err := c1.Resource(deploymentsGVR).Namespace("default").Get(ctx, "web", metav1.GetOptions{})
	if err != nil || liveReplicas(u.Object) != 1 {
		t.Errorf("cluster1's web after the correction: %v replicas, %v", liveReplicas(u.Object), err)
	}
	if _, err := c2.Resource(configMapsGVR).Namespace("default").Get(ctx, "web-config", metav1.GetOptions{}); err != nil {
		t.Errorf("cluster2's web-config after the correction: %v", err)
	}
	// And the next check finds everything as applied.
	v = d.awaitDriftCheck(sched, time.Now().UTC())
	if dr := v.Drift; dr.Drifted != 0 || dr.InSync != 9 || len(dr.Objects) != 0 {
		t.Errorf("check after the correction: %s", pretty(v))
	}

	d.operate(lifecycle.OpTerminate)
	d.await("Terminated", 2*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusTerminated })
	for _, child := range []string{"/intents/intents", "/generic-placement-intents/gpi/app-intents/web-placement", "/generic-placement-intents/gpi", ""} {
		d.c.do("DELETE", d.dig()+child, nil).must(t, 204)
	}
	var notFound *serviceerror.NotFound
	if _, err := sched.Describe(context.Background()); !errors.As(err, &notFound) {
		t.Errorf("the drift schedule after the DIG's delete: %v", err)
	}
}

// liveReplicas is a Deployment's spec.replicas (-1 when absent).
func liveReplicas(obj map[string]any) int64 {
	spec, _ := obj["spec"].(map[string]any)
	n, ok := spec["replicas"].(int64)
	if !ok {
		return -1
	}
	return n
}

// A drift correction asked for now (POST DIG/drift-check {"correct": true}) of a DIG with
// no drift detection of its own: the object scaled by hand is applied again, and the
// status shows that check, its workflow the one the answer named.
func TestDriftCorrectedOnRequest(t *testing.T) {
	d := newDeployment(t, app{name: "web", chart: webChart("web"), placement: clusterNamed("cluster1")})
	d.create()
	d.operate(lifecycle.OpInstantiate)
	d.await("Instantiated", 2*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusInstantiated })
	c1 := dynClientNamed(t, "cluster1")
	ctx := context.Background()
	if _, err := c1.Resource(deploymentsGVR).Namespace("default").Patch(ctx, "web", types.MergePatchType, []byte(`{"spec":{"replicas":3}}`),
		metav1.PatchOptions{FieldManager: "operator-by-hand"}); err != nil {
		t.Fatal(err)
	}
	var asked struct {
		WorkflowID string `json:"workflowId"`
		Correct    bool   `json:"correct"`
	}
	d.c.do("POST", d.dig()+"/drift-check", map[string]any{"correct": true}).must(t, 202).json(t, &asked)
	v := awaitValue(t, "the asked check in the status", 2*time.Minute, func() driftView {
		var v driftView
		d.c.do("GET", d.dig()+"/status", nil).must(t, 200).json(t, &v)
		return v
	}, func(v driftView) bool { return v.Drift != nil && v.Drift.Check == asked.WorkflowID })
	if dr := v.Drift; !asked.Correct || dr.Drifted != 1 || dr.Corrected != 1 || !dr.CorrectDrift || dr.ClustersChecked != 1 {
		t.Errorf("asked correction (answer %+v): %s", asked, pretty(v))
	}
	if u, err := c1.Resource(deploymentsGVR).Namespace("default").Get(ctx, "web", metav1.GetOptions{}); err != nil || liveReplicas(u.Object) != 1 {
		t.Errorf("cluster1's web after the correction: %v replicas, %v", liveReplicas(u.Object), err)
	}
}
