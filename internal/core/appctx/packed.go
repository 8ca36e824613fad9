// A group's entries as one compressed binary: what a group document stores since
// 2026-12-06 (groupDoc.Packed).

package appctx

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/klauspost/compress/zstd"
)

// Why packed: the clusters of a group repeat one another (the same apps, objects and
// statuses under other names), so 100 clusters' entries, 66 KB, compress to about 1 KB,
// in under 0.1 ms each way. A MongoDB-wire server's cost grows with the bytes it parses
// and stores (FerretDB keeps a binary as base64 in PostgreSQL's JSON), so a group read or
// written as 1 KB costs it little more than an empty document (BENCHMARKS.md).
// klauspost/compress's zstd is the compressor the MongoDB driver itself uses.

// packer and unpacker serve every group writer and reader at once (EncodeAll and
// DecodeAll are safe for concurrent use, one encoder or decoder per core).
var (
	packer   = must(zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest)))
	unpacker = must(zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(maxPackedBytes)))
)

// must panics at start on an option the compressor refuses: a programming error.
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// maxPackedBytes bounds a group's entries unpacked: a document that claims more is refused
// rather than read (a group grows past maxGroupBytes only by statuses and live reads).
const maxPackedBytes = 64 << 20

// pack compresses entries, each a BSON document, as one binary.
func pack(entries [][]byte) []byte {
	n := 0
	for _, e := range entries {
		n += len(e)
	}
	raw := make([]byte, 0, n)
	for _, e := range entries {
		raw = append(raw, e...)
	}
	return packer.EncodeAll(raw, nil)
}

// unpack returns the entries pack compressed: BSON documents one after another, each
// starting with its length.
func unpack(packed []byte) ([][]byte, error) {
	raw, err := unpacker.DecodeAll(packed, nil)
	if err != nil {
		return nil, fmt.Errorf("unpack group: %w", err)
	}
	var entries [][]byte
	for len(raw) > 0 {
		if len(raw) < 5 {
			return nil, errors.New("unpack group: truncated entry")
		}
		n := int(binary.LittleEndian.Uint32(raw))
		if n < 5 || n > len(raw) {
			return nil, fmt.Errorf("unpack group: an entry of %d bytes in %d", n, len(raw))
		}
		entries = append(entries, raw[:n:n])
		raw = raw[n:]
	}
	return entries, nil
}

// opened fills g.Clusters from its packed form, as read (groups written before keep
// their entries as an array of binaries, Clusters itself).
func (g *groupDoc) opened() error {
	if g.Packed == nil {
		return nil
	}
	entries, err := unpack(g.Packed)
	if err != nil {
		return fmt.Errorf("group %s: %w", g.ID, err)
	}
	g.Clusters, g.Packed = entries, nil
	return nil
}

// stored is g as written: its entries packed.
func (g *groupDoc) stored() *groupDoc {
	out := *g
	out.Packed, out.Clusters = pack(g.Clusters), nil
	return &out
}
