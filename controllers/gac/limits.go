package gac

// Bounds on what one tenant's intent makes gac build in the worker every tenant shares: a
// JSON patch whose copies double the document each time, or customizations piling data
// into one object, fail the operation at once with the reason, not by exhausting memory.

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	jsonpatch "github.com/evanphx/json-patch"

	"github.com/temco/temco/contract"
)

const (
	// maxObjectBytes bounds an object gac builds (its JSON) and a patch document: the
	// Kubernetes API server takes no request body over 3 MiB (twice etcd's 1.5 MiB), so
	// a bigger object could never be applied, and what a patch adds ends up in the object.
	maxObjectBytes = 3 << 20
	// maxCopyBytes bounds what the "copy" operations of one JSON patch add to a document,
	// the bound the Kubernetes API server sets on the same library.
	maxCopyBytes = maxObjectBytes
	// maxPatchOps bounds a customization's patchJson: the Kubernetes API server's own limit
	// on the operations of one JSON patch (maxJSONPatchOperations).
	maxPatchOps = 10000
	// maxRunEditBytes bounds the edits of one run (their JSON): they are stored together,
	// as one MongoDB document of at most 16 MiB (appctx.Layer); a quarter is kept to spare.
	maxRunEditBytes = 12 << 20
)

// The library's bound on copies is process-wide, so it applies also where temco applies
// gac's patches to the app's own objects (internal/core/ctxedit). It is lowered, never raised,
// as the Kubernetes API server sets it (k8s.io/apiserver, Config.Complete).
func init() {
	if cur := jsonpatch.AccumulatedCopySizeLimit; cur <= 0 || cur > maxCopyBytes {
		jsonpatch.AccumulatedCopySizeLimit = maxCopyBytes
	}
}

// applyJSONPatch applies a JSON patch document, saying which limit a refusal is about.
func applyJSONPatch(doc, ops []byte) ([]byte, error) {
	p, err := jsonpatch.DecodePatch(ops)
	if err != nil {
		return nil, err
	}
	out, err := p.Apply(doc)
	if ce := (*jsonpatch.AccumulatedCopySizeError)(nil); errors.As(err, &ce) {
		return nil, fmt.Errorf("patchJson's copy operations add more than %s to the object, the most one patch may copy", size(maxCopyBytes))
	}
	return out, err
}

// checkObjectSize refuses an object whose JSON is over maxObjectBytes.
func checkObjectSize(obj object) error {
	js, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	if len(js) > maxObjectBytes {
		return fmt.Errorf("the object comes to %d bytes, more than the %s the Kubernetes API server accepts", len(js), size(maxObjectBytes))
	}
	return nil
}

// editBudget is what a run's edits may still add.
type editBudget struct{ left int }

func newEditBudget() *editBudget { return &editBudget{left: maxRunEditBytes} }

// spend takes an edit's size from the budget, refusing it when the budget is spent.
func (b *editBudget) spend(e contract.Edit) error {
	js, err := json.Marshal(e)
	if err != nil {
		return err
	}
	if b.left -= len(js); b.left < 0 {
		return fmt.Errorf("with it, the intent's edits come to more than %s, the most one controller step may store", size(maxRunEditBytes))
	}
	return nil
}

// size is n bytes, in MiB when whole.
func size(n int) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return strconv.Itoa(n>>20) + " MiB"
	}
	return strconv.Itoa(n) + " bytes"
}
