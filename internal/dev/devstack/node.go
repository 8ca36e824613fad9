package devstack

import (
	"context"
	"fmt"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
)

// ensureNode registers the fake node that kwok keeps Ready, or brings an existing one
// (a restart on the same data) to the labels and capacity the cluster has now.
func (c *Cluster) ensureNode(ctx context.Context) error {
	cs, err := c.Clientset()
	if err != nil {
		return err
	}
	if err := applyNode(ctx, cs, c.node()); err != nil {
		return fmt.Errorf("cluster %s: %w", c.Name, err)
	}
	return nil
}

// node is the fake node as it should be.
func (c *Cluster) node() *corev1.Node {
	capacity := corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("32"), corev1.ResourceMemory: resource.MustParse("256Gi"),
		corev1.ResourcePods: resource.MustParse("110"),
	}
	maps.Copy(capacity, c.NodeResources)
	labels := map[string]string{"type": "kwok", "kubernetes.io/hostname": NodeName,
		"kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64"}
	maps.Copy(labels, c.NodeLabels)
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        NodeName,
			Annotations: map[string]string{"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
			Labels:      labels,
		},
		Status: corev1.NodeStatus{Capacity: capacity, Allocatable: capacity.DeepCopy()},
	}
}

// applyNode creates the node, or sets its labels (Update) and its capacity and
// allocatable (UpdateStatus) on the existing one. What it does not name is kept: kwok's
// conditions and addresses, labels and resources others set. Conflicts with kwok's status
// heartbeats are retried on a fresh read.
func applyNode(ctx context.Context, cs kubernetes.Interface, want *corev1.Node) error {
	nodes := cs.CoreV1().Nodes()
	_, err := nodes.Create(ctx, want, metav1.CreateOptions{})
	if err == nil {
		return nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create node %s: %w", want.Name, err)
	}
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := nodes.Get(ctx, want.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if cur.Labels == nil {
			cur.Labels = map[string]string{}
		}
		if !mergeLabels(cur.Labels, want.Labels) {
			return nil
		}
		_, err = nodes.Update(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("label node %s: %w", want.Name, err)
	}
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := nodes.Get(ctx, want.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if cur.Status.Capacity == nil {
			cur.Status.Capacity = corev1.ResourceList{}
		}
		if cur.Status.Allocatable == nil {
			cur.Status.Allocatable = corev1.ResourceList{}
		}
		capacity := mergeResources(cur.Status.Capacity, want.Status.Capacity)
		allocatable := mergeResources(cur.Status.Allocatable, want.Status.Allocatable)
		if !capacity && !allocatable {
			return nil
		}
		_, err = nodes.UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("set the capacity of node %s: %w", want.Name, err)
	}
	return nil
}

// mergeLabels sets want's labels in into and reports whether any changed.
func mergeLabels(into, want map[string]string) bool {
	changed := false
	for k, v := range want {
		if got, ok := into[k]; !ok || got != v {
			into[k], changed = v, true
		}
	}
	return changed
}

// mergeResources sets want's quantities in into and reports whether any changed.
func mergeResources(into, want corev1.ResourceList) bool {
	changed := false
	for r, q := range want {
		if got, ok := into[r]; !ok || got.Cmp(q) != 0 {
			into[r], changed = q.DeepCopy(), true
		}
	}
	return changed
}

// WaitNodeReady waits until kwok reports the fake node Ready.
func (c *Cluster) WaitNodeReady(ctx context.Context, timeout time.Duration) error {
	cs, err := c.Clientset()
	if err != nil {
		return err
	}
	return WaitReady(ctx, c.proc("kwok"), timeout, func(ctx context.Context) error {
		n, err := cs.CoreV1().Nodes().Get(ctx, NodeName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
				return nil
			}
		}
		return errNotReady
	})
}
