package readiness

import (
	"strings"
	"testing"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func obj(kind string, gen int64, fields map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"kind": kind, "metadata": map[string]any{"generation": gen}}}
	for k, v := range fields {
		u.Object[k] = v
	}
	return u
}

func conditions(c ...map[string]any) map[string]any {
	list := make([]any, len(c))
	for i := range c {
		list[i] = c[i]
	}
	return map[string]any{"conditions": list}
}

func statusCondition(typ, status, reason, message string) map[string]any {
	return map[string]any{"type": typ, "status": status, "reason": reason, "message": message}
}

func TestJudge(t *testing.T) {
	available := []any{map[string]any{"type": "Available", "status": "True"}}
	// cert-manager's CertificateRequest whose issuer does not exist (yet), as it reports it.
	pending := conditions(statusCondition("Approved", "True", "cert-manager.io", "Certificate request has been approved by cert-manager.io"),
		statusCondition("Ready", "False", "Pending", `Referenced "ClusterIssuer" not found: clusterissuer.cert-manager.io "new-istio-system" not found`))
	cases := []struct {
		name   string
		u      *unstructured.Unstructured
		ready  bool
		reason string // a part of the reason of a verdict not ready
	}{
		{"deployment available", obj("Deployment", 2, map[string]any{"spec": map[string]any{"replicas": int64(2)},
			"status": map[string]any{"observedGeneration": int64(2), "availableReplicas": int64(2), "updatedReplicas": int64(2), "conditions": available}}), true, ""},
		{"deployment rolling out", obj("Deployment", 3, map[string]any{"spec": map[string]any{"replicas": int64(2)},
			"status": map[string]any{"observedGeneration": int64(2), "availableReplicas": int64(2), "updatedReplicas": int64(2), "conditions": available}}),
			false, "not yet observed generation 3"},
		{"deployment with a new pod pending and the old one serving", obj("Deployment", 2, map[string]any{"spec": map[string]any{"replicas": int64(1)},
			"status": map[string]any{"observedGeneration": int64(2), "replicas": int64(2), "availableReplicas": int64(1), "updatedReplicas": int64(1), "conditions": available}}),
			false, "1 of 1 replicas updated, 1 available, 2 in all"},
		{"deployment short of replicas", obj("Deployment", 1, map[string]any{"spec": map[string]any{"replicas": int64(3)},
			"status": map[string]any{"observedGeneration": int64(1), "availableReplicas": int64(2), "updatedReplicas": int64(3), "conditions": available}}),
			false, "3 of 3 replicas updated, 2 available"},
		{"deployment unavailable", obj("Deployment", 1, map[string]any{"status": map[string]any{"observedGeneration": int64(1),
			"conditions": []any{statusCondition("Available", "False", "MinimumReplicasUnavailable", "Deployment does not have minimum availability.")}}}),
			false, "Available False: MinimumReplicasUnavailable: Deployment does not have minimum availability."},
		{"deployment past its progress deadline", obj("Deployment", 1, map[string]any{"status": map[string]any{"observedGeneration": int64(1),
			"conditions": []any{statusCondition("Available", "False", "MinimumReplicasUnavailable", ""),
				statusCondition("Progressing", "False", "ProgressDeadlineExceeded", `ReplicaSet "web-1" has timed out progressing.`)}}}),
			false, "Progressing False: ProgressDeadlineExceeded"},
		{"statefulset ready", obj("StatefulSet", 1, map[string]any{"spec": map[string]any{"replicas": int64(1)},
			"status": map[string]any{"observedGeneration": int64(1), "readyReplicas": int64(1)}}), true, ""},
		{"statefulset short", obj("StatefulSet", 1, map[string]any{"spec": map[string]any{"replicas": int64(3)},
			"status": map[string]any{"observedGeneration": int64(1), "readyReplicas": int64(1)}}), false, "1 of 3 replicas ready"},
		{"job running", obj("Job", 1, map[string]any{"status": map[string]any{}}), false, "no Complete condition yet"},
		{"job failed", obj("Job", 1, map[string]any{"status": conditions(statusCondition("Failed", "True", "BackoffLimitExceeded", "Job has reached the specified backoff limit"))}),
			false, "Failed True: BackoffLimitExceeded: Job has reached"},
		{"pod not ready", obj("Pod", 0, map[string]any{"status": conditions(statusCondition("Ready", "False", "ContainersNotReady", "containers with unready status: [web]"))}),
			false, "Ready False: ContainersNotReady: containers with unready status: [web]"},
		{"configmap exists", obj("ConfigMap", 0, nil), true, ""},
		{"crd established", obj("CustomResourceDefinition", 1, map[string]any{"status": conditions(statusCondition("Established", "True", "", ""))}), true, ""},
		{"crd not yet established", obj("CustomResourceDefinition", 1, map[string]any{"status": map[string]any{}}), false, "no Established condition yet"},
		// Any other kind with a Ready condition: cert-manager's, Flux's, most operators'.
		{"certificate request pending", obj("CertificateRequest", 1, map[string]any{"status": pending}),
			false, `Ready False: Pending: Referenced "ClusterIssuer" not found`},
		{"certificate request issued", obj("CertificateRequest", 1, map[string]any{"status": conditions(statusCondition("Ready", "True", "Issued", "Certificate fetched from issuer successfully"))}), true, ""},
		{"certificate request not looked at yet", obj("CertificateRequest", 1, map[string]any{}), true, ""},
		{"kustomization reconciling", obj("Kustomization", 2, map[string]any{"status": conditions(statusCondition("Ready", "Unknown", "Progressing", "Reconciliation in progress"))}),
			false, "Ready Unknown: Progressing: Reconciliation in progress"},
		{"signing request pending", obj("CertificateSigningRequest", 0, map[string]any{"status": map[string]any{}}), false, "not approved yet"},
		{"signing request approved", obj("CertificateSigningRequest", 0, map[string]any{"status": conditions(statusCondition("Approved", "True", "TemcoCACertEnrollment", ""))}),
			false, "approved, not signed yet"},
		{"signing request denied", obj("CertificateSigningRequest", 0, map[string]any{"status": conditions(statusCondition("Denied", "True", "Policy", "not for this subject"))}),
			false, "Denied True: Policy: not for this subject"},
		{"signing request signed", obj("CertificateSigningRequest", 0, map[string]any{"status": map[string]any{"certificate": "LS0t",
			"conditions": []any{statusCondition("Approved", "True", "", "")}}}), true, ""},
	}
	for _, c := range cases {
		v := Judge(c.u)
		if v.Ready != c.ready || Ready(c.u) != c.ready {
			t.Errorf("%s: ready %v, want %v (%q)", c.name, v.Ready, c.ready, v.Reason)
		}
		if c.ready && v.Reason != "" || !c.ready && !strings.Contains(v.Reason, c.reason) {
			t.Errorf("%s: reason %q, want %q", c.name, v.Reason, c.reason)
		}
	}
}

