package blobs_test

import (
	"context"
	"testing"

	"github.com/temco/temco/internal/core/artifact"
	"github.com/temco/temco/internal/core/artifact/blobs"
)

// A chart stored with its provenance's signer is found with it; storing it again unverified
// keeps the signer, and verifying one stored unverified records it.
func TestTheStoreRecordsWhoSignedAChart(t *testing.T) {
	ctx := context.Background()
	s := blobs.NewStore(database(t))
	signed, err := s.PutSigned(ctx, []byte("signed chart"), "", "signer <s@example.com>", "ab12")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, []byte("signed chart"), ""); err != nil {
		t.Fatal(err)
	}
	if e, ok, err := s.Lookup(ctx, signed); err != nil || !ok || e.Signer != "signer <s@example.com>" || e.SignerKey != "ab12" || e.Size != 12 {
		t.Fatalf("signed: %+v %v %v", e, ok, err)
	}
	alias := artifact.Digest([]byte("a manifest"))
	plain, err := s.Put(ctx, []byte("plain chart"), alias)
	if err != nil {
		t.Fatal(err)
	}
	if e, ok, err := s.Lookup(ctx, alias); err != nil || !ok || e.Blob != plain || e.Signer != "" || e.SignerKey != "" {
		t.Fatalf("unverified: %+v %v %v", e, ok, err)
	}
	if _, err := s.PutSigned(ctx, []byte("plain chart"), alias, "other <o@example.com>", "cd34"); err != nil {
		t.Fatal(err)
	}
	if e, ok, err := s.Lookup(ctx, alias); err != nil || !ok || e.Signer != "other <o@example.com>" || e.SignerKey != "cd34" {
		t.Fatalf("verified later: %+v %v %v", e, ok, err)
	}
}
