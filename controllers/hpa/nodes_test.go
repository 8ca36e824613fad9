package hpa

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
)

// k8sNode is a node with labels and allocatable resources ("cpu=4", "memory=8Gi").
func k8sNode(name string, labels map[string]string, alloc ...string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Status: corev1.NodeStatus{Allocatable: resources(alloc...)}}
}

// k8sPod is a pod on a node with one container's requests.
func k8sPod(name, nodeName string, phase corev1.PodPhase, requests ...string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.PodSpec{NodeName: nodeName, Containers: []corev1.Container{
			{Name: "c", Resources: corev1.ResourceRequirements{Requests: resources(requests...)}}}},
		Status: corev1.PodStatus{Phase: phase}}
}

func resources(kv ...string) corev1.ResourceList {
	l := corev1.ResourceList{}
	for _, s := range kv {
		k, v, _ := strings.Cut(s, "=")
		l[corev1.ResourceName(k)] = resource.MustParse(v)
	}
	return l
}

// clusters serves fake clientsets by cluster key.
func clusters(objs map[string][]runtime.Object) liveNodes {
	sets := map[string]kubernetes.Interface{}
	for cl, o := range objs {
		sets[cl] = fake.NewClientset(o...)
	}
	return liveNodes{client: func(_ context.Context, cl string) (kubernetes.Interface, error) {
		if cs, ok := sets[cl]; ok {
			return cs, nil
		}
		return nil, &unreachable{cl}
	}}
}

type unreachable struct{ cluster string }

func (u *unreachable) Error() string { return "no credentials for " + u.cluster }

func TestLiveNodesSubtractRequestsOfRunningPods(t *testing.T) {
	cordoned := k8sNode("n0", nil, "cpu=8")
	cordoned.Spec.Unschedulable = true
	withInit := k8sPod("init", "n1", corev1.PodRunning, "cpu=500m")
	withInit.Spec.InitContainers = []corev1.Container{{Name: "i", Resources: corev1.ResourceRequirements{Requests: resources("cpu=3")}}}
	src := clusters(map[string][]runtime.Object{"p+c1": {
		cordoned,
		k8sNode("n1", map[string]string{"qat": "true"}, "cpu=7500m", "memory=8G", "nvidia.com/gpu=2"),
		k8sNode("n2", nil, "cpu=2"),
		k8sPod("web", "n1", corev1.PodRunning, "cpu=1", "memory=1G", "nvidia.com/gpu=1"),
		k8sPod("done", "n1", corev1.PodSucceeded, "cpu=4"),
		k8sPod("failed", "n2", corev1.PodFailed, "cpu=2"),
		k8sPod("pending", "", corev1.PodPending, "cpu=2"),
		withInit,
	}})
	got, err := src.Nodes(context.Background(), "p+c1")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Name != "n1" || got[1].Name != "n2" {
		t.Fatalf("nodes = %+v, want n1 and n2 (n0 is cordoned)", got)
	}
	// n1: 7.5 cores - 1 (web) - 3 (init's peak) = 3.5, counted as 3 whole cores.
	want := map[string]int64{"cpu": 3, "memory": 7e9, "nvidia.com/gpu": 1}
	for r, v := range want {
		if got[0].Free[r] != v {
			t.Errorf("n1 free %s = %d, want %d", r, got[0].Free[r], v)
		}
	}
	if got[0].Labels["qat"] != "true" || got[1].Free["cpu"] != 2 {
		t.Errorf("nodes = %+v", got)
	}
}

func TestPodRequestsCountSidecarsAndOverhead(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	p := &corev1.Pod{Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{
			{Name: "proxy", RestartPolicy: &always, Resources: corev1.ResourceRequirements{Requests: resources("memory=100M")}},
			{Name: "migrate", Resources: corev1.ResourceRequirements{Requests: resources("memory=1G")}},
		},
		Containers: []corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{Requests: resources("memory=500M")}}},
		Overhead:   resources("memory=10M"),
	}}
	got := podRequests(p)[corev1.ResourceMemory]
	// max(proxy + migrate = 1.1G, proxy + app = 600M) + 10M overhead
	if want := resource.MustParse("1110M"); got.Cmp(want) != 0 {
		t.Fatalf("memory = %s, want %s", got.String(), want.String())
	}
}
