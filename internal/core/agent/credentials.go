// Package agent keeps what temco knows of its agent clusters, the clusters a `temco agent`
// running inside them reaches temco from (docs/agent.md): their join tokens and
// credentials, when each agent last called, and the work published to each.
//
// Nothing here holds a secret in clear: a token is 32 random bytes, stored as its SHA-256
// (a guess of 256 bits cannot be checked offline, so no slow hash is needed) and shown
// once, when issued. A token names its cluster in clear so that checking it is one read.
package agent

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/temco/temco/internal/core/store"
)

// Token prefixes: a join token is exchanged once for a credential, which the agent sends
// with every call.
const (
	JoinPrefix       = "temco-join."
	CredentialPrefix = "temco-agent."
)

// JoinTTL is how long an unused join token is valid: long enough to ship it to a site,
// short enough that one left in a ticket or a chat expires.
const JoinTTL = 7 * 24 * time.Hour

// ErrInvalid: the token is not one temco issued for a registered agent cluster (or it was
// revoked, rotated, used or expired). Its message says which without revealing a secret.
var ErrInvalid = errors.New("invalid agent token")

// Store is the collections "agents" (one document per agent cluster: its tokens'
// hashes), "agent_work" (work.go) and "agent_seen" (seen.go) of the resource store's
// database.
type Store struct {
	agents, work, seen *mongo.Collection
	now                func() time.Time
}

// Open returns the agents kept in db (it reads nothing).
func Open(db *mongo.Database) *Store {
	return &Store{agents: db.Collection("agents"), work: db.Collection("agent_work"), seen: db.Collection("agent_seen"), now: func() time.Time { return time.Now().UTC() }}
}

// SetNow replaces the clock that dates what the store writes (tests).
func (s *Store) SetNow(now func() time.Time) { s.now = now }

// EnsureIndexes creates the indexes the work's reads by cluster and by tick (Changes) use.
func (s *Store) EnsureIndexes(ctx context.Context) error {
	return store.EnsureIndexes(ctx, s.work, []store.Index{store.Index(bson.D{{Key: "cluster", Value: 1}}), store.Index(bson.D{{Key: "tick", Value: 1}})})
}

// record is one agent cluster's document.
type record struct {
	Key string `bson:"_id"` // provider+cluster
	// Incarnation is the cluster registration's creation time: a cluster deleted and
	// registered again under the same name is another, and its predecessor's tokens open
	// nothing.
	Incarnation string     `bson:"incarnation"`
	Join        *hashed    `bson:"join,omitempty"`
	Credential  *hashed    `bson:"credential,omitempty"`
	Revoked     *time.Time `bson:"revoked,omitempty"`
	// Seen is when it joined (its calls since are in "agent_seen": seen.go), or its last
	// call as recorded before those were.
	Seen *time.Time `bson:"seen,omitempty"`
}

type hashed struct {
	Hash    string    `bson:"hash"`
	Issued  time.Time `bson:"issued"`
	Expires time.Time `bson:"expires,omitzero"`
}

// Status is what an agent cluster's GET shows of its agent.
type Status struct {
	// State is "waiting for join" (a join token is out), "joined", "offline" (joined,
	// with no call for OfflineAfter: LastSeen says since when), "revoked" or "no token".
	State      string     `json:"state"`
	JoinIssued *time.Time `json:"joinTokenIssued,omitempty"`
	JoinExpiry *time.Time `json:"joinTokenExpires,omitempty"`
	Joined     *time.Time `json:"joined,omitempty"`
	Revoked    *time.Time `json:"revoked,omitempty"`
	LastSeen   *time.Time `json:"lastSeen,omitempty"`
}

// States of Status.
const (
	StateNoToken = "no token"
	StateWaiting = "waiting for join"
	StateJoined  = "joined"
	StateOffline = "offline" // joined, but its agent has not called for OfflineAfter
	StateRevoked = "revoked"
)

// OfflineAfter is how long an agent may go without calling before its state is offline:
// two long polls missed (an api records the calls it holds every few seconds).
const OfflineAfter = time.Minute

