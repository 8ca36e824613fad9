package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	temporalclient "go.temporal.io/sdk/client"

	"github.com/temco/temco/internal/adapters/codec"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/seal"
	"github.com/temco/temco/internal/dev/devstack"
	"github.com/temco/temco/internal/dev/testenv/poll"
)

// The nodes' hardware in the shared stack (internal/dev/devstack/stack.go): cluster1's node
// has AVX-512, cluster2's QuickAssist and two GPUs.
const (
	qatLabel    = "feature.node.kubernetes.io/intel_qat"
	avx512Label = "feature.node.kubernetes.io/cpu-cpuid.AVX512F"
	gpu         = "example.com/gpu"
)

// hpaDeployment is a deployment of one app whose Deployment (named like the app, with
// container "main") may go to cluster1 or cluster2 (anyOf), with EMCO's hpa placement and
// action controllers registered as EMCO's examples do and an hpa intent "hw" whose
// consumer "main" asks for 2 replicas and the given resource requirements.
type hpaDeployment struct {
	*deployment
	app         string
	controllers []string
}

func (h *hpaDeployment) consumer() string {
	return h.dig() + "/hpa-intents/hw/hpa-resource-consumers/main"
}

func newHPADeployment(t *testing.T, appName string, requirements map[string]map[string]any) *hpaDeployment {
	t.Helper()
	anyOf := map[string]any{"anyOf": []any{
		map[string]any{"clusterProvider": provider, "cluster": "cluster1"},
		map[string]any{"clusterProvider": provider, "cluster": "cluster2"}}}
	h := &hpaDeployment{deployment: newDeployment(t, app{name: appName, chart: webChart(appName), placement: anyOf}), app: appName}
	h.create()
	c := h.c
	c.do("POST", h.dig()+"/hpa-intents", res("hw", map[string]any{"app": appName})).must(t, 201)
	c.do("POST", h.dig()+"/hpa-intents/hw/hpa-resource-consumers", res("main", map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment", "name": appName, "container": "main", "replicas": 2})).must(t, 201)
	for name, spec := range requirements {
		c.do("POST", h.consumer()+"/resource-requirements", res(name, spec)).must(t, 201)
	}
	// EMCO's prerequisites: the controllers by their service hosts (and hpa-plc as a clm
	// controller too), under names of this test's own since the registry is global.
	plc, ac := "hpa-placement-controller-"+h.project, "hpa-action-controller-"+h.project
	c.do("POST", "/controllers", res(plc, map[string]any{"host": "hpaplc", "port": 9091, "type": "placement"})).must(t, 201)
	c.do("POST", "/controllers", res(ac, map[string]any{"host": "hpaac", "port": 9042, "type": "action", "priority": 1})).must(t, 201)
	c.do("POST", "/clm-controllers", res(plc, map[string]any{"host": "hpaplc", "port": 9091, "priority": 1})).must(t, 201)
	h.controllers = []string{plc, ac}
	c.do("POST", h.dig()+"/intents", res("hpa", map[string]any{"intent": map[string]string{plc: "hw", ac: "hw"}})).must(t, 201)
	c.do("POST", h.dig()+"/approve", nil).must(t, 202)
	t.Cleanup(h.cleanUp)
	return h
}

// cleanUp terminates the DIG if it ever ran, checks the clusters are left clean, and
// deletes the DIG and the controllers, so later tests find the stack as it was.
func (h *hpaDeployment) cleanUp() {
	t := h.t
	s := h.status("")
	if s.Instance != "" && s.Status != lifecycle.StatusTerminated && s.state() != lifecycle.StateApproved { // Approved: refused, nothing applied
		h.operate(lifecycle.OpTerminate)
		h.await("Terminated", 2*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusTerminated })
		for i := range stack.Clusters {
			eventually(t, fmt.Sprintf("%s gone from cluster%d after terminate", h.app, i+1), time.Minute, func() error {
				if objs := objectsOf(t, stack.Clusters[i], s.Instance, h.app); len(objs) > 0 {
					return fmt.Errorf("left: %v", objs)
				}
				return nil
			})
		}
	}
	var reqs []map[string]any
	h.c.do("GET", h.consumer()+"/resource-requirements", nil).must(t, 200).json(t, &reqs)
	var paths []string
	for _, r := range reqs {
		paths = append(paths, h.consumer()+"/resource-requirements/"+r["metadata"].(map[string]any)["name"].(string))
	}
	for _, p := range append(paths, h.consumer(), h.dig()+"/hpa-intents/hw", h.dig()+"/intents/hpa", h.dig()+"/intents/intents",
		h.dig()+"/generic-placement-intents/gpi/app-intents/"+h.app+"-placement", h.dig()+"/generic-placement-intents/gpi", h.dig(),
		"/controllers/"+h.controllers[0], "/controllers/"+h.controllers[1], "/clm-controllers/"+h.controllers[0]) {
		h.c.do("DELETE", p, nil).must(t, 204)
	}
}

func gpuRequirement(requests int) map[string]any {
	return map[string]any{"allocatable": true, "mandatory": true, "weight": 1,
		"resource": map[string]any{"name": gpu, "requests": requests, "limits": requests}}
}

func labelRequirement(key string) map[string]any {
	return map[string]any{"allocatable": false, "mandatory": true, "weight": 1,
		"resource": map[string]any{"key": key, "value": "true"}}
}

// eventually polls check until it succeeds, failing the test with its last error at the
// deadline.
func eventually(t *testing.T, what string, timeout time.Duration, check func() error) {
	t.Helper()
	poll.Until(t, what, timeout, func(context.Context) error { return check() })
}

// liveDeployment reads a Deployment in "default" from a cluster of the stack (nil when
// there is none).
func liveDeployment(t *testing.T, cl *devstack.Cluster, name string) *appsv1.Deployment {
	t.Helper()
	cs, err := cl.Clientset()
	if err != nil {
		t.Fatal(err)
	}
	d, err := cs.AppsV1().Deployments("default").Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatalf("read Deployment %s on %s: %v", name, cl.Name, err)
	}
	return d
}

