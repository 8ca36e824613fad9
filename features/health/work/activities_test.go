package work

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/temco/temco/internal/core/model"
	"github.com/temco/temco/internal/core/store"
	"github.com/temco/temco/internal/dev/devstack"
	"github.com/temco/temco/internal/dev/testenv"
)

var ferret *devstack.FerretDB

func TestMain(m *testing.M) { testenv.MainWithFerretDB(m, &ferret) }

// Pages walk every provider's clusters in key order, across providers, whatever the page
// size: a round probes each cluster once.
func TestPagesCoverEveryClusterOnceInKeyOrder(t *testing.T) {
	ctx := context.Background()
	st, err := store.New(ctx, testenv.Database(t, ferret, strings.ToLower(t.Name())))
	if err != nil {
		t.Fatal(err)
	}
	clusters := map[string][]string{"a": {"c1", "c2", "c3"}, "a-b": {"x"}, "b": {}, "c": {"c1", "z"}}
	for p, cs := range clusters {
		pid := "/cluster-providers/" + p
		if err := st.Create(ctx, &store.Doc{ID: pid, Kind: model.KindClusterProvider, Name: p, Body: `{"metadata":{"name":"` + p + `"}}`}); err != nil {
			t.Fatal(err)
		}
		for _, c := range cs {
			if err := st.Create(ctx, &store.Doc{ID: pid + "/clusters/" + c, Parent: pid, Scope: pid, Kind: model.KindCluster, Name: c,
				Body: `{"metadata":{"name":"` + c + `"}}`, Secret: []byte("sealed kubeconfig")}); err != nil {
				t.Fatal(err)
			}
		}
	}
	want := []string{"a+c1", "a+c2", "a+c3", "a-b+x", "c+c1", "c+z"}
	a := &Activities{Store: st}
	for _, size := range []int{1, 2, 4, 100} {
		var got []string
		for after := ""; ; {
			page, docs, err := a.page(ctx, after, size)
			if err != nil {
				t.Fatal(err)
			}
			for i, d := range docs {
				if p, c, _ := strings.Cut(page[i], "+"); d.ID != "/cluster-providers/"+p+"/clusters/"+c || string(d.Secret) != "sealed kubeconfig" {
					t.Fatalf("the page's key %s comes with document %s, its kubeconfig %q", page[i], d.ID, d.Secret)
				}
			}
			if len(page) > size {
				t.Fatalf("size %d: a page of %d", size, len(page))
			}
			if len(page) == 0 {
				break
			}
			got = append(got, page...)
			after = page[len(page)-1]
		}
		if !slices.Equal(got, want) || !slices.IsSorted(got) {
			t.Errorf("pages of %d: %v, want %v", size, got, want)
		}
	}
}
