package codec

import (
	"testing"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
)

// A reading client writes in the clear and reads both clear and encrypted payloads.
func TestReadingConverterWritesClearAndReadsBoth(t *testing.T) {
	keys := ring(t, "a1")
	reading := ReadingConverter(keys)
	clear, err := reading.ToPayload(map[string]string{"step": "done"})
	if err != nil {
		t.Fatal(err)
	}
	if enc := string(clear.GetMetadata()[converter.MetadataEncoding]); enc != converter.MetadataEncodingJSON {
		t.Errorf("a reading client wrote %s, want %s", enc, converter.MetadataEncodingJSON)
	}
	sealed, err := DataConverter(keys).ToPayload(map[string]string{"step": "await-ready"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		p    *commonpb.Payload
		want string
	}{{clear, "done"}, {sealed, "await-ready"}} {
		var got map[string]string
		if err := reading.FromPayload(c.p, &got); err != nil || got["step"] != c.want {
			t.Errorf("read %v, %v; want step %s", got, err, c.want)
		}
	}
}
