package health

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/temco/temco/internal/dev/devstack"
	"github.com/temco/temco/internal/dev/testenv"
)

var ferret *devstack.FerretDB

func TestMain(m *testing.M) { testenv.MainWithFerretDB(m, &ferret) }

// A round writes what changed only: a cluster found as before keeps when it was found so;
// one whose state or error changed gets the new time; clusters no longer registered are
// forgotten in the range probed; checked is the start of the last completed round.
func TestSaveKeepsWhatDidNotChange(t *testing.T) {
	ctx := context.Background()
	s := Open(testenv.Database(t, ferret, strings.ToLower(t.Name())))
	t0 := time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)
	t1 := t0.Add(time.Minute)
	if err := s.Save(ctx, []Cluster{{Key: "cp+a", State: Reachable, Since: t0}, {Key: "cp+b", State: Unreachable, Error: "refused", Since: t0},
		{Key: "cp+c", State: GitOps, Since: t0}, {Key: "cp+d", State: Reachable, Since: t0}}, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Round(ctx, t0); err != nil {
		t.Fatal(err)
	}
	// The next round: b is back, a as before, c became unreachable, d was deleted; the
	// changes raised are b's and c's state, with what they were and since when.
	var changes []string
	if err := s.Save(ctx, []Cluster{{Key: "cp+a", State: Reachable, Since: t1}, {Key: "cp+b", State: Reachable, Since: t1},
		{Key: "cp+c", State: Unreachable, Error: "timeout", Since: t1}}, func(cs []Change) error {
		for _, c := range cs {
			changes = append(changes, c.Key+" "+c.From+"->"+c.State+" since "+c.FromSince.Format(time.Kitchen))
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"cp+b Unreachable->Reachable since 8:00AM", "cp+c GitOps->Unreachable since 8:00AM"}; !slices.Equal(changes, want) {
		t.Errorf("changes raised %q, want %q", changes, want)
	}
	if err := s.Forget(ctx, "", "cp+c", []string{"cp+a", "cp+b", "cp+c"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Forget(ctx, "cp+c", "", nil); err != nil { // the round's last page: none after c
		t.Fatal(err)
	}
	got, err := s.Of(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Cluster{
		"cp+a": {Key: "cp+a", State: Reachable, Since: t0, Checked: t0},
		"cp+b": {Key: "cp+b", State: Reachable, Since: t1, Checked: t0},
		"cp+c": {Key: "cp+c", State: Unreachable, Error: "timeout", Since: t1, Checked: t0},
	}
	if len(got) != len(want) {
		t.Fatalf("clusters %v, want %v", got, want)
	}
	for k, w := range want {
		if g := got[k]; g.State != w.State || g.Error != w.Error || !g.Since.Equal(w.Since) || !g.Checked.Equal(w.Checked) {
			t.Errorf("%s: %+v, want %+v", k, g, w)
		}
	}
	if err := s.Round(ctx, t1); err != nil {
		t.Fatal(err)
	}
	counts, err := s.Counts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if counts[Reachable] != 2 || counts[Unreachable] != 1 || len(counts) != 2 {
		t.Errorf("counts %v, want 2 Reachable, 1 Unreachable", counts)
	}
	one, err := s.Of(ctx, []string{"cp+b", "cp+z"})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := one["cp+z"]; len(one) != 1 || ok || one["cp+b"].State != Reachable || !one["cp+b"].Checked.Equal(t1) {
		t.Errorf("of cp+b and cp+z (never probed): %v", one)
	}
}
