package hpa

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// nodeSource tells what the nodes of a cluster ("provider+cluster") offer now.
type nodeSource interface {
	Nodes(ctx context.Context, cluster string) ([]node, error)
}

// liveNodes reads nodes and pods from the cluster itself, as EMCO does for capacity (EMCO
// reads labels from a copy clm events keep; reading them live cannot be stale).
type liveNodes struct {
	client func(ctx context.Context, cluster string) (kubernetes.Interface, error)
}

// adminClients makes clientsets from the clusters' registered credentials.
func adminClients(admin func(ctx context.Context, cluster string) (*rest.Config, error)) func(context.Context, string) (kubernetes.Interface, error) {
	return func(ctx context.Context, cluster string) (kubernetes.Interface, error) {
		if admin == nil {
			return nil, fmt.Errorf("no cluster credentials are available to hpa-plc")
		}
		cfg, err := admin(ctx, cluster)
		if err != nil {
			return nil, err
		}
		return kubernetes.NewForConfig(cfg)
	}
}

func (l liveNodes) Nodes(ctx context.Context, cluster string) ([]node, error) {
	cs, err := l.client(ctx, cluster)
	if err != nil {
		return nil, fmt.Errorf("reach cluster %s: %w", cluster, err)
	}
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list the nodes of cluster %s: %w", cluster, err)
	}
	pods, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "status.phase!=Succeeded,status.phase!=Failed"})
	if err != nil {
		return nil, fmt.Errorf("list the pods of cluster %s: %w", cluster, err)
	}
	used := map[string]corev1.ResourceList{}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Spec.NodeName == "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		if used[p.Spec.NodeName] == nil {
			used[p.Spec.NodeName] = corev1.ResourceList{}
		}
		add(used[p.Spec.NodeName], podRequests(p))
	}
	var out []node
	for _, n := range nodes.Items {
		if n.Spec.Unschedulable { // cordoned: nothing new lands there
			continue
		}
		free := make(map[string]int64, len(n.Status.Allocatable))
		for r, q := range n.Status.Allocatable {
			left := q.DeepCopy()
			if u, ok := used[n.Name][r]; ok {
				left.Sub(u)
			}
			free[string(r)] = wholeUnits(left)
		}
		out = append(out, node{Name: n.Name, Labels: n.Labels, Free: free})
	}
	slices.SortFunc(out, func(a, b node) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// podRequests is what the scheduler reserves for a pod: its containers and sidecars, or
// its largest init step if that is more, plus the pod overhead.
func podRequests(p *corev1.Pod) corev1.ResourceList {
	sidecars, initPeak := corev1.ResourceList{}, corev1.ResourceList{}
	for _, c := range p.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			add(sidecars, c.Resources.Requests)
			maxInto(initPeak, sidecars)
			continue
		}
		step := sidecars.DeepCopy()
		add(step, c.Resources.Requests)
		maxInto(initPeak, step)
	}
	total := sidecars.DeepCopy()
	for _, c := range p.Spec.Containers {
		add(total, c.Resources.Requests)
	}
	maxInto(total, initPeak)
	add(total, p.Spec.Overhead)
	return total
}

func add(into, l corev1.ResourceList) {
	for r, q := range l {
		sum := into[r]
		sum.Add(q)
		into[r] = sum
	}
}

func maxInto(into, l corev1.ResourceList) {
	for r, q := range l {
		if cur, ok := into[r]; !ok || q.Cmp(cur) > 0 {
			into[r] = q.DeepCopy()
		}
	}
}
