package gac

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/validation/path"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/temco/temco/api"
	"github.com/temco/temco/internal/core/model"
)

// checkResource validates a resource and stores its template. A replace without a template
// keeps the stored one, as EMCO does.
func checkResource(_ context.Context, q *api.Request[ResourceSpec]) error {
	sp := q.Resource().Spec
	template, sent := q.File()
	if !sent {
		var err error
		if template, err = q.OldSealed(); err != nil {
			return err
		}
	}
	if err := validateResource(sp, template); err != nil {
		return api.BadRequest("%v", err)
	}
	q.Ref(appID(q.DIG(), sp.App))
	return q.SetSealed(template)
}

// appID is the store id of an app of the DIG's composite app.
func appID(dig, app string) string {
	return dig[:strings.LastIndex(dig, "/deployment-intent-groups/")] + "/apps/" + app
}

var kindRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9]*$`)

func validateResource(sp ResourceSpec, template []byte) error {
	if err := model.ValidateName("spec.app", sp.App); err != nil {
		return err
	}
	if sp.NewObject != flagTrue && sp.NewObject != flagFalse {
		return fmt.Errorf(`spec.newObject must be "true" or "false", not %q`, sp.NewObject)
	}
	gvk := sp.ResourceGVK
	if gv, err := schema.ParseGroupVersion(gvk.APIVersion); err != nil || gv.Version == "" {
		return fmt.Errorf("spec.resourceGVK.apiVersion %q is not an apiVersion such as v1 or apps/v1", gvk.APIVersion)
	}
	if !kindRE.MatchString(gvk.Kind) {
		return fmt.Errorf("spec.resourceGVK.kind %q is not a kind such as ConfigMap", gvk.Kind)
	}
	if errs := path.IsValidPathSegmentName(gvk.Name); gvk.Name == "" || len(gvk.Name) > 253 || len(errs) > 0 {
		return fmt.Errorf("spec.resourceGVK.name %q is not a Kubernetes object name", gvk.Name)
	}
	class := classOf(gvk.Kind)
	if len(template) == 0 {
		if sp.NewObject == flagTrue && class == "" {
			return errors.New(`multipart part "file", the object's template, is required when newObject is "true" and the kind is not ConfigMap or Secret`)
		}
		return nil
	}
	obj, err := parseObject(template)
	if err == nil {
		err = matchesGVK(obj, gvk)
	}
	if err == nil && class != "" {
		err = checkData(obj, class)
	}
	if err != nil {
		return fmt.Errorf(`the template (multipart part "file") %v`, err)
	}
	return nil
}

// checkData checks a ConfigMap or Secret template's data: strings, base64 for a Secret.
func checkData(obj object, class string) error {
	data, err := stringMap(obj, "data")
	if err != nil {
		return err
	}
	if class != classSecret {
		return nil
	}
	for k, v := range data {
		if _, err := base64.StdEncoding.DecodeString(v.(string)); err != nil {
			return fmt.Errorf("data.%s is not base64, as Secret data must be (plain text goes in stringData)", k)
		}
	}
	return nil
}

// checkCustomization validates a customization against its resource and stores its
// files. A replace without files keeps the stored ones, as EMCO does; empty files are
// dropped, as EMCO drops them.
func checkCustomization(ctx context.Context, q *api.Request[CustomizationSpec]) error {
	files := slices.DeleteFunc(slices.Clone(q.Files()), func(f api.NamedFile) bool { return len(f.Content) == 0 })
	if len(q.Files()) == 0 && q.Old() != nil {
		old, err := q.OldSealed()
		if err != nil {
			return err
		}
		if files, err = api.DecodeFiles(old); err != nil {
			return fmt.Errorf("stored files of %s: %w", q.ID(), err)
		}
	}
	parent, err := q.Store().Get(ctx, q.Parent())
	if err != nil {
		return err
	}
	res, err := model.Decode[ResourceSpec](parent.Body)
	if err != nil {
		return err
	}
	if err := validateCustomization(q.Resource().Spec, files, res.Spec); err != nil {
		return api.BadRequest("%v", err)
	}
	if len(files) == 0 {
		return nil
	}
	return q.SetSealed(api.EncodeFiles(files))
}

