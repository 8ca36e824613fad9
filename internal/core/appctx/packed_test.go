package appctx

import (
	"slices"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Entries come back as they were packed; a damaged packed group is refused, not misread.
func TestPackedEntriesRoundTripAndDamageIsRefused(t *testing.T) {
	var entries [][]byte
	for _, c := range []string{"p+c1", "p+c2", "p+c3"} {
		e, err := bson.Marshal(bson.D{{Key: "cluster", Value: c}})
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, e)
	}
	got, err := unpack(pack(entries))
	if err != nil || !slices.EqualFunc(got, entries, slices.Equal) {
		t.Fatalf("unpacked %v (%v), want the entries packed", got, err)
	}
	if got, err := unpack(pack(nil)); err != nil || len(got) != 0 {
		t.Errorf("an empty group unpacked as %v (%v)", got, err)
	}
	bad := pack([][]byte{entries[0][:len(entries[0])-2]}) // an entry cut short
	if _, err := unpack(bad); err == nil {
		t.Error("a cut entry was read")
	}
	if _, err := unpack([]byte("not zstd")); err == nil {
		t.Error("a packed group that is no zstd frame was read")
	}
}
