// Agents' drift reports: temco agent compares the objects a revision applied on its
// cluster with the live ones, as a drift check does (features/drift/detect), and the api
// keeps its last report here for the drift checks to read (features/drift/work): temco
// reads no agent cluster.
//
// They are kept in the drift checks' collection, each under an _id of its own beside the
// check's record of the same cluster: deleted with their context as the checks' records
// are (DeleteContext, by ctx), and never a document both the api and a worker write
// (FerretDB runs an update as a read and a write). Their Check is AgentDriftCheck, which
// no check's workflow id is, so a check's summary (SummarizeDrift, by check) never counts
// a report: only the check's record made from it.

package appctx

import (
	"context"
	"errors"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/temco/temco/internal/core/store"
)

// AgentDriftCheck is the Check of an agent's drift report.
const AgentDriftCheck = "agent"

// agentDriftID is the _id of cluster's agent's report for ctxID: a cluster key is never
// "agent" (it holds a '+'), so it is no check's record of another context.
func agentDriftID(ctxID, cluster string) string { return clusterID(ctxID, cluster) + "/agent" }

// PutAgentDrift stores what d.Cluster's agent reported of context d.Context (Checked:
// when), replacing its previous report.
func (s *Store) PutAgentDrift(ctx context.Context, d *ClusterDrift) error {
	d.ID, d.Check = agentDriftID(d.Context, d.Cluster), AgentDriftCheck
	_, err := s.drift.ReplaceOne(ctx, bson.D{{Key: "_id", Value: d.ID}}, d, options.Replace().SetUpsert(true))
	return err
}

// AgentDrift returns cluster's agent's last drift report of context ctxID (nil: none).
func (s *Store) AgentDrift(ctx context.Context, ctxID, cluster string) (*ClusterDrift, error) {
	var d ClusterDrift
	err := store.FindOne(ctx, s.drift, bson.D{{Key: "_id", Value: agentDriftID(ctxID, cluster)}}, &d)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &d, nil
}
