package capacity

import (
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
)

// Observed is what a cluster has of one workload: its Deployment and HPA (nil: not there,
// e.g. on a cluster just added) and the Deployment's pods.
type Observed struct {
	Deployment *appsv1.Deployment
	HPA        *autoscalingv2.HorizontalPodAutoscaler
	Pods       []corev1.Pod
}

// SignalsOf turns what a cluster has of each workload into its Signals. floor is the
// replicas a cluster being emptied goes down to: the drain's maximum, 0 for the HPA's
// minimum. A workload not there yet is below its ceiling and wants nothing.
func SignalsOf(workloads []Observed, floor int) Signals {
	s := Signals{Reachable: true, WantsFewer: len(workloads) > 0, AtFloor: true}
	for _, w := range workloads {
		for _, p := range w.Pods {
			if unschedulable(p) {
				s.Unschedulable++
			}
		}
		limited, reason := scalingLimited(w.HPA)
		switch {
		case w.HPA == nil:
			s.WantsFewer = false
		case limited && reason == reasonTooFew && w.HPA.Status.CurrentReplicas <= minReplicas(w.HPA):
		case limited && w.HPA.Status.CurrentReplicas >= w.HPA.Spec.MaxReplicas:
			s.AtMaxReplicas, s.WantsFewer = true, false
		default:
			s.WantsFewer = false
		}
		if w.Deployment != nil && int(w.Deployment.Status.Replicas) > floorOf(w.HPA, floor) {
			s.AtFloor = false
		}
	}
	return s
}

// reasonTooFew is the HPA controller's ScalingLimited reason when it wants fewer replicas
// than its minimum (TooManyReplicas when more than its maximum).
const reasonTooFew = "TooFewReplicas"

func scalingLimited(h *autoscalingv2.HorizontalPodAutoscaler) (bool, string) {
	if h == nil {
		return false, ""
	}
	for _, c := range h.Status.Conditions {
		if c.Type == autoscalingv2.ScalingLimited {
			return c.Status == corev1.ConditionTrue, c.Reason
		}
	}
	return false, ""
}

func minReplicas(h *autoscalingv2.HorizontalPodAutoscaler) int32 {
	if h.Spec.MinReplicas != nil {
		return *h.Spec.MinReplicas
	}
	return 1 // the API's default
}

// floorOf is the replicas a workload is emptied down to: floor when set, else its HPA's
// minimum (1 without an HPA).
func floorOf(h *autoscalingv2.HorizontalPodAutoscaler, floor int) int {
	switch {
	case floor > 0:
		return floor
	case h != nil:
		return int(minReplicas(h))
	}
	return 1
}

// unschedulable tells whether no node can take a pod: pending, and the scheduler said so.
func unschedulable(p corev1.Pod) bool {
	if p.Status.Phase != corev1.PodPending || p.DeletionTimestamp != nil {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return true
		}
	}
	return false
}
