package agent

import (
	"context"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/dev/devstack"
	"github.com/temco/temco/internal/dev/testenv"
)

var ferret *devstack.FerretDB

func TestMain(m *testing.M) { testenv.MainWithFerretDB(m, &ferret) }

func newStore(t *testing.T) *Store {
	s := Open(testenv.Database(t, ferret, strings.ToLower(t.Name())))
	if err := s.EnsureIndexes(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s
}

// registered answers key's incarnation as the api does: "" once it is no longer an agent
// cluster.
func registered(m map[string]string) func(string) (string, error) {
	return func(key string) (string, error) { return m[key], nil }
}

// A join token is used once, for its own cluster's current registration; the credential
// it gives opens that cluster alone; a new join token rotates the credential when used;
// revocation voids both; a cluster registered anew voids its predecessor's.
func TestJoinAuthenticateRotateRevoke(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	inc := map[string]string{"cp+edge1": "t1", "cp+edge2": "t1"}
	join, err := s.IssueJoin(ctx, "cp+edge1", "t1")
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := s.StatusOf(ctx, "cp+edge1", "t1"); st.State != StateWaiting {
		t.Errorf("after issue: state %q, want %q", st.State, StateWaiting)
	}
	key, cred, err := s.Join(ctx, join, registered(inc))
	if err != nil || key != "cp+edge1" || !IsCredential(cred) {
		t.Fatalf("join: %q %q %v", key, cred, err)
	}
	if _, _, err := s.Join(ctx, join, registered(inc)); !errors.Is(err, ErrInvalid) {
		t.Errorf("a second join with the same token: %v, want ErrInvalid", err)
	}
	if got, err := s.Authenticate(ctx, cred, registered(inc)); err != nil || got != "cp+edge1" {
		t.Fatalf("authenticate: %q %v", got, err)
	}
	if st, _ := s.StatusOf(ctx, "cp+edge1", "t1"); st.State != StateJoined || st.LastSeen == nil {
		t.Errorf("after the join: %+v", st)
	}
	later := time.Now().Add(OfflineAfter + time.Minute)
	s.now = func() time.Time { return later }
	if st, _ := s.StatusOf(ctx, "cp+edge1", "t1"); st.State != StateOffline {
		t.Errorf("with no call for %s: %+v", OfflineAfter, st)
	}
	s.now = func() time.Time { return time.Now().UTC() }
	// The token names its cluster: another joined cluster's name with edge1's secret opens
	// nothing.
	join2, _ := s.IssueJoin(ctx, "cp+edge2", "t1")
	if _, _, err := s.Join(ctx, join2, registered(inc)); err != nil {
		t.Fatal(err)
	}
	_, secret, _ := parseToken(CredentialPrefix, cred)
	forged := CredentialPrefix + base64.RawURLEncoding.EncodeToString([]byte("cp+edge2")) + "." + secret
	if _, err := s.Authenticate(ctx, forged, registered(inc)); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "current token") {
		t.Errorf("edge1's secret under edge2's name: %v, want ErrInvalid", err)
	}
	for _, bad := range []string{"", "temco-agent.", "temco-agent.x.y", cred + "x", join} {
		if _, err := s.Authenticate(ctx, bad, registered(inc)); !errors.Is(err, ErrInvalid) {
			t.Errorf("authenticate %q: %v, want ErrInvalid", bad, err)
		}
	}

	// Rotation: the old credential works until the new join token is used.
	rejoin, err := s.IssueJoin(ctx, "cp+edge1", "t1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Authenticate(ctx, cred, registered(inc)); err != nil {
		t.Errorf("the credential before its replacement joined: %v", err)
	}
	_, cred2, err := s.Join(ctx, rejoin, registered(inc))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Authenticate(ctx, cred, registered(inc)); !errors.Is(err, ErrInvalid) {
		t.Errorf("the rotated credential: %v, want ErrInvalid", err)
	}
	if _, err := s.Authenticate(ctx, cred2, registered(inc)); err != nil {
		t.Errorf("the new credential: %v", err)
	}

	// Registered anew (another incarnation): the predecessor's credential opens nothing.
	inc["cp+edge1"] = "t2"
	if _, err := s.Authenticate(ctx, cred2, registered(inc)); !errors.Is(err, ErrInvalid) {
		t.Errorf("a credential of the cluster's previous registration: %v, want ErrInvalid", err)
	}
	inc["cp+edge1"] = "t1"

	if err := s.Revoke(ctx, "cp+edge1"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Authenticate(ctx, cred2, registered(inc)); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "revoked") {
		t.Errorf("a revoked credential: %v, want ErrInvalid saying revoked", err)
	}
	if st, _ := s.StatusOf(ctx, "cp+edge1", "t1"); st.State != StateRevoked {
		t.Errorf("after revoke: state %q", st.State)
	}
}

