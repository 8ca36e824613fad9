// Package codec encrypts every Temporal payload temco writes (workflow and activity inputs,
// results, queries, signals, memos, failure messages) with AES-256-GCM, so the Temporal
// server, its database and its UI only ever hold ciphertext.
package codec

import (
	"fmt"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"google.golang.org/protobuf/proto"

	"github.com/temco/temco/internal/core/seal"
)

const (
	// Encoding marks an encrypted payload; any other payload is passed through on decode,
	// so histories written before encryption was turned on still replay and display.
	Encoding = "binary/encrypted"
	// MetadataKeyID names the key that encrypted a payload, for operators rotating keys
	// (the sealed bytes carry it too, and that copy is the one that selects the key).
	MetadataKeyID = "encryption-key-id"
)

// aad binds ciphertexts to their use: a value sealed at rest (a kubeconfig in MongoDB)
// does not open as a payload, so the codec endpoint cannot be used to decrypt it.
var aad = []byte("temco/temporal-payload")

// Codec is a converter.PayloadCodec over a seal.Keyring: the primary key encrypts, every
// key of the ring decrypts, so a key is rotated by adding a new primary and keeping the old.
type Codec struct{ Keys *seal.Keyring }

// Encode encrypts each payload whole (metadata and data).
func (c Codec) Encode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	out := make([]*commonpb.Payload, len(payloads))
	for i, p := range payloads {
		plain, err := proto.Marshal(p)
		if err != nil {
			return nil, fmt.Errorf("encrypt payload: %w", err)
		}
		sealed, err := c.Keys.Seal(plain, aad)
		if err != nil {
			return nil, fmt.Errorf("encrypt payload: %w", err)
		}
		out[i] = &commonpb.Payload{Data: sealed, Metadata: map[string][]byte{
			converter.MetadataEncoding: []byte(Encoding),
			MetadataKeyID:              []byte(c.Keys.Primary()),
		}}
	}
	return out, nil
}

// Decode decrypts encrypted payloads and passes every other one through unchanged.
func (c Codec) Decode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	out := make([]*commonpb.Payload, len(payloads))
	for i, p := range payloads {
		if string(p.GetMetadata()[converter.MetadataEncoding]) != Encoding {
			out[i] = p
			continue
		}
		plain, err := c.Keys.Open(p.GetData(), aad)
		if err != nil {
			return nil, fmt.Errorf("decrypt payload: %w", err)
		}
		out[i] = &commonpb.Payload{}
		if err := proto.Unmarshal(plain, out[i]); err != nil {
			return nil, fmt.Errorf("decrypt payload: %w", err)
		}
	}
	return out, nil
}

// DataConverter is the default converter with payloads encrypted by keys.
func DataConverter(keys *seal.Keyring) converter.DataConverter {
	return converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), Codec{Keys: keys})
}

// FailureConverter also encrypts failure messages and stack traces (they may quote a
// cluster's answer), which Temporal otherwise stores in clear.
func FailureConverter(dc converter.DataConverter) converter.FailureConverter {
	return temporal.NewDefaultFailureConverter(temporal.DefaultFailureConverterOptions{DataConverter: dc, EncodeCommonAttributes: true})
}
