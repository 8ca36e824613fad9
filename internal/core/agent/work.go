package agent

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/store"
)

// Item is the state one deployment (a DIG's instance, or a logical cloud's set-up) should
// have on one agent cluster: a level, not a queue of steps. Each operation publishes its
// revision over the previous one, so an agent that was offline across an update and a
// rollback applies only the newest. The worker writes items; what the agent did is a
// Report, a document of its own, so that neither writer can overwrite the other's fields
// on a store that runs an update as a read and a write (FerretDB 1.x).
type Item struct {
	ID       string `bson:"_id" json:"id"` // cluster + " " + instance
	Cluster  string `bson:"cluster" json:"cluster"`
	Instance string `bson:"instance" json:"instance"`
	// Context is the revision to hold; Remove, when set, the revision whose objects go
	// (terminate: Context is then "").
	Context string `bson:"context,omitempty" json:"context,omitempty"`
	Remove  string `bson:"remove,omitempty" json:"remove,omitempty"`
	// Previous is the revision the apply follows: its objects applied with the same
	// content are left alone, those it no longer has are deleted after the apply.
	Previous string `bson:"previous,omitempty" json:"previous,omitempty"`
	// Gen orders publications: a report answers the gen it worked on.
	Gen int64 `bson:"gen" json:"gen"`
	// Writer is the attempt of the activity that published, as which the agent's
	// statuses are saved (appctx.Store.SaveStatuses).
	Writer    appctx.Attempt `bson:"writer" json:"-"`
	Published time.Time      `bson:"published" json:"published"`
	// Tick is the second of Published (Unix, in decimal): the apis find what was published
	// lately by it (Changes), with a query the store answers from an index.
	Tick string `bson:"tick" json:"-"`
	// Token is the sealed task token of the activity waiting for this gen (AwaitAgent),
	// TokenGen the gen it waits for.
	Token    []byte `bson:"token,omitempty" json:"-"`
	TokenGen int64  `bson:"tokenGen,omitempty" json:"-"`
	// Skipped is when the operation went on without the cluster, its agent offline
	// (rollout.OfflineSkip): reads of the cluster then count nothing until it reports.
	Skipped *time.Time `bson:"skipped,omitempty" json:"-"`
}

// Revision is what an agent is given of one context on its cluster: the context's header,
// its apps as placed there (appctx.ForCluster, each with its objects for the cluster) and
// their placements with the statuses (appctx.List).
type Revision struct {
	Header     *appctx.Context        `json:"header"`
	Apps       map[string]*appctx.App `json:"apps"`
	Placements []*appctx.ClusterApp   `json:"placements"`
}

// ItemID names the item of instance on cluster.
func ItemID(cluster, instance string) string { return cluster + " " + instance }

// Report is what an agent last finished of an item. It is a document of its own beside
// the items, in their collection (reportID), so that one read by cluster finds both.
type Report struct {
	ID      string                  `bson:"_id" json:"-"`
	Cluster string                  `bson:"cluster" json:"-"`
	Of      string                  `bson:"of" json:"-"` // the item's id: only reports have it
	Gen     int64                   `bson:"gen" json:"gen"`
	Result  lifecycle.ClusterResult `bson:"result" json:"result"`
	Error   string                  `bson:"error,omitempty" json:"error,omitempty"`
	// Applied is the revision the cluster holds after it ("": none).
	Applied  string    `bson:"applied,omitempty" json:"applied,omitempty"`
	Reported time.Time `bson:"reported" json:"reported"`
}

// reportID is the _id of the report on item id.
func reportID(id string) string { return id + " report" }

// Items are the items published to cluster.
func (s *Store) Items(ctx context.Context, cluster string) ([]Item, error) {
	items, _, err := s.Work(ctx, cluster)
	return items, err
}

// Publish stores it as the state its instance should have on its cluster, with a new gen
// (returned), replacing what an earlier operation published there.
func (s *Store) Publish(ctx context.Context, it Item) (int64, error) {
	it.ID, it.Published = ItemID(it.Cluster, it.Instance), s.now()
	it.Gen, it.Token, it.TokenGen, it.Tick = it.Published.UnixNano(), nil, 0, tick(it.Published)
	if _, err := s.work.ReplaceOne(ctx, bson.D{{Key: "_id", Value: it.ID}}, it, options.Replace().SetUpsert(true)); err != nil {
		return 0, fmt.Errorf("publish to agent cluster %q: %w", it.Cluster, err)
	}
	// A write that took longer than the apis look back may have landed after they looked
	// at its tick: stamped again, it is seen at the next.
	for stamped := it.Published; s.now().Sub(stamped) > ChangesLag/2; {
		stamped = s.now()
		if _, err := s.work.UpdateOne(ctx, bson.D{{Key: "_id", Value: it.ID}, {Key: "gen", Value: it.Gen}},
			bson.D{{Key: "$set", Value: bson.D{{Key: "tick", Value: tick(stamped)}}}}); err != nil {
			return 0, fmt.Errorf("publish to agent cluster %q: %w", it.Cluster, err)
		}
	}
	return it.Gen, nil
}

// ChangesLag is how far back the apis look for publications (Changes) each second.
const ChangesLag = 4 * time.Second

