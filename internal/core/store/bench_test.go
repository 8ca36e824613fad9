package store

import (
	"context"
	"testing"
)

// BenchmarkSetState times one state write (what an operation's begin and finish each do),
// claim included, on each backend.
func BenchmarkSetState(b *testing.B) {
	for _, be := range backends {
		b.Run(be.Name, func(b *testing.B) {
			s := newStoreOn(b, be)
			ctx := context.Background()
			if err := s.Create(ctx, doc("/p", "")); err != nil {
				b.Fatal(err)
			}
			d, err := s.Get(ctx, "/p")
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				if err := s.SetState(ctx, d); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
