package blobs_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/temco/temco/internal/core/artifact"
	"github.com/temco/temco/internal/core/artifact/blobs"
	"github.com/temco/temco/internal/dev/devstack"
	"github.com/temco/temco/internal/dev/testenv"
)

var ferret *devstack.FerretDB

func TestMain(m *testing.M) { testenv.MainWithFerretDB(m, &ferret) }

func database(t *testing.T) *mongo.Database {
	t.Helper()
	client, err := mongo.Connect(options.Client().ApplyURI(ferret.URI()))
	if err != nil {
		t.Fatal(err)
	}
	db := client.Database("artifact_" + t.Name())
	t.Cleanup(func() {
		_ = db.Drop(context.Background())
		_ = client.Disconnect(context.Background())
	})
	return db
}

// The same bytes are stored once, found by their digest or an alias, and collected only
// when no revision refers to them and none used them lately.
func TestArtifactsAreStoredOnceAndCollectedWhenUnused(t *testing.T) {
	ctx := context.Background()
	db := database(t)
	s := blobs.NewStore(db)
	kept, err := s.Put(ctx, []byte("kept chart"), "")
	if err != nil {
		t.Fatal(err)
	}
	manifest := artifact.Digest([]byte("an OCI manifest"))
	unused, err := s.Put(ctx, []byte("unused chart"), manifest)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := s.Put(ctx, []byte("unused chart"), ""); err != nil || again != unused {
		t.Fatalf("stored again as %s, %v", again, err)
	}
	if n, _ := db.Collection("artifacts").CountDocuments(ctx, bson.D{}); n != 2 {
		t.Fatalf("%d documents for two charts", n)
	}
	if blob, size, ok, err := s.Find(ctx, manifest); err != nil || !ok || blob != unused || size != int64(len("unused chart")) {
		t.Fatalf("found by alias: %s %d %v %v", blob, size, ok, err)
	}
	refers := func(_ context.Context, d string) (bool, error) { return d == kept, nil }

	// Just used: spared.
	if n, err := s.Collect(ctx, time.Now().Add(-time.Minute), refers); err != nil || n != 0 {
		t.Fatalf("collected %d, %v; want none used within the grace", n, err)
	}
	if n, err := s.Collect(ctx, time.Now().Add(time.Minute), refers); err != nil || n != 1 {
		t.Fatalf("collected %d, %v; want the unreferenced one", n, err)
	}
	if _, err := s.Get(ctx, unused); !errors.Is(err, blobs.ErrNotStored) {
		t.Errorf("the unreferenced chart: %v, want it gone", err)
	}
	if data, err := s.Get(ctx, kept); err != nil || string(data) != "kept chart" {
		t.Errorf("the referenced chart: %q, %v", data, err)
	}
}

// One fetcher claims a digest; the others are told to wait until its claim goes stale.
func TestOneFetchClaimsADigest(t *testing.T) {
	ctx := context.Background()
	db := database(t)
	s := blobs.NewStore(db)
	d := artifact.Digest([]byte("x"))
	renew, release, err := s.Claim(ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Claim(ctx, d); !errors.Is(err, blobs.ErrFetching) {
		t.Fatalf("a second claim: %v, want ErrFetching", err)
	}
	renew(ctx)
	// A claim a dead fetcher left is taken over once stale.
	if _, err := db.Collection("artifacts").UpdateOne(ctx, bson.D{{Key: "_id", Value: "fetching/" + d}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "at", Value: time.Now().Add(-2 * time.Minute)}}}}); err != nil {
		t.Fatal(err)
	}
	_, release2, err := s.Claim(ctx, d)
	if err != nil {
		t.Fatalf("a stale claim was not taken over: %v", err)
	}
	release2()
	release()
	if _, release3, err := s.Claim(ctx, d); err != nil {
		t.Fatalf("after release: %v", err)
	} else {
		release3()
	}
}
