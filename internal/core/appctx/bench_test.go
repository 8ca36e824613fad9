package appctx

import (
	"context"
	"fmt"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/temco/temco/internal/core/lifecycle"
)

// BenchmarkSaveClusterStatuses times what a cluster activity writes of one cluster (three
// apps of ten objects): its statuses, claim included, and the bare update it was before
// the claim, on each backend. An apply at 10,000 clusters makes one such write per cluster
// (two for a slow one), each of its own document.
func BenchmarkSaveClusterStatuses(b *testing.B) {
	for _, be := range backends {
		s := newStoreOn(b, be)
		ctx := context.Background()
		var placed []*ClusterApp
		for _, app := range []string{"a", "b", "c"} {
			ca := &ClusterApp{App: app, Cluster: "p+c0"}
			for i := range 10 {
				ca.Resources = append(ca.Resources, ResourceStatus{Ref: Ref{Kind: "ConfigMap", Name: fmt.Sprint("cm", i)}, Status: lifecycle.ResPending})
			}
			placed = append(placed, ca)
		}
		if err := s.PutPlacement(ctx, "ctx1", placed, map[string]int{"p+c0": 0}); err != nil {
			b.Fatal(err)
		}
		cas, err := s.PlacedApps(ctx, "ctx1", "p+c0")
		if err != nil {
			b.Fatal(err)
		}
		b.Run(be.Name+"/apply", func(b *testing.B) {
			for b.Loop() {
				if err := s.SaveStatuses(ctx, "ctx1", Attempt{Activity: "run/apply p+c0", Number: 1}, cas); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(be.Name+"/bare-update", func(b *testing.B) {
			model := mongo.NewUpdateOneModel().SetFilter(bson.D{{Key: "_id", Value: clusterID("ctx1", "p+c0")}}).
				SetUpdate(bson.D{{Key: "$set", Value: bson.D{{Key: "apps", Value: cas}}}})
			for b.Loop() {
				if _, err := s.clusters.BulkWrite(ctx, []mongo.WriteModel{model}, options.BulkWrite().SetOrdered(false)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
