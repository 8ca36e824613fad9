package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/temco/temco/internal/core/lifecycle"
)

// configSnapshot is an entry of GET DIG/snapshots.
type configSnapshot struct {
	ID        string `json:"id"`
	Operation string `json:"operation"`
	Revisions []struct {
		Revision  int64  `json:"revision"`
		ContextID string `json:"contextId"`
	} `json:"revisions"`
}

// configSnapshots lists the DIG's snapshots, newest first, as "id:[revisions]" too.
func (d *deployment) configSnapshots() ([]configSnapshot, []string) {
	d.t.Helper()
	list := getAs[[]configSnapshot](d.t, d.c, d.dig()+"/snapshots")
	var short []string
	for _, s := range list {
		var revs []int64
		for _, r := range s.Revisions {
			revs = append(revs, r.Revision)
		}
		short = append(short, fmt.Sprintf("%s:%v", s.ID, revs))
	}
	return list, short
}

// The worker records each revision's configuration where it begins the operation: an
// instantiate and an update around a move of an app's placement leave two snapshots whose
// diff (over REST and with temco diff) names the moved cluster; a rollback naming the
// first snapshot returns to revision 1's objects as revision 3, recorded on that snapshot.
func TestSnapshotsRecordEachRevisionAndRollBackByName(t *testing.T) {
	d := newDeployment(t, app{name: "web", chart: webChart("web"), placement: clusterNamed("cluster1")})
	d.create()
	first := d.operate(lifecycle.OpInstantiate)
	d.await("Instantiated", 2*time.Minute, "", func(s status) bool {
		return s.Instance == first.ContextID && s.Status == lifecycle.StatusInstantiated
	})
	list, short := d.configSnapshots()
	if len(list) != 1 || !strings.HasSuffix(short[0], ":[1]") || list[0].Operation != lifecycle.OpInstantiate ||
		list[0].Revisions[0].ContextID != first.ContextID {
		t.Fatalf("snapshots after the instantiate: %s", pretty(list))
	}
	a := list[0].ID

	placement := d.dig() + "/generic-placement-intents/gpi/app-intents/web-placement"
	d.c.do("PUT", placement, res("web-placement", map[string]any{"app": "web", "intent": clusterNamed("cluster2")})).must(t, 200)
	d.update("update", nil)
	list, short = d.configSnapshots()
	if len(list) != 2 || list[1].ID != a || !strings.HasSuffix(short[0], ":[2]") {
		t.Fatalf("snapshots after the update: %v, want a new one of revision 2, then %s", short, a)
	}
	b := list[0].ID

	var diff struct {
		From, To string
		Changes  []struct{ Resource, Path, Op, From, To string }
	}
	d.c.do("GET", d.dig()+"/snapshots/"+a+"/diff/"+b, nil).must(t, 200).json(t, &diff)
	want := fmt.Sprintf("[{%s spec.intent.allOf[0].cluster changed cluster1 cluster2}]", placement)
	if got := fmt.Sprint(diff.Changes); diff.From != a || diff.To != b || got != want {
		t.Errorf("diff %s → %s: %s\nwant %s", diff.From, diff.To, got, want)
	}
	out, err := temco(t, t.TempDir(), "diff", d.dig(), a) // against the newest, b
	if err != nil || !strings.Contains(out, a+" → "+b+": 1 change") ||
		!strings.Contains(out, placement+"\n  ~ spec.intent.allOf[0].cluster: \"cluster1\" → \"cluster2\"") {
		t.Errorf("temco diff %s: %v\n%s", a, err, out)
	}

	var back lifecycle.OpAccepted
	d.c.do("POST", d.dig()+"/rollback", map[string]any{"spec": map[string]any{"snapshot": a}}).must(t, 202).json(t, &back)
	d.await("the rollback", 2*time.Minute, "", func(s status) bool {
		return s.Instance == back.ContextID && s.Status == lifecycle.StatusInstantiated
	})
	if back.Revision != 3 {
		t.Errorf("the rollback to snapshot %s answered revision %d, want 3", a, back.Revision)
	}
	if got := keys(snapshot(t, first.ContextID, "web")); !slices.Equal(got, []string{"cluster1/ConfigMap/web-config", "cluster1/Deployment/web", "cluster1/Service/web"}) {
		t.Errorf("objects after the rollback to snapshot %s: %v, want web on cluster1 again", a, got)
	}
	if _, short = d.configSnapshots(); len(short) != 2 || short[0] != a+":[1 3]" || short[1] != b+":[2]" {
		t.Errorf("snapshots after the rollback: %v, want revision 3 on %s, listed first", short, a)
	}
	d.c.do("GET", d.dig()+"/snapshots/0123456789abcdef", nil).must(t, 404)
}
