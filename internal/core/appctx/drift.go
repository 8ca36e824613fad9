// Drift checks: what each cluster showed against what the context applied, and each
// check's summary. Written by the drift check's activities, read by the DIG's status.

package appctx

import (
	"context"
	"errors"
	"slices"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"golang.org/x/sync/errgroup"

	"github.com/temco/temco/internal/core/drift"
	"github.com/temco/temco/internal/core/store"
)

// ClusterDrift is the last drift check of one cluster of a context.
type ClusterDrift struct {
	ID      string    `bson:"_id"` // <ctx>/<provider+cluster>
	Context string    `bson:"ctx"`
	Cluster string    `bson:"cluster"`
	Check   string    `bson:"check"` // the check (its workflow run) that wrote it
	Checked time.Time `bson:"checked"`
	// Skipped says why the cluster was not compared (a GitOps cluster); Error why it
	// could not be (unreachable, unregistered).
	Skipped  string        `bson:"skipped,omitempty"`
	Error    string        `bson:"error,omitempty"`
	InSync   int           `bson:"inSync"`   // objects as applied
	Requests int           `bson:"requests"` // API requests the check made on the cluster
	Objects  []DriftObject `bson:"objects,omitempty"`
	// Reported is, on an agent cluster, when its agent reported what the record shows:
	// the check read that report (PutAgentDrift), not the cluster.
	Reported *time.Time `bson:"reported,omitempty"`
}

// DriftObject is one object of a cluster that is not as the context applied it.
type DriftObject struct {
	App     string `bson:"app"`
	Ref     `bson:",inline"`
	Missing bool          `bson:"missing,omitempty"` // deleted from the cluster
	Fields  []drift.Field `bson:"fields,omitempty"`
	// Corrected: applied again (correctDrift); Error: why that failed.
	Corrected bool   `bson:"corrected,omitempty"`
	Error     string `bson:"error,omitempty"`
}

// DriftSummary is a context's last drift check as a whole.
type DriftSummary struct {
	ID        string    `bson:"_id"` // <ctx>/drift
	Context   string    `bson:"ctx"`
	Check     string    `bson:"check"`
	Started   time.Time `bson:"started"`
	Finished  time.Time `bson:"finished"`
	Correct   bool      `bson:"correct,omitempty"`
	Clusters  int       `bson:"clusters"` // checked (or tried)
	InSync    int       `bson:"inSync"`
	Drifted   int       `bson:"drifted"`   // objects not as applied, deleted ones included
	Missing   int       `bson:"missing"`   // of which deleted
	Corrected int       `bson:"corrected"` // of which applied again
	Requests  int       `bson:"requests"`  // API requests on every cluster together
	// DriftedClusters and UncheckedClusters (skipped or failed) name the clusters whose
	// records the status shows, sorted.
	DriftedClusters   []string `bson:"driftedClusters,omitempty"`
	UncheckedClusters []string `bson:"uncheckedClusters,omitempty"`
	Error             string   `bson:"error,omitempty"`
}

func driftSummaryID(ctxID string) string { return ctxID + "/drift" } // cluster keys hold a '+'

// PutClusterDrift stores the drift check of one cluster, replacing its previous one.
func (s *Store) PutClusterDrift(ctx context.Context, d *ClusterDrift) error {
	d.ID = clusterID(d.Context, d.Cluster)
	_, err := s.drift.ReplaceOne(ctx, bson.D{{Key: "_id", Value: d.ID}}, d, options.Replace().SetUpsert(true))
	return err
}

// SummarizeDrift sums the cluster records check wrote in a context into its summary,
// stores it and returns it. One read of the context's records per check (not one per
// status answer): the status reads the summary and the drifted clusters' records by _id.
func (s *Store) SummarizeDrift(ctx context.Context, sum *DriftSummary) error {
	_, err := s.SummarizeDriftAfter(ctx, sum)
	return err
}

// SummarizeDriftAfter is SummarizeDrift, answering the summary it replaced (nil: none):
// what the check found anew is what events tell.
func (s *Store) SummarizeDriftAfter(ctx context.Context, sum *DriftSummary) (*DriftSummary, error) {
	cur, err := s.drift.Find(ctx, bson.D{{Key: "ctx", Value: sum.Context}, {Key: "check", Value: sum.Check}})
	if err != nil {
		return nil, err
	}
	defer cur.Close(ctx)
	for cur.Next(ctx) {
		var d ClusterDrift
		if err := cur.Decode(&d); err != nil {
			return nil, err
		}
		if d.ID == driftSummaryID(sum.Context) {
			continue
		}
		sum.Clusters++
		sum.InSync += d.InSync
		sum.Requests += d.Requests
		if d.Skipped != "" || d.Error != "" {
			sum.UncheckedClusters = append(sum.UncheckedClusters, d.Cluster)
		}
		if len(d.Objects) > 0 {
			sum.DriftedClusters = append(sum.DriftedClusters, d.Cluster)
		}
		for _, o := range d.Objects {
			sum.Drifted++
			if o.Missing {
				sum.Missing++
			}
			if o.Corrected {
				sum.Corrected++
			}
		}
	}
	if err := cur.Err(); err != nil {
		return nil, err
	}
	slices.Sort(sum.DriftedClusters)
	slices.Sort(sum.UncheckedClusters)
	sum.ID = driftSummaryID(sum.Context)
	var prev DriftSummary
	err = s.drift.FindOneAndReplace(ctx, bson.D{{Key: "_id", Value: sum.ID}}, sum,
		options.FindOneAndReplace().SetUpsert(true).SetReturnDocument(options.Before)).Decode(&prev)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &prev, nil
}

// Drift returns the last drift check of a context (nil when none ended) and the records
// of its drifted and unchecked clusters, sorted by cluster.
func (s *Store) Drift(ctx context.Context, ctxID string) (*DriftSummary, []*ClusterDrift, error) {
	var sum DriftSummary
	err := store.FindOne(ctx, s.drift, bson.D{{Key: "_id", Value: driftSummaryID(ctxID)}}, &sum)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	clusters := slices.Compact(slices.Sorted(slices.Values(slices.Concat(sum.DriftedClusters, sum.UncheckedClusters))))
	recs := make([]*ClusterDrift, len(clusters))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for i, c := range clusters {
		g.Go(func() error {
			var d ClusterDrift
			err := store.FindOne(gctx, s.drift, bson.D{{Key: "_id", Value: clusterID(ctxID, c)}}, &d)
			if errors.Is(err, mongo.ErrNoDocuments) {
				return nil
			}
			recs[i] = &d
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, nil, err
	}
	return &sum, slices.DeleteFunc(recs, func(d *ClusterDrift) bool { return d == nil }), nil
}

// BatchClusters returns the sorted cluster keys of one batch, leaving its stored counts:
// a drift check reads the clusters, it changes no status.
func (s *Store) BatchClusters(ctx context.Context, ctxID string, batch int) ([]string, error) {
	var b batchDoc
	err := store.FindOne(ctx, s.batches, bson.D{{Key: "_id", Value: batchID(ctxID, batch)}}, &b)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return nil, nil
	}
	return b.Clusters, err
}