// checkNodeHardware fails the test unless the clusters' nodes are as the cases assume.
func checkNodeHardware(t *testing.T) {
	t.Helper()
	want := []struct {
		labels []string
		gpus   string
	}{{[]string{avx512Label}, "0"}, {[]string{qatLabel}, "2"}}
	for i, w := range want {
		cs, err := stack.Clusters[i].Clientset()
		if err != nil {
			t.Fatal(err)
		}
		n, err := cs.CoreV1().Nodes().Get(context.Background(), devstack.NodeName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var has []string
		for _, l := range []string{qatLabel, avx512Label} {
			if n.Labels[l] == "true" {
				has = append(has, l)
			}
		}
		free := n.Status.Allocatable[gpu]
		if !slices.Equal(has, w.labels) || free.String() != w.gpus {
			t.Fatalf("cluster%d's node has labels %v and %s %s allocatable, want %v and %s", i+1, has, free.String(), gpu, w.labels, w.gpus)
		}
	}
}

// checkHPADeployment compares what hpa-ac wrote into a live Deployment with what is wanted:
// replicas, the node selector's hardware labels, and the container's GPU requests and
// limits ("" when it should have none).
func checkHPADeployment(t *testing.T, d *appsv1.Deployment, selector map[string]string, gpus string) {
	t.Helper()
	if r := d.Spec.Replicas; r == nil || *r != 2 {
		t.Errorf("%s replicas = %s, want 2 (the consumer's)", d.Name, replicaCount(r))
	}
	got := map[string]string{}
	for _, l := range []string{qatLabel, avx512Label} {
		if v, ok := d.Spec.Template.Spec.NodeSelector[l]; ok {
			got[l] = v
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(selector) {
		t.Errorf("%s nodeSelector = %v, want %v", d.Name, d.Spec.Template.Spec.NodeSelector, selector)
	}
	var main *corev1.Container
	for i, c := range d.Spec.Template.Spec.Containers {
		if c.Name == "main" {
			main = &d.Spec.Template.Spec.Containers[i]
		}
	}
	if main == nil {
		t.Fatalf("%s has no container main: %+v", d.Name, d.Spec.Template.Spec.Containers)
	}
	for what, l := range map[string]corev1.ResourceList{"requests": main.Resources.Requests, "limits": main.Resources.Limits} {
		q, ok := l[gpu]
		switch {
		case gpus == "" && ok:
			t.Errorf("%s container main %s %s %s, want none", d.Name, what, gpu, q.String())
		case gpus != "" && (!ok || q.String() != gpus):
			t.Errorf("%s container main %s %s = %q, want %s", d.Name, what, gpu, q.String(), gpus)
		}
	}
}

// awaitReadyReplicas waits until the cluster's scheduler has placed both replicas and
// they run: the node selector and the GPU requests hpa-ac wrote fit the real node.
func awaitReadyReplicas(t *testing.T, cl *devstack.Cluster, name string) {
	t.Helper()
	eventually(t, name+" with 2 ready replicas on "+cl.Name, 2*time.Minute, func() error {
		d := liveDeployment(t, cl, name)
		switch {
		case d == nil:
			return fmt.Errorf("no Deployment")
		case d.Status.ReadyReplicas != 2:
			return fmt.Errorf("%d of %s replicas ready, conditions %+v", d.Status.ReadyReplicas, replicaCount(d.Spec.Replicas), d.Status.Conditions)
		}
		return nil
	})
}

func replicaCount(r *int32) string {
	if r == nil {
		return "unset"
	}
	return fmt.Sprint(*r)
}

// placedOn lists the clusters the DIG's status places the app on.
func placedOn(s status, app string) []string {
	var out []string
	for _, a := range s.Apps {
		if a.Name == app {
			for _, c := range a.Clusters {
				out = append(out, c.Cluster)
			}
		}
	}
	slices.Sort(out)
	return out
}

// hpa-plc keeps only the cluster whose node has the label and a free GPU per replica
// (cluster2, although anyOf would pick cluster1 first), and hpa-ac writes replicas, the
// node selector and the GPU requests and limits into its Deployment there, which then
// runs. An update asking for cluster1's label instead, without a GPU, moves the app.
func TestHPAPlacesTheAppOnTheNodesItNeedsAndAnUpdateMovesIt(t *testing.T) {
	checkNodeHardware(t)
	h := newHPADeployment(t, "hpa-web", map[string]map[string]any{
		"gpu": gpuRequirement(1), "feature": labelRequirement(qatLabel)})
	acc := h.operate(lifecycle.OpInstantiate)
	s := h.await("Instantiated", 2*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusInstantiated })
	if got := placedOn(s, h.app); !slices.Equal(got, []string{"cluster2"}) {
		t.Errorf("status places %s on %v, want [cluster2]", h.app, got)
	}
	c1, c2 := stack.Clusters[0], stack.Clusters[1]
	d := liveDeployment(t, c2, h.app)
	if d == nil {
		t.Fatalf("cluster2 has no Deployment %s", h.app)
	}
	checkHPADeployment(t, d, map[string]string{qatLabel: "true"}, "1")
	if objs := objectsOf(t, c2, acc.ContextID, h.app); !slices.Equal(objs, webObjects(h.app)) {
		t.Errorf("cluster2 has %v of the app, want %v", objs, webObjects(h.app))
	}
	for _, cl := range []*devstack.Cluster{c1, stack.Clusters[2]} {
		if objs := objectsOf(t, cl, acc.ContextID, h.app); len(objs) > 0 || liveDeployment(t, cl, h.app) != nil {
			t.Errorf("%s has %v of the app, want nothing", cl.Name, objs)
		}
	}
	awaitReadyReplicas(t, c2, h.app)
	recordHistory(t, acc.WorkflowID, "Instantiate-with-hpa")

	// Only cluster1 has AVX-512: the update moves the app there and removes it from cluster2.
	h.c.do("DELETE", h.consumer()+"/resource-requirements/gpu", nil).must(t, 204)
	h.c.do("PUT", h.consumer()+"/resource-requirements/feature", res("feature", labelRequirement(avx512Label))).must(t, 200)
	upd := h.update("update", nil)
	recordHistory(t, upd.WorkflowID, "Update-hpa-moves-the-app")
	s = h.status("")
	if got := placedOn(s, h.app); !slices.Equal(got, []string{"cluster1"}) {
		t.Errorf("after the update, status places %s on %v, want [cluster1]", h.app, got)
	}
	d = liveDeployment(t, c1, h.app)
	if d == nil {
		t.Fatalf("after the update, cluster1 has no Deployment %s", h.app)
	}
	checkHPADeployment(t, d, map[string]string{avx512Label: "true"}, "")
	if objs := objectsOf(t, c1, acc.ContextID, h.app); !slices.Equal(objs, webObjects(h.app)) {
		t.Errorf("after the update, cluster1 has %v of the app, want %v", objs, webObjects(h.app))
	}
	eventually(t, h.app+" gone from cluster2 after the update", time.Minute, func() error {
		if objs := objectsOf(t, c2, acc.ContextID, h.app); len(objs) > 0 || liveDeployment(t, c2, h.app) != nil {
			return fmt.Errorf("cluster2 keeps %v", objs)
		}
		return nil
	})
	awaitReadyReplicas(t, c1, h.app)
}

// Three GPUs per replica are more than any node has: instantiate fails before anything is
// applied, and both the DIG status and the operation's workflow say which consumer needs
// what and what each cluster has.
func TestHPARefusesRequirementsNoNodeMeets(t *testing.T) {
	checkNodeHardware(t)
	h := newHPADeployment(t, "hpa-big", map[string]map[string]any{
		"gpu": gpuRequirement(3), "feature": labelRequirement(qatLabel)})
	acc := h.operate(lifecycle.OpInstantiate)
	s := h.await("InstantiateFailed", 2*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusInstantiateFailed })
	want := []string{`hpa placement of app "hpa-big"`, "[local+cluster1, local+cluster2]",
		`cluster local+cluster1: hpa consumer "main" of intent "hw": no node has the label ` + qatLabel + "=true",
		`cluster local+cluster2: hpa consumer "main" of intent "hw": replica 1 of 2 needs ` + gpu + " 3, more than any node with its labels has free (kwok-node-0: " + gpu + " 2)"}
	for _, part := range want {
		if !strings.Contains(s.Error, part) {
			t.Errorf("status error %q does not say %q", s.Error, part)
		}
	}
	recordHistory(t, acc.WorkflowID, "Instantiate-hpa-refused")
	werr := workflowError(t, acc.WorkflowID)
	for _, part := range want {
		if !strings.Contains(werr, part) {
			t.Errorf("workflow error %q does not say %q", werr, part)
		}
	}
	if n := s.RsyncStatus[lifecycle.ResApplied]; n != 0 {
		t.Errorf("rsync-status %v, want nothing applied", s.RsyncStatus)
	}
	for _, cl := range stack.Clusters {
		if objs := objectsOf(t, cl, acc.ContextID, h.app); len(objs) > 0 || liveDeployment(t, cl, h.app) != nil {
			t.Errorf("%s has %v of the app, want nothing", cl.Name, objs)
		}
	}
}

// workflowError is the error an operation's workflow ended with, decrypted ("" if none).
func workflowError(t *testing.T, workflowID string) string {
	t.Helper()
	keys, err := seal.LoadKeyFile(stack.KeyFile)
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
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := tc.GetWorkflow(ctx, workflowID, "").Get(ctx, nil); err != nil {
		return err.Error()
	}
	return ""
}
