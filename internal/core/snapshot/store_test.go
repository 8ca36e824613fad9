package snapshot

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/temco/temco/internal/core/store"
	"github.com/temco/temco/internal/dev/devstack"
	"github.com/temco/temco/internal/dev/testenv"
)

var ferret *devstack.FerretDB

func TestMain(m *testing.M) { testenv.MainWithFerretDB(m, &ferret) }

const (
	project = "/projects/p"
	ca      = project + "/composite-apps/ca/v1"
	dig     = ca + "/deployment-intent-groups/dig1"
	gpi     = dig + "/generic-placement-intents/gpi"
	cloud   = project + "/logical-clouds/lc"
)

// The secrets the store holds beside resources: none may reach a snapshot.
const (
	chartBytes   = "chart-archive-bytes"
	sealedBytes  = "sealed-template-SECRET-manifest"
	cloudSecret  = "issued-key-SECRET"
	profileBytes = "profile-archive-bytes"
)

func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// configured stores a project with a composite app, a DIG and everything it refers to,
// plus what it does not: another DIG, another composite profile, another cloud's
// references.
func configured(t *testing.T) (*store.Store, *Store) {
	t.Helper()
	db := testenv.Database(t, ferret, strings.ToLower(t.Name()))
	st, err := store.New(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	body := func(name, spec string) string {
		return fmt.Sprintf(`{"metadata":{"name":%q,"description":"","userData1":"","userData2":""},"spec":%s}`, name, spec)
	}
	for _, d := range []*store.Doc{
		{ID: project, Kind: "project", Body: body("p", `{}`)},
		{ID: ca, Kind: "compositeApp", Body: body("ca", `{"compositeAppVersion":"v1"}`)},
		{ID: ca + "/apps/web", Kind: "app", Body: body("web", `{}`), Blob: []byte(chartBytes)},
		{ID: ca + "/apps/web/dependency/db", Kind: "appDependency", Body: body("db", `{"app":"db","opStatus":"Ready"}`)},
		{ID: ca + "/composite-profiles/prof", Kind: "compositeProfile", Body: body("prof", `{}`)},
		{ID: ca + "/composite-profiles/prof/profiles/webp", Kind: "appProfile", Body: body("webp", `{"app":"web"}`), Blob: []byte(profileBytes)},
		{ID: ca + "/composite-profiles/other", Kind: "compositeProfile", Body: body("other", `{}`)},
		{ID: cloud, Kind: "logicalCloud", Body: body("lc", `{"level":"0"}`), Secret: []byte(cloudSecret), State: `{"Actions":[]}`},
		{ID: cloud + "/cluster-references/c1", Kind: "clusterReference", Body: body("c1", `{"clusterProvider":"cp","cluster":"c1"}`)},
		{ID: project + "/logical-clouds/lc2", Kind: "logicalCloud", Body: body("lc2", `{"level":"0"}`)},
		{ID: project + "/logical-clouds/lc2/cluster-references/c9", Kind: "clusterReference", Body: body("c9", `{"clusterProvider":"cp","cluster":"c9"}`)},
		{ID: dig, Kind: "deploymentIntentGroup", Body: body("dig1", `{"compositeProfile":"prof","version":"r1","logicalCloud":"lc"}`),
			State: `{"Actions":[{"State":"Approved"}]}`},
		{ID: gpi, Kind: "genericPlacementIntent", Body: body("gpi", `{}`)},
		{ID: gpi + "/app-intents/web", Kind: "appPlacementIntent", Body: body("web", `{"app":"web","intent":{"allOf":[{"clusterProvider":"cp","clusterLabel":"edge"}]}}`)},
		{ID: dig + "/generic-k8s-intents/gk", Kind: "genericK8sIntent", Body: body("gk", `{}`)},
		{ID: dig + "/generic-k8s-intents/gk/resources/cm", Kind: "genericK8sResource", Body: body("cm", `{"app":"web"}`), Secret: []byte(sealedBytes)},
		{ID: ca + "/deployment-intent-groups/dig10", Kind: "deploymentIntentGroup", Body: body("dig10", `{"compositeProfile":"other","version":"r1","logicalCloud":"lc2"}`)},
		{ID: ca + "/deployment-intent-groups/dig10/generic-placement-intents/g10", Kind: "genericPlacementIntent", Body: body("g10", `{}`)},
	} {
		d.Parent, d.Scope, d.Name = path.Dir(path.Dir(d.ID)), project, path.Base(d.ID) // the resource owning its collection
		switch d.ID {
		case project:
			d.Parent = ""
		case ca:
			d.Parent = project
		}
		if err := st.Create(context.Background(), d); err != nil {
			t.Fatalf("create %s: %v", d.ID, err)
		}
	}
	return st, Open(db)
}

// A snapshot holds the DIG, everything below it, its composite app's apps, its
// composite profile and its logical cloud with their children, and nothing else; blobs
// and sealed data as digests only, never their bytes.
func TestBuildTakesTheDIGsWholeConfigurationAndNoSecret(t *testing.T) {
	st, _ := configured(t)
	doc, err := Build(context.Background(), st, dig)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for id := range doc.Resources {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	want := []string{
		ca, ca + "/apps/web", ca + "/apps/web/dependency/db",
		ca + "/composite-profiles/prof", ca + "/composite-profiles/prof/profiles/webp",
		dig, dig + "/generic-k8s-intents/gk", dig + "/generic-k8s-intents/gk/resources/cm",
		gpi, gpi + "/app-intents/web",
		cloud, cloud + "/cluster-references/c1",
	}
	slices.Sort(want)
	if !slices.Equal(ids, want) {
		t.Errorf("resources\n%s\nwant\n%s", strings.Join(ids, "\n"), strings.Join(want, "\n"))
	}
	if r := doc.Resources[ca+"/apps/web"]; r.Blob != sha(chartBytes) || r.Kind != "app" {
		t.Errorf("the app's chart: %+v, want its digest %s", r, sha(chartBytes))
	}
	if r := doc.Resources[ca+"/composite-profiles/prof/profiles/webp"]; r.Blob != sha(profileBytes) {
		t.Errorf("the profile's archive: %+v, want its digest", r)
	}
	if r := doc.Resources[dig+"/generic-k8s-intents/gk/resources/cm"]; r.Sealed != sha(sealedBytes) || r.Blob != "" {
		t.Errorf("sealed data: %+v, want the digest of its sealed bytes", r)
	}
	data, err := Canonical(doc)
	if err != nil {
		t.Fatal(err)
	}
	for _, leak := range []string{chartBytes, sealedBytes, cloudSecret, profileBytes, "SECRET", "Actions", "Approved"} {
		if strings.Contains(string(data), leak) {
			t.Errorf("the snapshot holds %q:\n%s", leak, data)
		}
	}
	if !strings.Contains(string(data), `"clusterLabel":"edge"`) {
		t.Errorf("the snapshot lacks the app intent's spec:\n%s", data)
	}
}

func revision(n int64, ctx, op string) Revision {
	return Revision{Revision: n, ContextID: ctx, Operation: op, Time: time.Now().UTC().Truncate(time.Millisecond)}
}

// An unchanged configuration keeps its snapshot (and collects the revisions); a change
// makes a new one; a rollback's revision goes to the snapshot of the revision it copies;
// a retried record changes nothing; the list is newest first by newest revision.
func TestTakeIsContentAddressed(t *testing.T) {
	ctx := context.Background()
	st, snaps := configured(t)
	take := func(rev Revision, source string) string {
		t.Helper()
		id, err := snaps.Take(ctx, st, dig, rev, source)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	first := take(revision(1, "ctx1", "instantiate"), "")
	if again := take(revision(2, "ctx2", "update"), ""); again != first {
		t.Errorf("an update of an unchanged configuration recorded snapshot %s, want %s", again, first)
	}
	d, err := st.Get(ctx, gpi+"/app-intents/web")
	if err != nil {
		t.Fatal(err)
	}
	d.Body = strings.Replace(d.Body, `"edge"`, `"core"`, 1)
	if err := st.Update(ctx, d); err != nil {
		t.Fatal(err)
	}
	second := take(revision(3, "ctx3", "update"), "")
	if second == first {
		t.Fatalf("a changed app intent kept snapshot %s", first)
	}
	if retried := take(revision(3, "ctx3", "update"), ""); retried != second {
		t.Errorf("a retried record answered %s, want %s", retried, second)
	}
	if back := take(revision(4, "ctx4", "rollback"), "ctx2"); back != first {
		t.Errorf("a rollback to revision 2 recorded snapshot %s, want revision 2's %s", back, first)
	}
	if none := take(revision(5, "ctx5", "rollback"), "before-snapshots"); none != "" {
		t.Errorf("a rollback to a revision without snapshot recorded %s", none)
	}

	list, err := snaps.List(ctx, dig)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].ID != first || list[1].ID != second {
		t.Fatalf("list %+v, want %s (its newest revision is 4) then %s", list, first, second)
	}
	var revs [][]int64
	for _, s := range list {
		var r []int64
		for _, x := range s.Revisions {
			r = append(r, x.Revision)
		}
		revs = append(revs, r)
	}
	if fmt.Sprint(revs) != "[[1 2 4] [3]]" || list[0].Operation != "instantiate" || list[1].Operation != "update" {
		t.Errorf("revisions %v, operations %s and %s: want [[1 2 4] [3]], instantiate and update", revs, list[0].Operation, list[1].Operation)
	}

	a, err := snaps.Get(ctx, dig, first)
	if err != nil {
		t.Fatal(err)
	}
	b, err := snaps.Get(ctx, dig, second)
	if err != nil {
		t.Fatal(err)
	}
	if IDOf([]byte(a.Document)) != first {
		t.Errorf("the stored document's digest is %s, not its id %s", IDOf([]byte(a.Document)), first)
	}
	da, _ := Parse([]byte(a.Document))
	db, _ := Parse([]byte(b.Document))
	want := []Change{{Resource: gpi + "/app-intents/web", Path: "spec.intent.allOf[0].clusterLabel", Op: Changed, From: "edge", To: "core"}}
	if got := Diff(da, db); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("diff %+v, want %+v", got, want)
	}

	if _, err := snaps.Get(ctx, dig, "0000000000000000"); err != ErrNotFound {
		t.Errorf("an unknown id: %v, want ErrNotFound", err)
	}
	if _, err := snaps.Get(ctx, ca+"/deployment-intent-groups/dig10", first); err != ErrNotFound {
		t.Errorf("another DIG's snapshot: %v, want ErrNotFound", err)
	}
	if err := snaps.DeleteDIG(ctx, dig); err != nil {
		t.Fatal(err)
	}
	if list, err := snaps.List(ctx, dig); err != nil || len(list) != 0 {
		t.Errorf("after DeleteDIG: %+v, %v", list, err)
	}
}