func validateCustomization(sp CustomizationSpec, files []api.NamedFile, res ResourceSpec) error {
	if sp.ClusterSpecific != flagTrue && sp.ClusterSpecific != flagFalse {
		return fmt.Errorf(`spec.clusterSpecific must be "true" or "false", not %q`, sp.ClusterSpecific)
	}
	if err := validateClusterInfo(sp.ClusterInfo, sp.ClusterSpecific == flagTrue); err != nil {
		return err
	}
	class := classOf(res.ResourceGVK.Kind)
	switch sp.PatchType {
	case "":
		if res.NewObject == flagFalse {
			return errors.New(`the resource patches an existing object (newObject "false"): give patchType json or merge`)
		}
	case patchJSON:
		if _, err := jsonOps(sp.PatchJSON); err != nil {
			return fmt.Errorf("spec.%v", err)
		}
		if _, err := lookupsOf(sp); err != nil {
			return fmt.Errorf("spec.%v", err)
		}
	case patchMerge:
		patches := mergePatches(sp, files, class)
		if len(patches) == 0 {
			if class != "" {
				return fmt.Errorf(`patchType merge needs files marked mergePatch "true" in spec.%s.dataKeyOptions`, optionsField(class))
			}
			return errors.New(`patchType merge needs its patches as multipart parts "files"`)
		}
		for _, f := range patches {
			if _, err := mergePatchJSON(f); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf(`spec.patchType must be "json", "merge" or "", not %q`, sp.PatchType)
	}
	return validateOptions(sp, files, res)
}

func validateClusterInfo(ci ClusterInfo, specific bool) error {
	if ci.Scope != scopeLabel && ci.Scope != scopeName {
		return fmt.Errorf(`spec.clusterInfo.scope must be "label" or "name", not %q`, ci.Scope)
	}
	if ci.Mode != modeAllow && ci.Mode != modeDeny {
		return fmt.Errorf(`spec.clusterInfo.mode must be "allow" or "deny", not %q`, ci.Mode)
	}
	if err := model.ValidateName("spec.clusterInfo.clusterProvider", ci.ClusterProvider); err != nil {
		return err
	}
	switch {
	case !specific:
		return nil
	case ci.Scope == scopeLabel:
		return model.ValidateName("spec.clusterInfo.clusterLabel", ci.ClusterLabel)
	}
	return model.ValidateName("spec.clusterInfo.cluster", ci.Cluster)
}

func optionsField(class string) string {
	if class == classSecret {
		return "secretOptions"
	}
	return "configMapOptions"
}

// validateOptions checks the data key options and, for a new ConfigMap or Secret, the data
// keys the files become.
func validateOptions(sp CustomizationSpec, files []api.NamedFile, res ResourceSpec) error {
	class := classOf(res.ResourceGVK.Kind)
	for _, o := range []struct {
		field string
		opts  []KeyOption
	}{{"configMapOptions", sp.ConfigMapOptions.DataKeyOptions}, {"secretOptions", sp.SecretOptions.DataKeyOptions}} {
		if len(o.opts) == 0 {
			continue
		}
		if o.field != optionsField(class) || class == "" {
			return fmt.Errorf("spec.%s does not apply to the resource's kind %s", o.field, res.ResourceGVK.Kind)
		}
		seen := map[string]bool{}
		for i, k := range o.opts {
			where := fmt.Sprintf("spec.%s.dataKeyOptions[%d]", o.field, i)
			switch {
			case !slices.ContainsFunc(files, func(f api.NamedFile) bool { return f.Name == k.FileName }):
				return fmt.Errorf(`%s.fileName %q names none of the (non-empty) multipart parts "files"`, where, k.FileName)
			case seen[k.FileName]:
				return fmt.Errorf("%s.fileName %q is named twice", where, k.FileName)
			case k.MergePatch != "" && k.MergePatch != flagTrue && k.MergePatch != flagFalse:
				return fmt.Errorf(`%s.mergePatch must be "true" or "false", not %q`, where, k.MergePatch)
			case k.KeyName == "" && k.MergePatch != flagTrue:
				return fmt.Errorf("%s.keyName is required", where)
			}
			seen[k.FileName] = true
		}
	}
	if res.NewObject != flagTrue {
		return nil
	}
	keys := map[string]bool{}
	for _, f := range dataFiles(sp, files, class) {
		if errs := validation.IsConfigMapKey(f.Key); len(errs) > 0 {
			return fmt.Errorf("data key %q is invalid: %s (name the file's key in spec.%s)", f.Key, strings.Join(errs, "; "), optionsField(class))
		}
		if keys[f.Key] {
			return fmt.Errorf("two files would both be data key %q", f.Key)
		}
		keys[f.Key] = true
	}
	return nil
}