// IssueJoin makes a new join token for cluster key (incarnation: its registration's); a
// join token issued before and not used is void. The agent's credential, if it joined,
// stays valid until the new token is used: that is how a credential is rotated.
func (s *Store) IssueJoin(ctx context.Context, key, incarnation string) (string, error) {
	token, hash, err := newToken(JoinPrefix, key)
	if err != nil {
		return "", err
	}
	now := s.now()
	set := bson.D{{Key: "incarnation", Value: incarnation}, {Key: "join", Value: hashed{Hash: hash, Issued: now, Expires: now.Add(JoinTTL)}}}
	update := bson.D{{Key: "$set", Value: set}, {Key: "$unset", Value: bson.D{{Key: "revoked", Value: ""}}}}
	// A record of an earlier incarnation keeps nothing.
	if _, err := s.agents.DeleteOne(ctx, bson.D{{Key: "_id", Value: key}, {Key: "incarnation", Value: bson.D{{Key: "$ne", Value: incarnation}}}}); err != nil {
		return "", fmt.Errorf("issue a join token: %w", err)
	}
	if _, err := s.agents.UpdateOne(ctx, bson.D{{Key: "_id", Value: key}}, update, options.UpdateOne().SetUpsert(true)); err != nil {
		return "", fmt.Errorf("issue a join token: %w", err)
	}
	return token, nil
}

// Join exchanges a join token for the agent's credential (shown once); the token is used
// up, and a credential issued before it is void. incarnation returns the current
// registration of the token's cluster ("" when it is not registered, or not in agent mode).
func (s *Store) Join(ctx context.Context, token string, incarnation func(key string) (string, error)) (key, credential string, err error) {
	key, r, err := s.check(ctx, JoinPrefix, token, incarnation, func(r *record) *hashed { return r.Join })
	if err != nil {
		return "", "", err
	}
	if s.now().After(r.Join.Expires) {
		return "", "", fmt.Errorf("%w: the join token expired at %s: issue another", ErrInvalid, r.Join.Expires.Format(time.RFC3339))
	}
	credential, hash, err := newToken(CredentialPrefix, key)
	if err != nil {
		return "", "", err
	}
	// Conditional on the token still being there: of two joins with it, one wins.
	res, err := s.agents.UpdateOne(ctx, bson.D{{Key: "_id", Value: key}, {Key: "join.hash", Value: r.Join.Hash}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "credential", Value: hashed{Hash: hash, Issued: s.now()}}, {Key: "seen", Value: s.now()}}},
			{Key: "$unset", Value: bson.D{{Key: "join", Value: ""}}}})
	if err != nil {
		return "", "", fmt.Errorf("join: %w", err)
	}
	if res.ModifiedCount == 0 {
		return "", "", fmt.Errorf("%w: the join token was used already", ErrInvalid)
	}
	if r.Credential != nil { // rotated: the credential before is void
		if err := s.Void(ctx, key); err != nil {
			return "", "", fmt.Errorf("join: %w", err)
		}
	}
	return key, credential, nil
}

// Authenticate returns the cluster an agent's credential belongs to.
func (s *Store) Authenticate(ctx context.Context, credential string, incarnation func(key string) (string, error)) (string, error) {
	key, _, err := s.check(ctx, CredentialPrefix, credential, incarnation, func(r *record) *hashed { return r.Credential })
	return key, err
}

// check finds the record of the cluster token names and compares token with the hash
// which() picks from it.
func (s *Store) check(ctx context.Context, prefix, token string, incarnation func(string) (string, error), which func(*record) *hashed) (string, *record, error) {
	key, secret, ok := parseToken(prefix, token)
	if !ok {
		return "", nil, fmt.Errorf("%w: not a %s<cluster>.<secret> token", ErrInvalid, prefix)
	}
	var r record
	if err := store.FindOne(ctx, s.agents, bson.D{{Key: "_id", Value: key}}, &r); err != nil {
		if errors.Is(err, mongo.ErrNoDocuments) {
			return "", nil, fmt.Errorf("%w: no token was issued for cluster %q", ErrInvalid, key)
		}
		return "", nil, err
	}
	if r.Revoked != nil {
		return "", nil, fmt.Errorf("%w: cluster %q's agent tokens were revoked at %s", ErrInvalid, key, r.Revoked.Format(time.RFC3339))
	}
	h := which(&r)
	sum := sha256.Sum256([]byte(secret))
	if h == nil || subtle.ConstantTimeCompare([]byte(hex.EncodeToString(sum[:])), []byte(h.Hash)) != 1 {
		return "", nil, fmt.Errorf("%w: not cluster %q's current token (rotated, used or never issued)", ErrInvalid, key)
	}
	current, err := incarnation(key)
	if err != nil {
		return "", nil, err
	}
	if current == "" || current != r.Incarnation {
		return "", nil, fmt.Errorf("%w: cluster %q is no longer registered in agent mode as it was when the token was issued", ErrInvalid, key)
	}
	return key, &r, nil
}

