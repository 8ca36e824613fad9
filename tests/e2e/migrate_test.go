package e2e

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/dev/testenv"
)

// version adds version v of d's composite app, with its apps (each with a profile whose
// message names the version) and DIG dig, placed on cluster1, and approves the DIG.
func (d *deployment) version(v, dig string, apps map[string][]byte) string {
	t, c := d.t, d.c
	t.Helper()
	ca := "/projects/" + d.project + "/composite-apps/ca/" + v
	c.do("POST", "/projects/"+d.project+"/composite-apps", res("ca", map[string]any{"compositeAppVersion": v})).must(t, 201)
	c.do("POST", ca+"/composite-profiles", res("prof", nil)).must(t, 201)
	digPath := ca + "/deployment-intent-groups/" + dig
	c.do("POST", ca+"/deployment-intent-groups", res(dig, map[string]any{
		"compositeProfile": "prof", "version": "r1", "logicalCloud": d.logicalCloud})).must(t, 201)
	c.do("POST", digPath+"/generic-placement-intents", res("gpi", nil)).must(t, 201)
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for k := range apps {
			if !yield(k) {
				return
			}
		}
	}) {
		c.multipart("POST", ca+"/apps", res(name, nil), apps[name]).must(t, 201)
		c.multipart("POST", ca+"/composite-profiles/prof/profiles", res(name+"-profile", map[string]any{"app": name}),
			testenv.Profile("message: from-"+name+"-profile-"+v+"\n")).must(t, 201)
		c.do("POST", digPath+"/generic-placement-intents/gpi/app-intents", res(name+"-placement",
			map[string]any{"app": name, "intent": clusterNamed("cluster1")})).must(t, 201)
	}
	c.do("POST", digPath+"/intents", res("intents", map[string]any{"intent": map[string]string{"genericPlacementIntent": "gpi"}})).must(t, 201)
	c.do("POST", digPath+"/approve", nil).must(t, 202)
	return digPath
}

// statusOf reads the status of the DIG at path.
func (d *deployment) statusOf(path string) status {
	d.t.Helper()
	var s status
	d.c.do("GET", path+"/status", nil).must(d.t, 200).json(d.t, &s)
	return s
}

// awaitStatus polls the DIG at path until cond holds.
func (d *deployment) awaitStatus(path, what string, cond func(status) bool) status {
	d.t.Helper()
	return awaitValue(d.t, path+": "+what, 2*time.Minute, func() status { return d.statusOf(path) }, cond)
}

func migrateTo(version, dig string) map[string]any {
	return map[string]any{"metadata": map[string]any{"description": "to " + version},
		"spec": map[string]any{"targetCompositeAppVersion": version, "targetDeploymentIntentGroup": dig}}
}

