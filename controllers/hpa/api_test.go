package hpa

import (
	"strings"
	"testing"
)

func ptr[T any](v T) *T { return &v }

func TestValidateConsumer(t *testing.T) {
	cases := []struct {
		name string
		spec ConsumerSpec
		want string // "" for valid, else a part of the message
	}{
		{"deployment with container", ConsumerSpec{Name: "web", Container: "app", Replicas: 2, Kind: "Deployment"}, ""},
		{"kind omitted", ConsumerSpec{Name: "web"}, ""},
		{"kind in lower case", ConsumerSpec{Name: "web", Kind: "deployment"}, ""},
		{"no name", ConsumerSpec{Container: "app"}, "spec.name is required"},
		{"negative replicas", ConsumerSpec{Name: "web", Replicas: -1}, "spec.replicas"},
		{"statefulset", ConsumerSpec{Name: "db", Kind: "StatefulSet"}, `spec.kind "StatefulSet" is not supported`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { expectErr(t, validateConsumer(c.spec), c.want) })
	}
}

func TestValidateIntentNeedsAValidAppName(t *testing.T) {
	expectErr(t, validateIntent(IntentSpec{App: "web"}), "")
	expectErr(t, validateIntent(IntentSpec{}), "spec.app is required")
	expectErr(t, validateIntent(IntentSpec{App: "-web"}), `spec.app "-web" is invalid`)
}

func TestValidateRequirement(t *testing.T) {
	full := ConsumerSpec{Name: "web", Container: "app"}
	cases := []struct {
		name     string
		spec     RequirementSpec
		consumer ConsumerSpec
		want     string
	}{
		{"cpu", alloc("cpu", 2, 4), full, ""},
		{"extended resource without limits", alloc("nvidia.com/gpu", 1, 0), full, ""},
		{"label", label("feature.node.kubernetes.io/intel_qat", "true"), ConsumerSpec{Name: "web"}, ""},
		{"allocatable missing", RequirementSpec{Resource: Resource{Key: "a", Value: "b"}}, full, "spec.allocatable is required"},
		{"zero requests", alloc("cpu", 0, 0), full, "requests must be at least 1"},
		{"requests above limits", alloc("memory", 512, 256), full, "requests (512) must not exceed spec.resource.limits (256)"},
		{"requests equal limits", alloc("memory", 256, 256), full, ""},
		{"no resource name", alloc("", 1, 0), full, "spec.resource.name is required"},
		{"bad resource name", alloc("cpu cores", 1, 0), full, "not a Kubernetes resource name"},
		{"memory overflow", alloc("memory", 1<<62, 0), full, "too large"},
		{"allocatable without container", alloc("cpu", 1, 0), ConsumerSpec{Name: "web"}, `consumer "web" has no spec.container`},
		{"consumer without name", label("a", "b"), ConsumerSpec{}, "consumer has no spec.name"},
		{"label missing value", label("a", ""), full, "key and spec.resource.value are required"},
		{"label key invalid", label("a b", "c"), full, "is not a label key"},
		{"both shapes", RequirementSpec{Allocatable: ptr(true), Resource: Resource{Name: "cpu", Requests: 1, Key: "a", Value: "b"}}, full, "key and value belong to non-allocatable"},
		{"label with requests", RequirementSpec{Allocatable: ptr(false), Resource: Resource{Requests: 1, Key: "a", Value: "b"}}, full, "belong to allocatable"},
		{"negative weight", RequirementSpec{Allocatable: ptr(false), Weight: -1, Resource: Resource{Key: "a", Value: "b"}}, full, "spec.weight"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { expectErr(t, validateRequirement(c.spec, c.consumer), c.want) })
	}
}

func TestClashingRequirementsOfOneConsumer(t *testing.T) {
	cases := []struct {
		name string
		a, b RequirementSpec
		want string
	}{
		{"same resource twice", alloc("cpu", 1, 0), alloc("cpu", 2, 0), "requests cpu"},
		{"different resources", alloc("cpu", 1, 0), alloc("memory", 2, 0), ""},
		{"one label, two values", label("zone", "a"), label("zone", "b"), "asks for node label zone=b"},
		{"same label twice", label("zone", "a"), label("zone", "a"), ""},
		{"label and resource", label("cpu", "a"), alloc("cpu", 1, 0), ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := clash(c.a, c.b); got != c.want {
				t.Fatalf("clash = %q, want %q", got, c.want)
			}
		})
	}
}

func TestCompositeAppOfDIG(t *testing.T) {
	got := compositeAppOf("/projects/p/composite-apps/ca/v1/deployment-intent-groups/dig")
	if got != "/projects/p/composite-apps/ca/v1" {
		t.Fatalf("compositeAppOf = %q", got)
	}
}

func alloc(name string, requests, limits int64) RequirementSpec {
	return RequirementSpec{Allocatable: ptr(true), Resource: Resource{Name: name, Requests: requests, Limits: limits}}
}

func label(key, value string) RequirementSpec {
	return RequirementSpec{Allocatable: ptr(false), Resource: Resource{Key: key, Value: value}}
}

func expectErr(t *testing.T, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Fatalf("unexpected error: %v", err)
	case want != "" && err == nil:
		t.Fatalf("no error, want one containing %q", want)
	case want != "" && !strings.Contains(err.Error(), want):
		t.Fatalf("error %q does not contain %q", err, want)
	}
}
