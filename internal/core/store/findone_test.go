package store

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/event"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// FerretDB 1.x may answer a find whose maxTimeMS expires just after its query ran with an
// empty batch, not an error (findone.go): a resource that exists would read as absent,
// one way an instantiate could call a registered controller not registered (issue 64).
// So no lookup of the store asks the server for a time limit, whatever its context's
// deadline: Get, Exists, Ownership, a create's checks of its parent and references and of
// a taken _id, a delete waiting for a pending child, a writer waiting for a claim.
func TestLookupsAskTheServerForNoTimeLimit(t *testing.T) {
	for _, b := range backends {
		t.Run(b.Name, func(t *testing.T) {
			var mu sync.Mutex
			finds, limited := 0, []string{}
			monitor := &event.CommandMonitor{Started: func(_ context.Context, e *event.CommandStartedEvent) {
				if e.CommandName != "find" {
					return
				}
				mu.Lock()
				defer mu.Unlock()
				finds++
				if _, err := e.Command.LookupErr("maxTimeMS"); err == nil {
					limited = append(limited, e.Command.Lookup("filter").String())
				}
			}}
			s := monitoredStore(t, b.URI(), monitor)
			s.claimWait = 50 * time.Millisecond
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()

			if err := s.Create(ctx, doc("/p", "")); err != nil {
				t.Fatal(err)
			}
			if err := s.Create(ctx, doc("/p/c", "/p", "/p")); err != nil {
				t.Fatal(err)
			}
			wantCode(t, s.Create(ctx, doc("/p/c", "/p")), ErrExists)
			if _, err := s.Get(ctx, "/p/c"); err != nil {
				t.Fatal(err)
			}
			if ok, err := s.Exists(ctx, "/p"); !ok || err != nil {
				t.Fatalf("Exists: %v, %v", ok, err)
			}
			if _, err := s.Ownership(ctx, "/p/c"); err != nil {
				t.Fatal(err)
			}
			if err := s.Create(ctx, doc("/q", "")); err != nil {
				t.Fatal(err)
			}
			now := s.now()
			if _, err := s.coll.InsertOne(ctx, &Doc{ID: "/q/pending", Parent: "/q", Kind: "k", PendingSince: &now}); err != nil {
				t.Fatal(err)
			}
			wantCode(t, s.Delete(ctx, "/q"), ErrBusy) // waits for its pending child
			if _, err := s.claims.InsertOne(ctx, claimDoc{ID: "held", Key: "/p/c", At: s.now()}); err != nil {
				t.Fatal(err)
			}
			wantCode(t, s.Delete(ctx, "/p/c"), ErrBusy) // waits for the claim

			mu.Lock()
			defer mu.Unlock()
			if len(limited) > 0 {
				t.Errorf("%d of %d finds asked the server for a time limit: %v", len(limited), finds, limited)
			}
		})
	}
}

// monitoredStore is a store in a fresh database whose client reports its commands to
// monitor, with the timeout the store's Open sets.
func monitoredStore(t *testing.T, uri string, monitor *event.CommandMonitor) *Store {
	t.Helper()
	client, err := mongo.Connect(options.Client().ApplyURI(uri).SetTimeout(30 * time.Second).SetMonitor(monitor))
	if err != nil {
		t.Fatal(err)
	}
	db := client.Database(fmt.Sprintf("store%d", dbSeq.Add(1)))
	t.Cleanup(func() {
		_ = db.Drop(context.Background())
		_ = client.Disconnect(context.Background())
	})
	s, err := New(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A lookup tells a document that is not there from one whose create has not committed.
func TestNotFoundSaysWhetherTheDocumentIsPending(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	now := s.now().Truncate(time.Millisecond)
	if _, err := s.coll.InsertOne(ctx, &Doc{ID: "/pending", Kind: "k", PendingSince: &now}); err != nil {
		t.Fatal(err)
	}
	_, err := s.Get(ctx, "/pending")
	wantCode(t, err, ErrNotFound)
	if since, ok := PendingSince(err); !ok || !since.Equal(now) {
		t.Errorf("PendingSince(%v) = %v, %v; want %v, true", err, since, ok, now)
	}
	_, err = s.Get(ctx, "/absent")
	wantCode(t, err, ErrNotFound)
	if _, ok := PendingSince(err); ok {
		t.Errorf("an absent document reads as pending: %v", err)
	}
	if ok, err := s.Exists(ctx, "/pending"); ok || err != nil {
		t.Errorf("Exists of a pending document: %v, %v", ok, err)
	}
}
