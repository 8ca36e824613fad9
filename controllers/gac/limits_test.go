package gac

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	jsonpatch "github.com/evanphx/json-patch"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/temco/temco/api"
	"github.com/temco/temco/contract"
	"github.com/temco/temco/internal/core/model"
)

// requireRefusal checks that err refuses the operation (not retried) and names the limit.
func requireRefusal(t *testing.T, err error, want ...string) {
	t.Helper()
	var r *contract.Refusal
	require.True(t, errors.As(err, &r), "a refusal, not a retried error: %v", err)
	for _, w := range want {
		assert.Contains(t, err.Error(), w)
	}
}

// webDeployment is the app's own Deployment "web", for patches of existing objects.
func webDeployment() contract.Resource {
	return contract.Resource{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", Manifest: json.RawMessage(deployment)}
}

// runPatch runs a JSON patch of the app's Deployment.
func runPatch(t *testing.T, ops []map[string]any) (*contract.Edit, error) {
	t.Helper()
	st := intent(t)
	c := everywhere()
	c.PatchType, c.PatchJSON = patchJSON, ops
	st.customize(t, st.resource(t, "p", existing("Deployment", "web"), ""), "c", c)
	f := fake(webDeployment())
	err := (&controller{store: st}).Run(context.Background(), f)
	if err != nil {
		return nil, err
	}
	require.Len(t, f.Edits, 1)
	return &f.Edits[0], nil
}

// A customization's patchJson has at most as many operations as the Kubernetes API server
// takes in one JSON patch: more are refused when the customization is created, and by a
// run (one stored before the limit).
func TestPatchJSONHasAtMostTheAPIServersOperations(t *testing.T) {
	ops := func(n int) []map[string]any {
		out := make([]map[string]any, n)
		for i := range out {
			out[i] = map[string]any{"op": "add", "path": fmt.Sprintf("/metadata/annotations/a%d", i), "value": "v"}
		}
		return append([]map[string]any{{"op": "add", "path": "/metadata/annotations", "value": map[string]any{}}}, out...)
	}
	e, err := runPatch(t, ops(maxPatchOps-1))
	require.NoError(t, err, "%d operations", maxPatchOps)
	var sent []map[string]any
	require.NoError(t, json.Unmarshal(e.Data, &sent))
	assert.Len(t, sent, maxPatchOps, "the patch, whole")

	_, err = runPatch(t, ops(maxPatchOps))
	requireRefusal(t, err, "customization c", "patchJson has 10001 operations, more than the 10000 a JSON patch may have")

	sp := everywhere()
	sp.PatchType, sp.PatchJSON = patchJSON, ops(maxPatchOps)
	err = validateCustomization(sp, nil, existing("Deployment", "web"))
	require.ErrorContains(t, err, "spec.patchJson has 10001 operations, more than the 10000")
}

// A patch document (its JSON, $(URL)$ values resolved) is at most as large as an object
// may be: what it adds ends up in the object. A value repeated in many operations counts
// each time.
func TestPatchJSONIsAtMostAsLargeAsAnObject(t *testing.T) {
	envelope := len(`[{"op":"add","path":"/metadata/annotations","value":{"a":""}}]`)
	op := func(n int) []map[string]any {
		return []map[string]any{{"op": "add", "path": "/metadata/annotations", "value": map[string]any{"a": strings.Repeat("x", n)}}}
	}
	e, err := runPatch(t, op(maxObjectBytes-envelope))
	require.NoError(t, err)
	assert.Len(t, e.Data, maxObjectBytes, "a patch of exactly the limit")

	_, err = runPatch(t, op(maxObjectBytes-envelope+1))
	requireRefusal(t, err, "customization c", "patchJson comes to more than 3 MiB of JSON, the most a patch may have")

	t.Run("a kv-pair value repeated", func(t *testing.T) {
		st := intent(t)
		st.put(t, "/cluster-providers/provider1/clusters/cluster1/kv-pairs", model.KindClusterKV, "big",
			model.KVSpec{KV: []map[string]any{{"blob": strings.Repeat("x", 512<<10)}}}, nil)
		var ops []map[string]any
		for i := range 7 { // 3.5 MiB once resolved
			ops = append(ops, map[string]any{"op": "add", "path": fmt.Sprintf("/metadata/labels/l%d", i),
				"value": kvURL("provider1", "cluster1", "big", "blob")})
		}
		st.customize(t, st.resource(t, "p", existing("Deployment", "web"), ""), "c", emcoCustomization(ops...))
		f := emcoFake(webDeployment())
		requireRefusal(t, runErr(st, nil, f), "patchJson comes to more than 3 MiB")
		assert.Empty(t, f.Edits)
	})
}

// Copies of a document into itself double it each time: the JSON-patch library stops
// them once they add more than the limit to the object, process-wide (the app's own
// objects are patched with the same library elsewhere).
func TestCopiesThatDoubleTheObjectStopAtTheCopyLimit(t *testing.T) {
	require.EqualValues(t, maxCopyBytes, jsonpatch.AccumulatedCopySizeLimit)
	template := "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\nspec:\n  blob: " + strings.Repeat("x", 1000) + "\n"
	copies := func(n int) error {
		st := intent(t)
		c := everywhere()
		c.PatchType = patchJSON
		for i := range n {
			c.PatchJSON = append(c.PatchJSON, map[string]any{"op": "copy", "from": "/spec", "path": fmt.Sprintf("/spec/c%d", i)})
		}
		st.customize(t, st.resource(t, "w", newObject("Widget", "w"), template), "c", c)
		return (&controller{store: st}).Run(context.Background(), fake())
	}
	require.NoError(t, copies(11), "11 copies add 2 MiB")
	requireRefusal(t, copies(12), "customization c", "patchJson's copy operations add more than 3 MiB to the object")
	requireRefusal(t, copies(60), "copy operations add more than 3 MiB") // stopped at the 12th, not after 2^60 KB
}

// A new object is at most what the Kubernetes API server accepts, however many
// customizations' files pile into it; a merge patch file is at most that large too.
func TestANewObjectIsAtMostWhatTheAPIServerAccepts(t *testing.T) {
	envelope := len(`{"apiVersion":"v1","data":{"a":"","b":""},"kind":"ConfigMap","metadata":{"name":"cm"}}`)
	build := func(n int) error {
		st := intent(t)
		res := st.resource(t, "cm", newObject("ConfigMap", "cm"), "")
		st.customize(t, res, "c1", everywhere(), file("a", strings.Repeat("x", n/2)))
		st.customize(t, res, "c2", everywhere(), file("b", strings.Repeat("y", n-n/2)))
		return (&controller{store: st}).Run(context.Background(), fake())
	}
	require.NoError(t, build(maxObjectBytes-envelope), "an object of exactly the limit")
	requireRefusal(t, build(maxObjectBytes-envelope+1), "gac resource cm, customization c2",
		"the object comes to 3145729 bytes, more than the 3 MiB the Kubernetes API server accepts")

	patch := func(n int) []api.NamedFile {
		return []api.NamedFile{file("patch.yaml", `{"metadata":{"annotations":{"a":"`+strings.Repeat("x", n)+`"}}}`)}
	}
	sp := everywhere()
	sp.PatchType = patchMerge
	envelope = len(`{"metadata":{"annotations":{"a":""}}}`)
	require.NoError(t, validateCustomization(sp, patch(maxObjectBytes-envelope), existing("Deployment", "web")))
	require.ErrorContains(t, validateCustomization(sp, patch(maxObjectBytes-envelope+1), existing("Deployment", "web")),
		"merge patch patch.yaml comes to 3145729 bytes of JSON, more than the 3 MiB an object may have")
}

// One run's edits are stored as one document: past the limit the run is refused, not
// left to fail storing them, time after time.
func TestARunsEditsAreAtMostWhatOneStepMayStore(t *testing.T) {
	objects := func(n int) error {
		st := intent(t)
		for i := range n {
			res := st.resource(t, fmt.Sprintf("cm%02d", i), newObject("ConfigMap", fmt.Sprintf("cm%02d", i)), "")
			st.customize(t, res, "c", everywhere(), file("k", strings.Repeat("x", 1<<20)))
		}
		return (&controller{store: st}).Run(context.Background(), fake())
	}
	require.NoError(t, objects(11), "11 MiB of new objects")
	requireRefusal(t, objects(12), "gac resource cm11", "the intent's edits come to more than 12 MiB, the most one controller step may store")
}
