package capacity

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
)

func hpa(current, minR, maxR int32, limited corev1.ConditionStatus, reason string) *autoscalingv2.HorizontalPodAutoscaler {
	h := &autoscalingv2.HorizontalPodAutoscaler{Spec: autoscalingv2.HorizontalPodAutoscalerSpec{MinReplicas: &minR, MaxReplicas: maxR},
		Status: autoscalingv2.HorizontalPodAutoscalerStatus{CurrentReplicas: current}}
	if limited != "" {
		h.Status.Conditions = []autoscalingv2.HorizontalPodAutoscalerCondition{{Type: autoscalingv2.ScalingLimited, Status: limited, Reason: reason}}
	}
	return h
}

func deployment(replicas int32) *appsv1.Deployment {
	return &appsv1.Deployment{Status: appsv1.DeploymentStatus{Replicas: replicas}}
}

func pod(phase corev1.PodPhase, scheduled corev1.ConditionStatus, reason string) corev1.Pod {
	return corev1.Pod{Status: corev1.PodStatus{Phase: phase, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: scheduled, Reason: reason}}}}
}

func TestSignalsOf(t *testing.T) {
	unplaced := pod(corev1.PodPending, corev1.ConditionFalse, corev1.PodReasonUnschedulable)
	pulling := pod(corev1.PodPending, corev1.ConditionTrue, "")
	running := pod(corev1.PodRunning, corev1.ConditionTrue, "")
	cases := []struct {
		name  string
		w     []Observed
		floor int
		want  Signals
	}{
		{"room to grow", []Observed{{Deployment: deployment(3), HPA: hpa(3, 1, 10, corev1.ConditionFalse, "DesiredWithinRange"), Pods: []corev1.Pod{running, pulling}}}, 0,
			Signals{Reachable: true}},
		{"pods no node takes", []Observed{{Deployment: deployment(5), HPA: hpa(5, 1, 10, corev1.ConditionFalse, ""), Pods: []corev1.Pod{running, unplaced, unplaced}}}, 0,
			Signals{Reachable: true, Unschedulable: 2}},
		{"the HPA at its maximum and limited", []Observed{{Deployment: deployment(10), HPA: hpa(10, 1, 10, corev1.ConditionTrue, "TooManyReplicas")}}, 0,
			Signals{Reachable: true, AtMaxReplicas: true}},
		{"at its maximum but not limited: not full", []Observed{{Deployment: deployment(10), HPA: hpa(10, 1, 10, corev1.ConditionFalse, "")}}, 0,
			Signals{Reachable: true}},
		{"wants fewer than its minimum", []Observed{{Deployment: deployment(2), HPA: hpa(2, 2, 10, corev1.ConditionTrue, reasonTooFew)}}, 0,
			Signals{Reachable: true, WantsFewer: true, AtFloor: true}},
		{"drained to the floor", []Observed{{Deployment: deployment(1), HPA: hpa(1, 2, 1, corev1.ConditionTrue, "TooManyReplicas")}}, 1,
			Signals{Reachable: true, AtMaxReplicas: true, AtFloor: true}},
		{"one workload of two wants fewer: not the cluster", []Observed{
			{Deployment: deployment(1), HPA: hpa(1, 1, 10, corev1.ConditionTrue, reasonTooFew)},
			{Deployment: deployment(4), HPA: hpa(4, 1, 10, corev1.ConditionFalse, "")}}, 0,
			Signals{Reachable: true}},
		{"not there yet", []Observed{{}}, 0, Signals{Reachable: true, AtFloor: true}},
	}
	for _, c := range cases {
		if got := SignalsOf(c.w, c.floor); got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}
