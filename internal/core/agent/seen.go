package agent

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"hash/fnv"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/temco/temco/internal/core/store"
)

// When each agent last called is kept in seenShards documents of the collection
// "agent_seen", each a map of the agents that hash to it. An api writes the calls it saw
// every few seconds, one update per shard whatever the number of agents: per agent and
// call, that would be a write for every poll of tens of thousands of agents.
//
// Two apis updating one shard at once may lose the other's entries on a store that runs
// an update as a read and a write (FerretDB 1.x); each api writes every agent that called
// it again at its next flush, so a lost entry is late by one flush, never lost for good.
const seenShards = 64

func seenShard(key string) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(key))
	return fmt.Sprintf("seen-%02d", h.Sum32()%seenShards)
}

// seenField is key's field in its shard: base64url, so that no cluster name makes a
// dotted path or an operator of it.
func seenField(key string) string { return base64.RawURLEncoding.EncodeToString([]byte(key)) }

type seenDoc struct {
	At map[string]time.Time `bson:"at"`
}

// SaveSeen records the last call of each agent in calls (by cluster key).
func (s *Store) SaveSeen(ctx context.Context, calls map[string]time.Time) error {
	byShard := map[string]bson.D{}
	for key, t := range calls {
		sh := seenShard(key)
		byShard[sh] = append(byShard[sh], bson.E{Key: "at." + seenField(key), Value: t.UTC()})
	}
	var first error
	for sh, set := range byShard {
		if _, err := s.seen.UpdateOne(ctx, bson.D{{Key: "_id", Value: sh}}, bson.D{{Key: "$set", Value: set}},
			options.UpdateOne().SetUpsert(true)); err != nil && first == nil {
			first = fmt.Errorf("record agents' calls: %w", err)
		}
	}
	return first
}

// LastSeen is when cluster key's agent last called (nil: never, as far as is known).
func (s *Store) LastSeen(ctx context.Context, key string) (*time.Time, error) {
	var d seenDoc
	err := store.FindOne(ctx, s.seen, bson.D{{Key: "_id", Value: seenShard(key)}}, &d)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if t, ok := d.At[seenField(key)]; ok {
		t = t.UTC()
		return &t, nil
	}
	return nil, nil
}