// An expired join token is refused.
func TestJoinTokenExpires(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	now := time.Now().UTC()
	s.now = func() time.Time { return now }
	join, err := s.IssueJoin(ctx, "cp+edge", "t1")
	if err != nil {
		t.Fatal(err)
	}
	now = now.Add(JoinTTL + time.Minute)
	if _, _, err := s.Join(ctx, join, registered(map[string]string{"cp+edge": "t1"})); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "expired") {
		t.Errorf("join after the token's TTL: %v", err)
	}
}

// An item is a level: a later publication replaces it; the wait of an earlier generation
// is refused, and the report comes back with the item's waiting token.
func TestPublishWaitReport(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	gen1, err := s.Publish(ctx, Item{Cluster: "cp+edge", Instance: "i1", Context: "c1", Writer: appctx.Attempt{Activity: "a", Number: 1}})
	if err != nil {
		t.Fatal(err)
	}
	gen2, err := s.Publish(ctx, Item{Cluster: "cp+edge", Instance: "i1", Context: "c2", Previous: "c1"})
	if err != nil || gen2 <= gen1 {
		t.Fatalf("second publication: gen %d after %d, %v", gen2, gen1, err)
	}
	if _, err := s.Publish(ctx, Item{Cluster: "cp+other", Instance: "i1", Context: "c1"}); err != nil {
		t.Fatal(err)
	}
	items, err := s.Items(ctx, "cp+edge")
	if err != nil || len(items) != 1 || items[0].Context != "c2" || items[0].Gen != gen2 {
		t.Fatalf("items of cp+edge: %+v %v", items, err)
	}
	id := ItemID("cp+edge", "i1")
	if ok, err := s.Wait(ctx, id, gen1, []byte("old")); ok || err != nil {
		t.Errorf("waiting for a superseded generation: %v %v", ok, err)
	}
	if ok, err := s.Wait(ctx, id, gen2, []byte("token")); !ok || err != nil {
		t.Fatalf("wait: %v %v", ok, err)
	}
	it, err := s.SaveReport(ctx, id, Report{Cluster: "cp+edge", Gen: gen2, Applied: "c2", Result: lifecycle.ClusterResult{Done: 3}})
	if err != nil || it == nil || string(it.Token) != "token" || it.TokenGen != gen2 {
		t.Fatalf("report: item %+v %v", it, err)
	}
	if r, err := s.Reported(ctx, id); err != nil || r.Gen != gen2 || r.Applied != "c2" || r.Result.Done != 3 {
		t.Errorf("reported: %+v %v", r, err)
	}
	// One read finds the items and the reports apart.
	if items, reports, err := s.Work(ctx, "cp+edge"); err != nil || len(items) != 1 || items[0].ID != id || len(reports) != 1 || reports[0].ID != id || reports[0].Gen != gen2 {
		t.Errorf("work: items %+v reports %+v %v", items, reports, err)
	}
	// A publication after the report keeps the report (what the cluster holds) apart.
	if _, err := s.Publish(ctx, Item{Cluster: "cp+edge", Instance: "i1", Remove: "c2"}); err != nil {
		t.Fatal(err)
	}
	if r, _ := s.Reported(ctx, id); r == nil || r.Applied != "c2" {
		t.Errorf("the report after a new publication: %+v", r)
	}
}
