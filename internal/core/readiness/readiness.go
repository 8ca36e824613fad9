// Package readiness judges whether a Kubernetes object is ready from its status, one rule
// for clusters temco reaches directly and for the status a GitOps cluster's monitor reports.
package readiness

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Verdict is what an object's status says of its readiness.
type Verdict struct {
	Ready bool
	// Reason says, of an object not ready, why: the cluster's own words where its status
	// has them (a condition's type, status, reason and message), else what is counted
	// short (replicas). Empty for a ready object.
	Reason string
}

// maxReason bounds a reason: a controller's message may quote a whole object, and a
// status answer carries one reason per object.
const maxReason = 300

// Ready judges readiness from an object's status (see Judge).
func Ready(u *unstructured.Unstructured) bool { return Judge(u).Ready }

// Judge judges readiness from an object's status: Deployments Available with all replicas
// updated, StatefulSets and DaemonSets fully ready, Jobs complete, Pods Ready, CRDs
// Established, CertificateSigningRequests signed; any other object with a Ready
// condition (cert-manager's, Flux's, most operators') once it is True; objects without
// such a status once they exist.
func Judge(u *unstructured.Unstructured) Verdict {
	v := judge(u)
	if r := []rune(v.Reason); len(r) > maxReason {
		v.Reason = string(r[:maxReason-1]) + "…"
	}
	return v
}

func judge(u *unstructured.Unstructured) Verdict {
	gen, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
	if g := u.GetGeneration(); gen < g && observesGeneration(u.GetKind()) {
		return notReady("its controller has not yet observed generation %d (observed %d)", g, gen)
	}
	switch u.GetKind() {
	case "Deployment":
		return deployment(u)
	case "StatefulSet":
		want, _, _ := unstructured.NestedInt64(u.Object, "spec", "replicas")
		ready, _, _ := unstructured.NestedInt64(u.Object, "status", "readyReplicas")
		return counted(ready, want, "replicas ready")
	case "DaemonSet":
		want, _, _ := unstructured.NestedInt64(u.Object, "status", "desiredNumberScheduled")
		ready, _, _ := unstructured.NestedInt64(u.Object, "status", "numberReady")
		return counted(ready, want, "scheduled pods ready")
	case "Job":
		if c, ok := condition(u, "Failed"); ok && c.status == "True" {
			return Verdict{Reason: c.String()}
		}
		return conditionTrue(u, "Complete")
	case "Pod":
		return conditionTrue(u, "Ready")
	case "CustomResourceDefinition":
		return conditionTrue(u, "Established")
	case "CertificateSigningRequest":
		return signingRequest(u)
	}
	if c, ok := condition(u, "Ready"); ok && c.status != "True" {
		return Verdict{Reason: c.String()}
	}
	return Verdict{Ready: true}
}

// observesGeneration: the workloads whose controllers report the generation they acted on.
func observesGeneration(kind string) bool {
	return kind == "Deployment" || kind == "StatefulSet" || kind == "DaemonSet"
}

// deployment is ready when Available with every replica updated and none of the old
// template left: the updated ones may be the pending ones and the available ones the old
// (as kubectl rollout status judges it). A rollout that stopped progressing says why.
func deployment(u *unstructured.Unstructured) Verdict {
	want, found, _ := unstructured.NestedInt64(u.Object, "spec", "replicas")
	if !found {
		want = 1 // the apiserver's default
	}
	avail, _, _ := unstructured.NestedInt64(u.Object, "status", "availableReplicas")
	updated, _, _ := unstructured.NestedInt64(u.Object, "status", "updatedReplicas")
	total, _, _ := unstructured.NestedInt64(u.Object, "status", "replicas")
	available := conditionTrue(u, "Available")
	if available.Ready && avail >= want && updated >= want && total <= updated {
		return Verdict{Ready: true}
	}
	if c, ok := condition(u, "Progressing"); ok && c.status == "False" {
		return Verdict{Reason: c.String()}
	}
	if !available.Ready {
		return available
	}
	return notReady("%d of %d replicas updated, %d available, %d in all", updated, want, avail, total)
}

// signingRequest is ready once signed; denied or failed, it says so with the reason.
func signingRequest(u *unstructured.Unstructured) Verdict {
	for _, typ := range []string{"Denied", "Failed"} {
		if c, ok := condition(u, typ); ok && c.status == "True" {
			return Verdict{Reason: c.String()}
		}
	}
	if cert, _, _ := unstructured.NestedString(u.Object, "status", "certificate"); cert != "" {
		return Verdict{Ready: true}
	}
	if c, ok := condition(u, "Approved"); ok && c.status == "True" {
		return notReady("approved, not signed yet")
	}
	return notReady("not approved yet")
}

func counted(ready, want int64, what string) Verdict {
	if ready >= want {
		return Verdict{Ready: true}
	}
	return notReady("%d of %d %s", ready, want, what)
}

func notReady(format string, args ...any) Verdict {
	return Verdict{Reason: fmt.Sprintf(format, args...)}
}

// cond is one condition of an object's status.
type cond struct{ typ, status, reason, message string }

// String is the condition as the reason of a verdict: "Ready False: Pending: <message>".
func (c cond) String() string {
	parts := []string{c.typ + " " + c.status}
	for _, p := range []string{c.reason, c.message} {
		if p != "" {
			parts = append(parts, p)
		}
	}
	return strings.Join(parts, ": ")
}

func condition(u *unstructured.Unstructured, typ string) (cond, bool) {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if !ok || m["type"] != typ {
			continue
		}
		str := func(k string) string { s, _ := m[k].(string); return s }
		return cond{typ, str("status"), str("reason"), str("message")}, true
	}
	return cond{}, false
}

// conditionTrue is ready when the condition typ is True; else it says what it is, or
// that there is none yet.
func conditionTrue(u *unstructured.Unstructured, typ string) Verdict {
	c, ok := condition(u, typ)
	switch {
	case !ok:
		return notReady("no %s condition yet", typ)
	case c.status != "True":
		return Verdict{Reason: c.String()}
	}
	return Verdict{Ready: true}
}

// statusless are the built-in kinds, by API group, whose objects have no status at all:
// nothing on a cluster ever makes one unready, so Judge finds it Ready as soon as it
// exists. Kinds with a status a controller writes (Services, PodDisruptionBudgets,
// PersistentVolumeClaims, APIServices, any custom resource) are not among them.
var statusless = map[string]map[string]bool{
	"": {"ConfigMap": true, "Secret": true, "ServiceAccount": true, "LimitRange": true, "PodTemplate": true,
		"Endpoints": true},
	"rbac.authorization.k8s.io":    {"Role": true, "RoleBinding": true, "ClusterRole": true, "ClusterRoleBinding": true},
	"admissionregistration.k8s.io": {"MutatingWebhookConfiguration": true, "ValidatingWebhookConfiguration": true},
	"scheduling.k8s.io":            {"PriorityClass": true},
	"storage.k8s.io":               {"StorageClass": true, "CSIDriver": true},
	"networking.k8s.io":            {"IngressClass": true},
	"node.k8s.io":                  {"RuntimeClass": true},
}

// ByExistence reports whether an object of this group and kind is Ready exactly when it
// exists: a built-in kind without a status. Having applied it is all a readiness gate
// can learn of it (as KubeFleet counts the resources it cannot track as available once
// applied).
func ByExistence(group, kind string) bool { return statusless[group][kind] }
