package monitor

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/temco/temco/internal/adapters/gitops"
)

// kustomizationStatus reads what Flux reports in a Kustomization object. Its Resources
// are the inventory's objects, sorted, not yet looked up on the cluster; bad lists the
// inventory ids that could not be read (Flux writes none such: they are only logged).
func kustomizationStatus(k *unstructured.Unstructured) (st gitops.KustomizationStatus, bad []string) {
	st = gitops.KustomizationStatus{Namespace: k.GetNamespace(), Name: k.GetName(), Generation: k.GetGeneration()}
	st.ObservedGeneration, _, _ = unstructured.NestedInt64(k.Object, "status", "observedGeneration")
	st.LastAppliedRevision, _, _ = unstructured.NestedString(k.Object, "status", "lastAppliedRevision")
	st.LastAttemptedRevision, _, _ = unstructured.NestedString(k.Object, "status", "lastAttemptedRevision")
	st.Suspended, _, _ = unstructured.NestedBool(k.Object, "spec", "suspend")
	conditions, _, _ := unstructured.NestedSlice(k.Object, "status", "conditions")
	for _, c := range conditions {
		if m, ok := c.(map[string]any); ok && m["type"] == "Ready" {
			st.Ready, _ = m["status"].(string)
			st.Reason, _ = m["reason"].(string)
			st.Message, _ = m["message"].(string)
		}
	}
	entries, _, _ := unstructured.NestedSlice(k.Object, "status", "inventory", "entries")
	for _, e := range entries {
		m, _ := e.(map[string]any)
		id, _ := m["id"].(string)
		version, _ := m["v"].(string)
		r, err := parseInventoryID(id, version)
		if err != nil {
			bad = append(bad, id)
			continue
		}
		st.Resources = append(st.Resources, r)
	}
	sortResources(st.Resources)
	return st, bad
}

// parseInventoryID reads an inventory entry as Flux writes it (cli-utils' ObjMetadata):
// "<namespace>_<name>_<group>_<kind>", namespace empty for cluster-scoped objects, group
// empty for the core group, and a colon of a name (RBAC names have them) written "__".
// No field but the name can hold "_", so the name is what lies between the first and the
// second-to-last separator.
func parseInventoryID(id, version string) (gitops.ResourceStatus, error) {
	ns, rest, ok := strings.Cut(id, "_")
	if !ok {
		return gitops.ResourceStatus{}, fmt.Errorf("inventory id %q: not <namespace>_<name>_<group>_<kind>", id)
	}
	i := strings.LastIndex(rest, "_")
	if i < 0 {
		return gitops.ResourceStatus{}, fmt.Errorf("inventory id %q: not <namespace>_<name>_<group>_<kind>", id)
	}
	rest, kind := rest[:i], rest[i+1:]
	i = strings.LastIndex(rest, "_")
	if i < 0 {
		return gitops.ResourceStatus{}, fmt.Errorf("inventory id %q: not <namespace>_<name>_<group>_<kind>", id)
	}
	name, group := strings.ReplaceAll(rest[:i], "__", ":"), rest[i+1:]
	if name == "" || kind == "" || strings.Contains(name, "_") {
		return gitops.ResourceStatus{}, fmt.Errorf("inventory id %q: not <namespace>_<name>_<group>_<kind>", id)
	}
	return gitops.ResourceStatus{Group: group, Version: version, Kind: kind, Namespace: ns, Name: name}, nil
}

func sortResources(rs []gitops.ResourceStatus) {
	sort.Slice(rs, func(i, j int) bool {
		a, b := rs[i], rs[j]
		for _, c := range [][2]string{{a.Group, b.Group}, {a.Kind, b.Kind}, {a.Namespace, b.Namespace}, {a.Name, b.Name}, {a.Version, b.Version}} {
			if c[0] != c[1] {
				return c[0] < c[1]
			}
		}
		return false
	})
}

// statusFile is the content of a status file: indented for people reading the branch,
// and the same bytes for the same status (struct fields in order, resources sorted).
func statusFile(st gitops.KustomizationStatus) ([]byte, error) {
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("status of Kustomization %s/%s: %w", st.Namespace, st.Name, err)
	}
	return append(b, '\n'), nil
}

// maxMessage bounds a resource's message: the file is read on every status query.
const maxMessage = 300

func shortMessage(s string) string {
	if r := []rune(s); len(r) > maxMessage {
		return string(r[:maxMessage-1]) + "…"
	}
	return s
}
