package artifact

import (
	"crypto/sha256"
	"encoding/hex"
)

// MaxSize bounds an artifact (as an upload is bounded): one document of the store.
const MaxSize = 10 << 20

// Digest is the sha256 of data as "sha256:<hex>".
func Digest(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}
