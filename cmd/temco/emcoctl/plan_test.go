package emcoctl

import (
	"strings"
	"testing"
)

const dig = "projects/p/composite-apps/ca/v1/deployment-intent-groups/d"

// describe renders a plan as one "METHOD path" or "skip" per step.
func describe(steps []step) string {
	var out []string
	for _, s := range steps {
		if s.skip != "" {
			out = append(out, "skip")
			continue
		}
		out = append(out, s.method+" "+s.path)
	}
	return strings.Join(out, ", ")
}

func TestEachCommandAddressesDocumentsAsEmcoctlDoes(t *testing.T) {
	for _, tc := range []struct {
		name                       string
		doc                        Document
		apply, update, delete, get string
	}{
		{"a resource: its collection, then anchor/name",
			Document{anchor: "projects", name: "p"},
			"POST projects", "PUT projects/p", "DELETE projects/p", "GET projects/p"},
		{"a composite app: its version after the name",
			Document{anchor: "projects/p/composite-apps", name: "ca", spec: map[string]any{"compositeAppVersion": "v2"}},
			"POST projects/p/composite-apps", "PUT projects/p/composite-apps/ca/v2", "DELETE projects/p/composite-apps/ca/v2", "GET projects/p/composite-apps/ca/v2"},
		{"a composite app's version key in any case, or the older spec.version",
			Document{anchor: "projects/p/composite-apps", name: "ca", spec: map[string]any{"CompositeAppVersion": "v3", "version": "v1"}},
			"POST projects/p/composite-apps", "PUT projects/p/composite-apps/ca/v3", "DELETE projects/p/composite-apps/ca/v3", "GET projects/p/composite-apps/ca/v3"},
		{"a cluster label: anchor/label",
			Document{anchor: "cluster-providers/cp/clusters/c/labels", label: "edge"},
			"POST cluster-providers/cp/clusters/c/labels", "PUT cluster-providers/cp/clusters/c/labels/edge",
			"DELETE cluster-providers/cp/clusters/c/labels/edge", "GET cluster-providers/cp/clusters/c/labels/edge"},
		{"neither name nor label: the anchor itself",
			Document{anchor: "cluster-providers/cp/clusters/c/kv-pairs"},
			"POST cluster-providers/cp/clusters/c/kv-pairs", "PUT cluster-providers/cp/clusters/c/kv-pairs",
			"DELETE cluster-providers/cp/clusters/c/kv-pairs", "GET cluster-providers/cp/clusters/c/kv-pairs"},
		{"a policy intent (EMCO's 06.define_policy_intent.yaml): its anchor names it, whatever its name",
			Document{anchor: dig + "/policy-intents/migrate-on-memory-policy", name: "policy"},
			"POST " + dig + "/policy-intents/migrate-on-memory-policy", "PUT " + dig + "/policy-intents/migrate-on-memory-policy",
			"DELETE " + dig + "/policy-intents/migrate-on-memory-policy", "GET " + dig + "/policy-intents/migrate-on-memory-policy"},
		{"instantiate: deleted by terminating",
			Document{anchor: dig + "/instantiate"},
			"POST " + dig + "/instantiate", "skip", "POST " + dig + "/terminate", "skip"},
		{"an NCM apply: deleted by terminating",
			Document{anchor: "cluster-providers/cp/clusters/c/apply"},
			"POST cluster-providers/cp/clusters/c/apply", "skip", "POST cluster-providers/cp/clusters/c/terminate", "skip"},
		{"approve", Document{anchor: dig + "/approve"}, "POST " + dig + "/approve", "skip", "skip", "skip"},
		{"terminate", Document{anchor: dig + "/terminate"}, "POST " + dig + "/terminate", "skip", "skip", "skip"},
		{"update", Document{anchor: dig + "/update"}, "POST " + dig + "/update", "skip", "skip", "skip"},
		{"migrate", Document{anchor: dig + "/migrate"}, "POST " + dig + "/migrate", "skip", "skip", "skip"},
		{"rollback", Document{anchor: dig + "/rollback", spec: map[string]any{"revision": 1}}, "POST " + dig + "/rollback", "skip", "skip", "skip"},
		{"stop", Document{anchor: dig + "/stop"}, "POST " + dig + "/stop", "skip", "skip", "skip"},
		{"status: only get reads it", Document{anchor: dig + "/status"}, "POST " + dig + "/status", "skip", "skip", "GET " + dig + "/status"},
		{"status with a query is still status",
			Document{anchor: dig + "/status?status=deployed"},
			"POST " + dig + "/status?status=deployed", "skip", "skip", "GET " + dig + "/status?status=deployed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			docs := []*Document{&tc.doc}
			for _, c := range []struct {
				command, want string
				plan          func([]*Document) ([]step, error)
			}{
				{"apply", tc.apply, func(d []*Document) ([]step, error) { return planApply(d, true), nil }},
				{"update", tc.update, planUpdate},
				{"delete", tc.delete, planDelete},
				{"get", tc.get, planGet},
			} {
				steps, err := c.plan(docs)
				if err != nil {
					t.Fatalf("%s: %v", c.command, err)
				}
				if got := describe(steps); got != c.want {
					t.Errorf("%s: %s, want %s", c.command, got, c.want)
				}
			}
		})
	}
}

