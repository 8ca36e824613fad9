package lifecycle

import (
	"strings"
	"testing"
)

// Every kind is whole, its routes name targets of itself, and a target is of exactly the
// kind whose fields it sets (DIGs when it sets none of the others').
func TestEveryKindIsWhole(t *testing.T) {
	names := map[string]bool{}
	for _, k := range Kinds {
		if k.Name == "" || names[k.Name] || k.Machine == nil || k.id == nil || k.workflowID == nil || k.name == nil || k.attrs == nil || len(k.Routes) == 0 {
			t.Fatalf("kind %q is missing a part or is listed twice", k.Name)
		}
		names[k.Name] = true
		for _, r := range k.Routes {
			param := func(p string) string { // as echo answers: "" for what the path lacks
				if strings.Contains(r.Path+"/", "/:"+p+"/") {
					return "x" + p
				}
				return ""
			}
			target := r.Target(param)
			if target.Kind() != k {
				t.Errorf("%s: route %s names a target of kind %s", k.Name, r.Path, target.Kind().Name)
			}
			if !strings.HasPrefix(target.WorkflowID(), k.Name+"/") {
				t.Errorf("%s: workflow id %s", k.Name, target.WorkflowID())
			}
			// The store _id is the route's path with its parameters filled in (EMCO's).
			if want := fillRoute(r.Path, param); target.ID() != want && k != ClusterNetworks {
				t.Errorf("%s: id %s, want %s", k.Name, target.ID(), want)
			}
			for _, e := range r.Endpoints {
				if e.Op != "" && e.Op != OpStop && !k.Machine.Has(e.Op) {
					t.Errorf("%s: %s/%s starts %s, which its machine does not have", k.Name, r.Path, e.Segment, e.Op)
				}
			}
		}
		if (k.Prepare == nil) != (k == DIGs) {
			t.Errorf("%s: only DIGs are prepared by rendering, placement and controllers", k.Name)
		}
	}
	if (Target{Project: "p", CompositeApp: "ca", Version: "v", DIG: "d"}).Kind() != DIGs || (Target{}).Kind() != DIGs {
		t.Error("a target that sets no other kind's fields is a DIG")
	}
}

func fillRoute(path string, param func(string) string) string {
	segs := strings.Split(path, "/")
	for i, s := range segs {
		if p, ok := strings.CutPrefix(s, ":"); ok {
			segs[i] = param(p)
		}
	}
	return strings.Join(segs, "/")
}

// A logical cloud's and a certificate's enrolment replace the per-cluster activities; a
// certificate's distribution only its apply; DIGs and networks keep the usual ones.
func TestPerClusterActivities(t *testing.T) {
	enrol := Target{Project: "p", CACert: "c", CertStage: CertEnrollment}
	for _, c := range []struct {
		t     Target
		batch string
		want  Activity[ClusterInput, ClusterResult]
	}{
		{Target{Project: "p", LogicalCloud: "lc"}, WorkflowDeleteBatch, TearDownLogicalCloud},
		{enrol, WorkflowApplyBatch, EnrollCertificates},
		{enrol.Stage(CertDistribution), WorkflowApplyBatch, DistributeCertificates},
		{enrol.Stage(CertDistribution), WorkflowDeleteBatch, Activity[ClusterInput, ClusterResult]{}},
		{enrol, WorkflowReadBatch, Activity[ClusterInput, ClusterResult]{}},
	} {
		if got := c.t.Kind().PerCluster(c.t, c.batch); got != c.want {
			t.Errorf("%s, %s: %q, want %q", c.t, c.batch, got.Name(), c.want.Name())
		}
	}
	if DIGs.PerCluster != nil || ClusterNetworks.PerCluster != nil {
		t.Error("DIGs and clusters' networks use the usual per-cluster activities")
	}
}

func TestDIGOfID(t *testing.T) {
	d := Target{Project: "p", CompositeApp: "ca", Version: "v1", DIG: "d"}
	for id, want := range map[string]Target{d.ID(): d, d.ID() + "/policy-intents/x": d, "/projects/p/logical-clouds/lc": {}, "/cluster-providers/a/clusters/b/c/d/e": {}} {
		if got := DIGOfID(id); got != want {
			t.Errorf("%s: %+v, want %+v", id, got, want)
		}
	}
}
