package store

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// FindOne decodes the first document of coll matching filter into out, or answers
// mongo.ErrNoDocuments: Collection.FindOne without a server-side time limit. Every
// lookup of temco's collections goes through it (contexts, snapshots, artifacts, probes,
// credentials and the controllers' records included), never the driver's FindOne.
//
// The driver sends FindOne's context deadline (or the client's timeout) as maxTimeMS.
// When that limit expires just as FerretDB 1.x has run the query, it may close the
// cursor before reading the first batch and answer that batch empty with ok: 1: a
// document that exists reads as absent (5 of 32,000 finds by _id sent with a 1-3 ms
// maxTimeMS, on PostgreSQL). The driver's own deadline, a round trip later, mostly ends
// the wait first, but a read cut short must never be absence. Find sends no maxTimeMS for
// a cursor, so nothing cuts the lookup short on the server; the context still bounds it
// here, as an error.
func FindOne(ctx context.Context, coll *mongo.Collection, filter, out any, opts ...options.Lister[options.FindOptions]) error {
	cur, err := coll.Find(ctx, filter, append(opts, options.Find().SetLimit(-1))...)
	if err != nil {
		return err
	}
	defer cur.Close(context.WithoutCancel(ctx))
	if !cur.Next(ctx) {
		if err := cur.Err(); err != nil {
			return err
		}
		return mongo.ErrNoDocuments
	}
	return cur.Decode(out)
}