// Work is what is published to cluster and what its agent reported: one read.
func (s *Store) Work(ctx context.Context, cluster string) ([]Item, []Report, error) {
	cur, err := s.work.Find(ctx, bson.D{{Key: "cluster", Value: cluster}})
	if err != nil {
		return nil, nil, err
	}
	var docs []bson.Raw
	if err := cur.All(ctx, &docs); err != nil {
		return nil, nil, err
	}
	var items []Item
	var reports []Report
	for _, d := range docs {
		if _, err := d.LookupErr("voided"); err == nil {
			continue
		}
		if _, err := d.LookupErr("of"); err == nil {
			var r Report
			if err := bson.Unmarshal(d, &r); err != nil {
				return nil, nil, err
			}
			r.ID = r.Of
			reports = append(reports, r)
			continue
		}
		var it Item
		if err := bson.Unmarshal(d, &it); err != nil {
			return nil, nil, err
		}
		items = append(items, it)
	}
	return items, reports, nil
}

// Item is one item, nil when none was published.
func (s *Store) Item(ctx context.Context, id string) (*Item, error) {
	var it Item
	if err := store.FindOne(ctx, s.work, bson.D{{Key: "_id", Value: id}}, &it); err != nil {
		if errors.Is(err, mongo.ErrNoDocuments) {
			return nil, nil
		}
		return nil, err
	}
	return &it, nil
}

// Wait records that the activity with (sealed) token waits for gen of item id; false
// when the item was published again since (another operation waits for it now).
func (s *Store) Wait(ctx context.Context, id string, gen int64, token []byte) (bool, error) {
	res, err := s.work.UpdateOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "gen", Value: gen}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "token", Value: token}, {Key: "tokenGen", Value: gen}}}})
	if err != nil {
		return false, err
	}
	return res.MatchedCount == 1, nil
}

// Skip records that the operation waiting for gen of item id went on without its
// cluster, whose agent has been offline since (Item.Skipped).
func (s *Store) Skip(ctx context.Context, id string, gen int64, since time.Time) error {
	_, err := s.work.UpdateOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "gen", Value: gen}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "skipped", Value: since}}}})
	return err
}

// Reported is the agent's last report on item id (nil: none).
func (s *Store) Reported(ctx context.Context, id string) (*Report, error) {
	var r Report
	if err := store.FindOne(ctx, s.work, bson.D{{Key: "_id", Value: reportID(id)}}, &r); err != nil {
		if errors.Is(err, mongo.ErrNoDocuments) {
			return nil, nil
		}
		return nil, err
	}
	r.ID = id
	return &r, nil
}

// SaveReport stores the agent's report on item id; it returns the item as stored after,
// so that the caller completes the activity waiting for it (Token, TokenGen).
func (s *Store) SaveReport(ctx context.Context, id string, r Report) (*Item, error) {
	r.ID, r.Of, r.Reported = reportID(id), id, s.now()
	if _, err := s.work.ReplaceOne(ctx, bson.D{{Key: "_id", Value: r.ID}}, r, options.Replace().SetUpsert(true)); err != nil {
		return nil, fmt.Errorf("store an agent's report: %w", err)
	}
	return s.Item(ctx, id)
}

// Forget drops item id and its report once its instance has nothing left on the cluster.
func (s *Store) Forget(ctx context.Context, id string, gen int64) error {
	if _, err := s.work.DeleteOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "gen", Value: gen}}); err != nil {
		return err
	}
	_, err := s.work.DeleteOne(ctx, bson.D{{Key: "_id", Value: reportID(id)}, {Key: "gen", Value: gen}})
	return err
}

// tick names the second of t, as Item.Tick.
func tick(t time.Time) string { return strconv.FormatInt(t.Unix(), 10) }

// Change is an item published, or an agent's credential voided, at a Tick.
type Change struct {
	Cluster string
	Item    string // "" for a credential voided
	Gen     int64
}

// Changes is what was published to agent clusters in the second of t, and whose
// credentials were voided then: one query, whatever the number of agents.
func (s *Store) Changes(ctx context.Context, t time.Time) ([]Change, error) {
	cur, err := s.work.Find(ctx, bson.D{{Key: "tick", Value: tick(t)}},
		options.Find().SetProjection(bson.D{{Key: "cluster", Value: 1}, {Key: "gen", Value: 1}, {Key: "voided", Value: 1}}))
	if err != nil {
		return nil, err
	}
	var docs []struct {
		ID      string `bson:"_id"`
		Cluster string `bson:"cluster"`
		Gen     int64  `bson:"gen"`
		Voided  bool   `bson:"voided"`
	}
	if err := cur.All(ctx, &docs); err != nil {
		return nil, err
	}
	out := make([]Change, 0, len(docs))
	for _, d := range docs {
		c := Change{Cluster: d.Cluster, Item: d.ID, Gen: d.Gen}
		if d.Voided {
			c.Item = ""
		}
		out = append(out, c)
	}
	return out, nil
}

// Void records that cluster key's credential is void from now (revoked, or replaced by
// a join): the apis that cache it forget it when they read the changes.
func (s *Store) Void(ctx context.Context, key string) error {
	now := s.now()
	_, err := s.work.ReplaceOne(ctx, bson.D{{Key: "_id", Value: key + " voided"}},
		bson.D{{Key: "_id", Value: key + " voided"}, {Key: "cluster", Value: key}, {Key: "voided", Value: true},
			{Key: "gen", Value: now.UnixNano()}, {Key: "tick", Value: tick(now)}}, options.Replace().SetUpsert(true))
	return err
}
