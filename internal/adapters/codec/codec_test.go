package codec

import (
	"bytes"
	"strings"
	"testing"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"

	"github.com/temco/temco/internal/core/seal"
)

func ring(t *testing.T, ids ...string) *seal.Keyring {
	t.Helper()
	keys := make([][]byte, len(ids))
	for i, id := range ids {
		keys[i] = bytes.Repeat([]byte(id[:1]), 32)
	}
	k, err := seal.NewKeyring(ids, keys)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestEncryptRotateAndPassThrough(t *testing.T) {
	dc := DataConverter(ring(t, "a1"))
	p, err := dc.ToPayload(map[string]string{"kubeconfig": "client-key-data: SECRET"})
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(p.Data, []byte("SECRET")) || string(p.Metadata[converter.MetadataEncoding]) != Encoding ||
		string(p.Metadata[MetadataKeyID]) != "a1" {
		t.Fatalf("payload not encrypted as expected: %v", p)
	}
	// Rotation: b1 is the new primary; payloads of a1 still decode.
	rotated := DataConverter(ring(t, "b1", "a1"))
	var got map[string]string
	if err := rotated.FromPayload(p, &got); err != nil || got["kubeconfig"] != "client-key-data: SECRET" {
		t.Fatalf("decode after rotation: %v %v", got, err)
	}
	if p2, _ := rotated.ToPayload("x"); string(p2.Metadata[MetadataKeyID]) != "b1" {
		t.Errorf("new payloads use key %q, want b1", p2.Metadata[MetadataKeyID])
	}
	// A ring without the key refuses, naming the key.
	if err := DataConverter(ring(t, "c1")).FromPayload(p, &got); err == nil || !strings.Contains(err.Error(), `"a1"`) {
		t.Errorf("decode with the wrong key: %v", err)
	}
	// Payloads written before encryption was on pass through.
	plain, _ := converter.GetDefaultDataConverter().ToPayload("old")
	var s string
	if err := rotated.FromPayload(plain, &s); err != nil || s != "old" {
		t.Errorf("unencrypted payload: %q %v", s, err)
	}
	// Tampering is detected.
	p.Data[len(p.Data)-1] ^= 1
	if err := rotated.FromPayload(p, &got); err == nil {
		t.Error("a tampered payload decoded")
	}
}

// A secret sealed at rest cannot be decrypted by sending it to the codec as a payload.
func TestSealedSecretsAreNotPayloads(t *testing.T) {
	keys := ring(t, "a1")
	sealed, err := keys.Seal([]byte("kubeconfig"), []byte("/cluster-providers/p/clusters/c"))
	if err != nil {
		t.Fatal(err)
	}
	forged := &commonpb.Payload{Data: sealed, Metadata: map[string][]byte{converter.MetadataEncoding: []byte(Encoding)}}
	if _, err := (Codec{Keys: keys}).Decode([]*commonpb.Payload{forged}); err == nil {
		t.Fatal("a value sealed at rest decoded as a payload")
	}
}
