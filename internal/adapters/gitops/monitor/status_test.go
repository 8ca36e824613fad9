package monitor

import (
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/temco/temco/internal/adapters/gitops"
)

func TestParseInventoryIDReadsFluxIDs(t *testing.T) {
	for _, c := range []struct {
		id   string
		want gitops.ResourceStatus
		bad  bool
	}{
		{id: "default_web_apps_Deployment", want: gitops.ResourceStatus{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "default", Name: "web"}},
		{id: "default_hello__ConfigMap", want: gitops.ResourceStatus{Version: "v1", Kind: "ConfigMap", Namespace: "default", Name: "hello"}},
		{id: "_shop__Namespace", want: gitops.ResourceStatus{Version: "v1", Kind: "Namespace", Name: "shop"}},
		{id: "_system__temco_rbac.authorization.k8s.io_ClusterRole", want: gitops.ResourceStatus{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole", Name: "system:temco"}},
		{id: "", bad: true},
		{id: "default_web", bad: true},
		{id: "default_web_apps", bad: true},
		{id: "default__apps_Deployment", bad: true},      // no name
		{id: "default_a_b_c_apps_Deployment", bad: true}, // one field too many
		{id: "default_web_apps_", bad: true},             // no kind
	} {
		got, err := parseInventoryID(c.id, "v1")
		if c.bad {
			if err == nil {
				t.Errorf("%q: read as %+v, want an error", c.id, got)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%q: %+v %v, want %+v", c.id, got, err, c.want)
		}
	}
}

func TestKustomizationStatusReadsFluxReport(t *testing.T) {
	k := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
		"metadata": map[string]any{"namespace": "flux-system", "name": "kust1", "generation": int64(3)},
		"spec":     map[string]any{"suspend": true},
		"status": map[string]any{
			"observedGeneration":    int64(2),
			"lastAppliedRevision":   "main@sha1:1111111111111111111111111111111111111111",
			"lastAttemptedRevision": "main@sha1:2222222222222222222222222222222222222222",
			"conditions": []any{
				map[string]any{"type": "Reconciling", "status": "True", "reason": "Progressing", "message": "x"},
				map[string]any{"type": "Ready", "status": "False", "reason": "HealthCheckFailed", "message": "timeout"},
			},
			"inventory": map[string]any{"entries": []any{
				map[string]any{"id": "shop_web_apps_Deployment", "v": "v1"},
				map[string]any{"id": "garbage", "v": "v1"},
				map[string]any{"id": "shop_conf__ConfigMap", "v": "v1"},
			}},
		},
	}}
	st, bad := kustomizationStatus(k)
	want := gitops.KustomizationStatus{Namespace: "flux-system", Name: "kust1", Generation: 3, ObservedGeneration: 2,
		Ready: "False", Reason: "HealthCheckFailed", Message: "timeout",
		LastAppliedRevision:   "main@sha1:1111111111111111111111111111111111111111",
		LastAttemptedRevision: "main@sha1:2222222222222222222222222222222222222222",
		Suspended:             true,
		Resources: []gitops.ResourceStatus{ // sorted by group, kind, namespace, name
			{Version: "v1", Kind: "ConfigMap", Namespace: "shop", Name: "conf"},
			{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "shop", Name: "web"},
		}}
	if !reflect.DeepEqual(st, want) {
		t.Errorf("status\n%+v\nwant\n%+v", st, want)
	}
	if !reflect.DeepEqual(bad, []string{"garbage"}) {
		t.Errorf("unreadable ids %q, want [garbage]", bad)
	}
}

func TestStatusFileIsTheSameForTheSameStatus(t *testing.T) {
	st := gitops.KustomizationStatus{Namespace: "ns", Name: "k", Ready: "True",
		Resources: []gitops.ResourceStatus{{Kind: "ConfigMap", Name: "a", Present: true, Ready: true}}}
	a, err := statusFile(st)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := statusFile(st)
	if string(a) != string(b) {
		t.Error("two encodings of one status differ")
	}
	// The keys are the field names: temco's workers decode them into the same struct.
	for _, key := range []string{`"Namespace": "ns"`, `"Ready": "True"`, `"Present": true`, `"LastAppliedRevision": ""`} {
		if !strings.Contains(string(a), key) {
			t.Errorf("status file lacks %s:\n%s", key, a)
		}
	}
}

func TestShortMessageBoundsLongErrors(t *testing.T) {
	if got := shortMessage("forbidden"); got != "forbidden" {
		t.Errorf("a short message changed: %q", got)
	}
	if got := []rune(shortMessage(strings.Repeat("é", 1000))); len(got) != maxMessage {
		t.Errorf("a long message kept %d characters, want %d", len(got), maxMessage)
	}
}
