package hub

import (
	"cmp"
	"context"
	"reflect"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/temco/temco/hubapi/v1alpha1"
)

// keyRefs are the ConfigMap and Secret keys an object reads (charts, profiles, intent
// files, kubeconfigs), found wherever its type holds a KeyRef.
func keyRefs(o any) []v1.KeyRef {
	var out []v1.KeyRef
	var walk func(v reflect.Value)
	walk = func(v reflect.Value) {
		switch v.Kind() {
		case reflect.Pointer, reflect.Interface:
			if !v.IsNil() {
				walk(v.Elem())
			}
		case reflect.Struct:
			if r, ok := v.Interface().(v1.KeyRef); ok {
				out = append(out, r)
				return
			}
			for i := range v.NumField() {
				if v.Type().Field(i).IsExported() {
					walk(v.Field(i))
				}
			}
		case reflect.Slice, reflect.Array:
			if v.Type().Elem().Kind() == reflect.Uint8 { // bytes (a raw JSON spec) hold none
				return
			}
			for i := range v.Len() {
				walk(v.Index(i))
			}
		case reflect.Map:
			for it := v.MapRange(); it.Next(); {
				walk(it.Value())
			}
		}
	}
	walk(reflect.ValueOf(o))
	return out
}

// readers maps a changed ConfigMap or Secret (refKind) to the objects of one kind that
// read it, so that a chart or profile changed in its ConfigMap is taken at once rather
// than at the periodic recheck. Objects of a cluster-scoped kind read only the hub
// controller's namespace; the others, their own.
func (r *Reconciler) readers(refKind string, newList func() client.ObjectList, clusterScoped bool) handler.MapFunc {
	return func(ctx context.Context, changed client.Object) []reconcile.Request {
		var opts []client.ListOption
		if clusterScoped {
			if changed.GetNamespace() != r.Namespace {
				return nil
			}
		} else {
			opts = append(opts, client.InNamespace(changed.GetNamespace()))
		}
		list := newList()
		if err := r.Kube.List(ctx, list, opts...); err != nil {
			return nil // the periodic recheck comes anyway
		}
		items, err := meta.ExtractList(list)
		if err != nil {
			return nil
		}
		var out []reconcile.Request
		for _, it := range items {
			o, ok := it.(client.Object)
			if !ok {
				continue
			}
			for _, ref := range keyRefs(o) {
				if cmp.Or(ref.Kind, "ConfigMap") == refKind && ref.Name == changed.GetName() {
					out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(o)})
					break
				}
			}
		}
		return out
	}
}