func TestDeletePlansInReverseOrder(t *testing.T) {
	docs := []*Document{
		{index: 1, anchor: "projects/p/logical-clouds", name: "lc"},
		{index: 2, anchor: "projects/p/logical-clouds/lc/instantiate"},
		{index: 3, anchor: "projects/p/composite-apps", name: "ca", spec: map[string]any{"compositeAppVersion": "v1"}},
		{index: 4, anchor: dig + "/approve"},
		{index: 5, anchor: dig + "/instantiate"},
	}
	steps, err := planDelete(docs)
	if err != nil {
		t.Fatal(err)
	}
	want := "POST " + dig + "/terminate, skip, DELETE projects/p/composite-apps/ca/v1, " +
		"POST projects/p/logical-clouds/lc/terminate, DELETE projects/p/logical-clouds/lc"
	if got := describe(steps); got != want {
		t.Errorf("plan: %s\nwant: %s", got, want)
	}
	if steps[0].doc.index != 5 || steps[4].doc.index != 1 {
		t.Errorf("steps keep their documents' numbers: first %d, last %d", steps[0].doc.index, steps[4].doc.index)
	}
}

func TestOperationsAreAwaitedOnlyWhereTemcoCanTell(t *testing.T) {
	cloud := "projects/p/logical-clouds/lc"
	for _, tc := range []struct {
		name   string
		steps  []step
		target string // awaited, "" for none
		until  string // the status that ends the wait well
	}{
		{"a logical cloud's instantiate, always", planApply([]*Document{{anchor: cloud + "/instantiate"}}, false), cloud, "Instantiated"},
		{"a logical cloud's update, always", planApply([]*Document{{anchor: cloud + "/update"}}, false), cloud, "Instantiated"},
		{"a logical cloud's terminate, always", planApply([]*Document{{anchor: cloud + "/terminate"}}, false), cloud, "Terminated"},
		{"a DIG's instantiate, not without --wait", planApply([]*Document{{anchor: dig + "/instantiate"}}, false), "", ""},
		{"a DIG's instantiate, with --wait", planApply([]*Document{{anchor: dig + "/instantiate"}}, true), dig, "Instantiated"},
		{"a DIG's rollback, with --wait", planApply([]*Document{{anchor: dig + "/rollback"}}, true), dig, "Instantiated"},
		{"a DIG's approve, never", planApply([]*Document{{anchor: dig + "/approve"}}, true), "", ""},
		{"a stop, never", planApply([]*Document{{anchor: cloud + "/stop"}}, true), "", ""},
		{"a resource in a cloud, never", planApply([]*Document{{anchor: cloud + "/cluster-references", name: "c"}}, true), "", ""},
		{"delete's terminate of a DIG", mustPlan(t, planDelete, &Document{anchor: dig + "/instantiate"}), dig, "Terminated"},
		{"delete's terminate of a cloud", mustPlan(t, planDelete, &Document{anchor: cloud + "/instantiate"}), cloud, "Terminated"},
		{"a cluster's networks' apply, always", planApply([]*Document{{anchor: "cluster-providers/cp/clusters/c/apply"}}, false), "cluster-providers/cp/clusters/c", "Instantiated"},
		{"delete's terminate of a cluster's networks", mustPlan(t, planDelete, &Document{anchor: "cluster-providers/cp/clusters/c/apply"}), "cluster-providers/cp/clusters/c", "Terminated"},
		{"a CA certificate intent's enrollment, always", planApply([]*Document{{anchor: "cluster-providers/cp/ca-certs/ca/enrollment/instantiate"}}, false),
			"cluster-providers/cp/ca-certs/ca/enrollment", "Instantiated"},
		{"a project's certificate distribution update, always", planApply([]*Document{{anchor: "projects/p/ca-certs/ca/distribution/update"}}, false),
			"projects/p/ca-certs/ca/distribution", "Instantiated"},
		{"delete's terminate of a certificate distribution", mustPlan(t, planDelete, &Document{anchor: "projects/p/ca-certs/ca/distribution/instantiate"}),
			"projects/p/ca-certs/ca/distribution", "Terminated"},
		{"a certificate intent's cluster group, never", planApply([]*Document{{anchor: "cluster-providers/cp/ca-certs/ca/clusters", name: "g"}}, true), "", ""},
		{"a cluster's label, never", planApply([]*Document{{anchor: "cluster-providers/cp/clusters/c/labels", label: "edge"}}, true), "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.steps[0]
			until := ""
			if len(s.want) > 0 {
				until = s.want[0]
			}
			if s.await != tc.target || until != tc.until {
				t.Errorf("awaits %q until %q, want %q until %q", s.await, until, tc.target, tc.until)
			}
		})
	}
}

func mustPlan(t *testing.T, plan func([]*Document) ([]step, error), d *Document) []step {
	t.Helper()
	steps, err := plan([]*Document{d})
	if err != nil {
		t.Fatal(err)
	}
	return steps
}

func TestACompositeAppWithoutAVersionNameCannotBeAddressed(t *testing.T) {
	for _, spec := range []map[string]any{nil, {"compositeAppVersion": 1}, {"compositeAppVersion": ""}} {
		docs := []*Document{
			{index: 1, source: "f.yaml", anchor: "projects", name: "p"},
			{index: 2, source: "f.yaml", anchor: "projects/p/composite-apps", name: "ca", spec: spec},
		}
		for name, plan := range map[string]func([]*Document) ([]step, error){"update": planUpdate, "delete": planDelete, "get": planGet} {
			if _, err := plan(docs); err == nil || !strings.Contains(err.Error(), "document 2 (f.yaml)") {
				t.Errorf("%s with spec %v: error %v, want one naming document 2", name, spec, err)
			}
		}
	}
}