// A controller's message may be long; the reason is bounded, in whole characters.
func TestJudgeBoundsTheReason(t *testing.T) {
	u := obj("Widget", 1, map[string]any{"status": conditions(statusCondition("Ready", "False", "Invalid", strings.Repeat("é", 1000)))})
	v := Judge(u)
	if n := utf8.RuneCountInString(v.Reason); n != maxReason || !utf8.ValidString(v.Reason) || !strings.HasSuffix(v.Reason, "…") {
		t.Errorf("reason of %d characters: %q", n, v.Reason)
	}
}

// Only built-in kinds without a status are ready by existence: the same kind name in
// another group, or a kind whose status a controller writes, must be read.
func TestOnlyStatuslessBuiltInKindsAreReadyByExistence(t *testing.T) {
	for _, c := range []struct {
		group, kind string
		want        bool
	}{
		{"", "ConfigMap", true}, {"", "Secret", true}, {"rbac.authorization.k8s.io", "ClusterRoleBinding", true},
		{"example.com", "ConfigMap", false}, {"", "Service", false}, {"", "PersistentVolumeClaim", false},
		{"apps", "Deployment", false}, {"policy", "PodDisruptionBudget", false}, {"cert-manager.io", "Certificate", false},
		{"apiextensions.k8s.io", "CustomResourceDefinition", false},
	} {
		if got := ByExistence(c.group, c.kind); got != c.want {
			t.Errorf("ByExistence(%q, %q) = %v, want %v", c.group, c.kind, got, c.want)
		}
	}
	for group, kinds := range statusless { // and Judge agrees: such an object is Ready once it exists
		for kind := range kinds {
			if v := Judge(obj(kind, 0, nil)); !v.Ready {
				t.Errorf("%s/%s: Judge says %q", group, kind, v.Reason)
			}
		}
	}
}
