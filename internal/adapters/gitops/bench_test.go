package gitops

import (
	"context"
	"fmt"
	"testing"
)

// BenchmarkCommit commits one deployment's change (30 files of one cluster) to a
// repository already holding deployments on 1000 clusters, through a real git server:
// the cost of one GitOps cluster's apply before Flux, which must not grow with the
// repository (only the directories a change touches are rebuilt).
func BenchmarkCommit(b *testing.B) {
	ctx := context.Background()
	_, r := server(b)
	w := &Writer{Dir: b.TempDir()}
	seed := Change{Message: "seed", Files: map[string][]byte{}}
	for c := range 1000 {
		for f := range 10 {
			p := fmt.Sprintf("clusters/p+c%d/context/1/app/web/o%d+ConfigMap.yaml", c, f)
			seed.Files[p] = []byte(p)
		}
	}
	if _, err := w.Commit(ctx, r, seed); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		dir := fmt.Sprintf("clusters/p+c%d/context/2/", i%1000)
		c := Change{Replace: []string{dir}, Message: "bench", Files: map[string][]byte{}}
		for f := range 30 {
			c.Files[fmt.Sprintf("%sapp/web/o%d+ConfigMap.yaml", dir, f)] = fmt.Appendf(nil, "revision %d object %d", i, f)
		}
		res, err := w.Commit(ctx, r, c)
		if err != nil || !res.Changed {
			b.Fatalf("commit %d: %v (changed %v)", i, err, res.Changed)
		}
	}
}
