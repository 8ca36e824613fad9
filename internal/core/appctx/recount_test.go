package appctx

import (
	"context"
	"testing"

	"github.com/temco/temco/internal/core/lifecycle"
)

// A batch counted, then applied and counted again, has the second count's clusters by
// state, not the first's (a read during a rollout's approval counts a batch before its
// stage applies it).
func TestABatchCountedAgainHasItsNewStates(t *testing.T) {
	for _, b := range backends {
		t.Run(b.Name, func(t *testing.T) {
			s := newStoreOn(t, b)
			ctx := context.Background()
			place(t, s)
			if err := s.Create(ctx, &Context{ID: "ctx1", DIG: "/d1", Revision: 1, Status: lifecycle.StatusInstantiating}); err != nil {
				t.Fatal(err)
			}
			if err := s.CountBatch(ctx, "ctx1", 0); err != nil { // the read: all Pending
				t.Fatal(err)
			}
			if _, err := s.StartBatch(ctx, "ctx1", 0); err != nil { // the stage's apply
				t.Fatal(err)
			}
			apply(t, s, "p+c0", lifecycle.ResApplied)
			apply(t, s, "p+c1", lifecycle.ResApplied)
			if err := s.CountBatch(ctx, "ctx1", 0); err != nil {
				t.Fatal(err)
			}
			got, err := s.Fleet(ctx, []string{"ctx1"})
			if err != nil {
				t.Fatal(err)
			}
			if f := got["ctx1"]; f.States[lifecycle.ResApplied] != 2 || f.States[lifecycle.ResPending] != 4 || len(f.States) != 2 {
				t.Errorf("clusters by state %v, want 2 Applied (batch 0) and 4 Pending", f.States)
			}
		})
	}
}