// Revoke voids cluster key's join token and credential: its agent's calls are refused
// from then on (by every api within a few seconds: they read the changes, Void), until a
// new join token is used.
func (s *Store) Revoke(ctx context.Context, key string) error {
	_, err := s.agents.UpdateOne(ctx, bson.D{{Key: "_id", Value: key}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "revoked", Value: s.now()}}}, {Key: "$unset", Value: bson.D{{Key: "join", Value: ""}, {Key: "credential", Value: ""}}}})
	if err == nil {
		err = s.Void(ctx, key)
	}
	if err != nil {
		return fmt.Errorf("revoke cluster %q's agent tokens: %w", key, err)
	}
	return nil
}

// StatusOf is what is known of cluster key's agent (incarnation: the registration's; an
// earlier incarnation's record counts as none).
func (s *Store) StatusOf(ctx context.Context, key, incarnation string) (Status, error) {
	var r record
	if err := store.FindOne(ctx, s.agents, bson.D{{Key: "_id", Value: key}}, &r); err != nil {
		if errors.Is(err, mongo.ErrNoDocuments) {
			return Status{State: StateNoToken}, nil
		}
		return Status{}, err
	}
	if r.Incarnation != incarnation {
		return Status{State: StateNoToken}, nil
	}
	seen, err := s.LastSeen(ctx, key)
	if err != nil {
		return Status{}, err
	}
	if seen == nil || r.Seen != nil && r.Seen.After(*seen) {
		seen = r.Seen
	}
	st := Status{State: StateNoToken, Revoked: r.Revoked, LastSeen: seen}
	if r.Credential != nil {
		st.State, st.Joined = StateJoined, &r.Credential.Issued
	}
	if r.Join != nil {
		st.JoinIssued, st.JoinExpiry = &r.Join.Issued, &r.Join.Expires
		if r.Credential == nil {
			st.State = StateWaiting
		}
	}
	if st.State == StateJoined && (seen == nil || s.now().Sub(*seen) > OfflineAfter) {
		st.State = StateOffline
	}
	if r.Revoked != nil {
		st.State = StateRevoked
	}
	return st, nil
}

// newToken makes a token of cluster key: prefix, the key (base64url), a dot and 32
// random bytes (base64url); hash is what is stored of it.
func newToken(prefix, key string) (token, hash string, err error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", "", err
	}
	secret := base64.RawURLEncoding.EncodeToString(b)
	sum := sha256.Sum256([]byte(secret))
	return prefix + base64.RawURLEncoding.EncodeToString([]byte(key)) + "." + secret, hex.EncodeToString(sum[:]), nil
}

// parseToken splits a token of prefix into its cluster key and secret.
func parseToken(prefix, token string) (key, secret string, ok bool) {
	rest, ok := strings.CutPrefix(token, prefix)
	if !ok || len(token) > 512 {
		return "", "", false
	}
	enc, secret, ok := strings.Cut(rest, ".")
	raw, err := base64.RawURLEncoding.DecodeString(enc)
	if !ok || err != nil || len(raw) == 0 || len(secret) != 43 {
		return "", "", false
	}
	return string(raw), secret, true
}

// IsCredential tells an agent's credential from other bearer tokens (JWTs) by its form.
func IsCredential(token string) bool { return strings.HasPrefix(token, CredentialPrefix) }
