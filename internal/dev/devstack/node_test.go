package devstack

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func gpuCluster() *Cluster {
	return &Cluster{Name: "cluster2", NodeLabels: map[string]string{"feature.node.kubernetes.io/intel_qat": "true"},
		NodeResources: corev1.ResourceList{"example.com/gpu": resource.MustParse("2")}}
}

func readNode(t *testing.T, cs *fake.Clientset) *corev1.Node {
	t.Helper()
	n, err := cs.CoreV1().Nodes().Get(context.Background(), NodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// checkHardware fails unless the node has the base and the extra labels and resources.
func checkHardware(t *testing.T, n *corev1.Node) {
	t.Helper()
	for k, v := range map[string]string{"type": "kwok", "kubernetes.io/os": "linux", "feature.node.kubernetes.io/intel_qat": "true"} {
		if n.Labels[k] != v {
			t.Errorf("label %s = %q, want %q (labels %v)", k, n.Labels[k], v, n.Labels)
		}
	}
	for name, l := range map[string]corev1.ResourceList{"capacity": n.Status.Capacity, "allocatable": n.Status.Allocatable} {
		for r, want := range map[corev1.ResourceName]string{"example.com/gpu": "2", corev1.ResourceCPU: "32", corev1.ResourcePods: "110"} {
			if q, ok := l[r]; !ok || q.String() != want {
				t.Errorf("%s %s = %s, want %s", name, r, q.String(), want)
			}
		}
	}
}

func TestNewNodeGetsItsHardware(t *testing.T) {
	cs := fake.NewClientset()
	if err := applyNode(context.Background(), cs, gpuCluster().node()); err != nil {
		t.Fatal(err)
	}
	checkHardware(t, readNode(t, cs))
}

// A node left by an earlier start, without the hardware, gets it; what kwok and others
// set on it stays.
func TestExistingNodeConvergesAndKeepsTheRest(t *testing.T) {
	old := (&Cluster{Name: "cluster2"}).node()
	old.Labels["team"] = "a"
	old.Status.Capacity["hugepages-2Mi"] = resource.MustParse("1Gi")
	old.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	cs := fake.NewClientset(old)
	if err := applyNode(context.Background(), cs, gpuCluster().node()); err != nil {
		t.Fatal(err)
	}
	n := readNode(t, cs)
	checkHardware(t, n)
	hp := n.Status.Capacity["hugepages-2Mi"]
	if n.Labels["team"] != "a" || hp.String() != "1Gi" || len(n.Status.Conditions) != 1 {
		t.Errorf("node lost what it had: labels %v, capacity %v, conditions %v", n.Labels, n.Status.Capacity, n.Status.Conditions)
	}
	var updates, statusUpdates int
	for _, a := range cs.Actions() {
		if a.GetVerb() == "update" && a.GetSubresource() == "" {
			updates++
		}
		if a.GetVerb() == "update" && a.GetSubresource() == "status" {
			statusUpdates++
		}
	}
	if updates != 1 || statusUpdates != 1 {
		t.Errorf("%d updates and %d status updates, want one of each", updates, statusUpdates)
	}
}

func TestNodeAsWantedIsLeftAlone(t *testing.T) {
	cs := fake.NewClientset(gpuCluster().node())
	if err := applyNode(context.Background(), cs, gpuCluster().node()); err != nil {
		t.Fatal(err)
	}
	for _, a := range cs.Actions() {
		if a.GetVerb() == "update" {
			t.Errorf("unexpected %s of %s/%s", a.GetVerb(), a.GetResource().Resource, a.GetSubresource())
		}
	}
}

// A cluster without hardware of its own has the node it always had.
func TestPlainClusterNodeIsUnchanged(t *testing.T) {
	n := (&Cluster{Name: "cluster3"}).node()
	if len(n.Labels) != 4 || len(n.Status.Capacity) != 3 || len(n.Status.Allocatable) != 3 {
		t.Fatalf("node %+v", n)
	}
}