// A migrate moves the running objects of v1's DIG to v2's: an object v2 changes is
// updated in place, one it no longer has is deleted, one it adds is created; the origin
// ends Migrated, the target Instantiated, with the origin's instance. A migrate whose
// target the apiserver rejects is rolled back: what it changed is restored, what it added
// deleted, the origin keeps running; the target is Approved again with the reason.
func TestMigrateMovesTheDeploymentAndRollsBackAFailure(t *testing.T) {
	d := newDeployment(t,
		app{name: "web", chart: webChart("web"), placement: clusterNamed("cluster1")},
		app{name: "api", chart: webChart("api"), placement: clusterNamed("cluster1")},
	)
	d.create()
	inst := d.operate(lifecycle.OpInstantiate).ContextID
	d.await("Instantiated", 2*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusInstantiated })
	all := []string{"web", "api", "extra", "bad"}
	before := snapshot(t, inst, all...)

	// v2: web's message changes, api is gone, extra is new.
	v2 := d.version("v2", "dig2", map[string][]byte{"web": webChart("web"), "extra": webChart("extra")})
	d.c.do("POST", d.dig()+"/migrate", map[string]any{"spec": map[string]any{"targetCompositeAppVersion": "v2"}}).must(t, 400)
	d.c.do("POST", d.dig()+"/migrate", migrateTo("v2", "nope")).must(t, 404)
	var acc lifecycle.OpAccepted
	d.c.do("POST", d.dig()+"/migrate", migrateTo("v2", "dig2")).must(t, 202).json(t, &acc)
	target := lifecycle.Target{Project: d.project, CompositeApp: "ca", Version: "v2", DIG: "dig2"}
	if acc.Op != lifecycle.OpMigrate || acc.WorkflowID != target.OpWorkflowID(lifecycle.OpMigrate, acc.ContextID) {
		t.Fatalf("accepted %+v", acc)
	}
	s2 := d.awaitStatus(v2, "Instantiated", func(s status) bool {
		return s.Instance == acc.ContextID && s.Status == lifecycle.StatusInstantiated
	})
	if s2.state() != lifecycle.StateInstantiated || s2.RsyncStatus[lifecycle.ResApplied] != 6 {
		t.Errorf("target after the migrate: state %s, rsync %v", s2.state(), s2.RsyncStatus)
	}
	s1 := d.status("")
	if s1.state() != lifecycle.StateMigrated || s1.Status != lifecycle.StatusUpdated {
		t.Errorf("origin after the migrate: state %s, status %s", s1.state(), s1.Status)
	}
	after := snapshot(t, inst, all...)
	if got := changedKeys(before, after); !slices.Equal(got, []string{
		"cluster1/ConfigMap/api-config", "cluster1/ConfigMap/extra-config", "cluster1/ConfigMap/web-config",
		"cluster1/Deployment/api", "cluster1/Deployment/extra", "cluster1/Service/api", "cluster1/Service/extra"}) {
		t.Fatalf("objects the migrate changed: %v", got)
	}
	if !strings.Contains(after["cluster1/ConfigMap/web-config"], "from-web-profile-v2") {
		t.Errorf("web-config after the migrate: %s", after["cluster1/ConfigMap/web-config"])
	}
	for _, k := range []string{"cluster1/ConfigMap/api-config", "cluster1/Deployment/api", "cluster1/Service/api"} {
		if _, ok := after[k]; ok {
			t.Errorf("%s survived the migrate", k)
		}
	}
	if _, ok := after["cluster1/Deployment/extra"]; !ok {
		t.Error("extra's Deployment was not created")
	}
	recordHistory(t, acc.WorkflowID, "Migrate-moves-the-deployment")
	recordHistory(t, d.ref().WorkflowID(), "DIGLifecycle-held-by-a-migrate")
	if ids := runsOf(t, "project = '"+d.project+"' AND dig = 'dig2' AND operation = 'migrate'"); !slices.Contains(ids, acc.WorkflowID) {
		t.Errorf("workflows with the target's search attributes and operation migrate: %v, want %s", ids, acc.WorkflowID)
	}
	// Nothing else runs on either DIG now that it is over, and the origin has nothing left.
	d.c.do("POST", d.dig()+"/terminate", nil).must(t, 409)
	d.c.do("POST", d.dig()+"/migrate", migrateTo("v2", "dig2")).must(t, 409)

	// v3: web changes again and bad has an object the apiserver rejects.
	bad := testenv.Chart("bad", "", map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bad-ok\ndata: {a: b}\n" +
		"---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: Not_A_Valid_Name\ndata: {a: b}\n"})
	v3 := d.version("v3", "dig3", map[string][]byte{"web": webChart("web"), "bad": bad})
	var failed lifecycle.OpAccepted
	d.c.do("POST", v2+"/migrate", migrateTo("v3", "dig3")).must(t, 202).json(t, &failed)
	s3 := d.awaitStatus(v3, "rolled back", func(s status) bool {
		return s.Instance == failed.ContextID && s.Status == lifecycle.StatusInstantiateFailed
	})
	if s3.state() != lifecycle.StateApproved || !strings.Contains(s3.Error, "1 resources failed to apply; rolled back") {
		t.Errorf("target of the failed migrate: state %s, error %q", s3.state(), s3.Error)
	}
	recordHistory(t, failed.WorkflowID, "Migrate-rolled-back")
	s2 = d.statusOf(v2)
	if s2.state() != lifecycle.StateInstantiated || s2.Instance != acc.ContextID || s2.Status != lifecycle.StatusInstantiated ||
		s2.RsyncStatus[lifecycle.ResApplied] != 6 {
		t.Errorf("origin of the failed migrate: state %s, instance %s, status %s, rsync %v", s2.state(), s2.Instance, s2.Status, s2.RsyncStatus)
	}
	restored := snapshot(t, inst, all...)
	if !slices.Equal(keys(restored), keys(after)) {
		t.Fatalf("objects after the rollback: %v, want %v", keys(restored), keys(after))
	}
	for k, v := range after { // the same objects (uid), untouched but for web-config, which has its data back
		if restored[k] != v && (!strings.HasSuffix(k, "/web-config") || cut(restored[k]) != cut(v)) {
			t.Errorf("%s after the rollback: %s, was %s", k, restored[k], v)
		}
	}
	// The target may be migrated into again; the origin may be updated again.
	d.c.do("POST", v2+"/update", nil).must(t, 202)
	d.awaitStatus(v2, "updated", func(s status) bool { return s.Status == lifecycle.StatusInstantiated && s.Instance != acc.ContextID })
	recordHistory(t, target.WorkflowID(), "DIGLifecycle-migrated-into-then-held")
}
