package cacerts

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/temco/temco/internal/core/seal"
	"github.com/temco/temco/internal/core/store"
)

// Keys keeps, per enrolment context and member cluster, the private key temco generated
// (sealed, bound to its record) and, once signed, the certificate and the issuing CA. Its
// own collection: no resource body, list answer, context or workflow payload holds a key.
type Keys struct {
	db      *store.Store
	keys    *seal.Keyring
	indexed sync.Once
}

// Enrolled is what an enrolment holds for one member cluster, without its key.
type Enrolled struct {
	ID          string    `bson:"_id"` // <context>/<provider+cluster>
	Context     string    `bson:"ctx"`
	Cluster     string    `bson:"cluster"` // provider+cluster
	Request     string    `bson:"request"` // the name of its request on the issuing cluster
	Issuer      IssuerRef `bson:"issuer"`  // what signs it (none in records of before: the cluster's signer)
	Certificate []byte    `bson:"certificate,omitempty"`
	CA          []byte    `bson:"ca,omitempty"`
	Sealed      []byte    `bson:"sealed"`
	Created     time.Time `bson:"created"`
}

// NewKeys keeps the keys in the store's database, sealed with keys.
func NewKeys(st *store.Store, keys *seal.Keyring) *Keys { return &Keys{db: st, keys: keys} }

// coll is the collection, indexed by context on first use.
func (k *Keys) coll(ctx context.Context) *mongo.Collection {
	c := k.db.Database().Collection("cacertKeys")
	k.indexed.Do(func() {
		_ = store.EnsureIndexes(ctx, c, []store.Index{store.Index(bson.D{{Key: "ctx", Value: 1}})}) // an index only speeds lookups up
	})
	return c
}

func enrolledID(ctxID, cluster string) string { return ctxID + "/" + cluster }

// ErrNoKey means the enrolment holds nothing for that cluster.
var ErrNoKey = errors.New("no key enrolled")

// Put stores a new key of a member cluster, the name of its request and the issuer asked
// to sign it; a key already there is kept (a retried enrolment step must sign what it
// first generated), and its record returned.
func (k *Keys) Put(ctx context.Context, ctxID, cluster, request string, issuer IssuerRef, keyPEM []byte) (*Enrolled, error) {
	id := enrolledID(ctxID, cluster)
	if e, err := k.Get(ctx, ctxID, cluster); err == nil {
		return e, nil
	} else if !errors.Is(err, ErrNoKey) {
		return nil, err
	}
	sealed, err := k.keys.Seal(keyPEM, []byte(id))
	if err != nil {
		return nil, err
	}
	e := &Enrolled{ID: id, Context: ctxID, Cluster: cluster, Request: request, Issuer: issuer, Sealed: sealed, Created: time.Now().UTC()}
	_, err = k.coll(ctx).InsertOne(ctx, e)
	if mongo.IsDuplicateKeyError(err) {
		return k.Get(ctx, ctxID, cluster)
	}
	return e, err
}

// Get reads what the enrolment holds for a cluster.
func (k *Keys) Get(ctx context.Context, ctxID, cluster string) (*Enrolled, error) {
	var e Enrolled
	err := store.FindOne(ctx, k.coll(ctx), bson.D{{Key: "_id", Value: enrolledID(ctxID, cluster)}}, &e)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return nil, ErrNoKey
	}
	return &e, err
}

// Key opens a record's private key (PEM).
func (k *Keys) Key(e *Enrolled) ([]byte, error) { return k.keys.Open(e.Sealed, []byte(e.ID)) }

// List reads an enrolment's records, by cluster.
func (k *Keys) List(ctx context.Context, ctxID string) ([]*Enrolled, error) {
	cur, err := k.coll(ctx).Find(ctx, bson.D{{Key: "ctx", Value: ctxID}}, options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}))
	if err != nil {
		return nil, err
	}
	var out []*Enrolled
	return out, cur.All(ctx, &out)
}

// Signed records the certificate issued for a cluster's key, and the CA that issued it.
func (k *Keys) Signed(ctx context.Context, ctxID, cluster string, cert, ca []byte) error {
	_, err := k.coll(ctx).UpdateOne(ctx, bson.D{{Key: "_id", Value: enrolledID(ctxID, cluster)}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "certificate", Value: cert}, {Key: "ca", Value: ca}}}})
	return err
}

// DeleteContext forgets every key of an enrolment context.
func (k *Keys) DeleteContext(ctx context.Context, ctxID string) error {
	_, err := k.coll(ctx).DeleteMany(ctx, bson.D{{Key: "ctx", Value: ctxID}})
	return err
}
