package ctxedit

import (
	"fmt"

	jsonpatch "github.com/evanphx/json-patch"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/temco/temco/contract"
	"github.com/temco/temco/internal/core/appctx"
)

// patchIn patches the object of objs that e names (by kind and name, as EMCO's
// "<name>+<Kind>" keys do).
func patchIn(objs []appctx.Object, e contract.Edit) ([]appctx.Object, error) {
	for i, o := range objs {
		if o.Kind != e.Kind || o.Name != e.Name {
			continue
		}
		out, err := patch([]byte(o.Manifest), o.Ref, e.Type, e.Data)
		if err != nil {
			return nil, fmt.Errorf("patch %s/%s: %v", e.Kind, e.Name, err)
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(out); err != nil {
			return nil, fmt.Errorf("patched %s/%s is not a Kubernetes object: %v", e.Kind, e.Name, err)
		}
		if u.GetKind() != o.Kind || u.GetName() != o.Name {
			return nil, fmt.Errorf("a patch of %s/%s may not change its kind or name", e.Kind, e.Name)
		}
		if objs[i], err = appctx.NewObject(u); err != nil {
			return nil, err
		}
		return objs, nil
	}
	return nil, fmt.Errorf("the app has no %s named %q", e.Kind, e.Name)
}

func patch(doc []byte, ref appctx.Ref, typ string, p []byte) ([]byte, error) {
	switch typ {
	case contract.PatchJSON:
		jp, err := jsonpatch.DecodePatch(p)
		if err != nil {
			return nil, err
		}
		return jp.Apply(doc)
	case contract.PatchMerge:
		return jsonpatch.MergePatch(doc, p)
	case contract.PatchStrategic:
		typed, err := scheme.Scheme.New(schema.GroupVersionKind{Group: ref.Group, Version: ref.Version, Kind: ref.Kind})
		if err != nil { // not a built-in kind: no patch strategy is known, merge as JSON
			return jsonpatch.MergePatch(doc, p)
		}
		return strategicpatch.StrategicMergePatch(doc, p, typed)
	}
	return nil, fmt.Errorf("unknown patch type %q (json, merge or strategic)", typ)
}
