package gac

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode/utf8"

	jsonpatch "github.com/evanphx/json-patch"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apimachinery/pkg/util/validation"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"

	"github.com/temco/temco/api"
)

// resource is a stored resource with its template and customizations, as the controller
// works on it.
type resource struct {
	Name           string
	Spec           ResourceSpec
	Template       []byte
	Customizations []*customization
}

// customization is a stored customization with its files.
type customization struct {
	Name     string
	Spec     CustomizationSpec
	Files    []api.NamedFile
	resolved bool // its $(URL)$ values are replaced by what they stand for
}

// Kinds whose data the customization files fill.
const (
	classConfigMap = "configmap"
	classSecret    = "secret"
)

// classOf tells ConfigMaps and Secrets (in any case, as EMCO compares) from other kinds.
func classOf(kind string) string {
	switch k := strings.ToLower(kind); k {
	case classConfigMap, classSecret:
		return k
	}
	return ""
}

// object is a manifest being built; numbers stay json.Number so they round-trip exactly.
type object = map[string]any

// parseObject reads a YAML or JSON document holding one object with apiVersion, kind and
// metadata.name.
func parseObject(data []byte) (object, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var obj object
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("is not YAML or JSON: %v", err)
		}
		js, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return nil, fmt.Errorf("is not YAML or JSON: %v", err)
		}
		if string(bytes.TrimSpace(js)) == "null" { // an empty document (comments, "---")
			continue
		}
		if obj != nil {
			return nil, errors.New("holds more than one document: give one object")
		}
		if obj, err = decodeObject(js); err != nil {
			return nil, err
		}
	}
	if obj == nil {
		return nil, errors.New("is empty")
	}
	if v, ok := obj["apiVersion"].(string); !ok || v == "" {
		return nil, errors.New("has no apiVersion")
	}
	if k, ok := obj["kind"].(string); !ok || k == "" {
		return nil, errors.New("has no kind")
	}
	if nameOf(obj) == "" {
		return nil, errors.New("has no metadata.name")
	}
	return obj, nil
}

// decodeObject decodes a JSON object.
func decodeObject(js []byte) (object, error) {
	d := json.NewDecoder(bytes.NewReader(js))
	d.UseNumber()
	var obj object
	if err := d.Decode(&obj); err != nil || obj == nil {
		return nil, errors.New("is not an object (a map of fields)")
	}
	return obj, nil
}

func nameOf(obj object) string {
	md, _ := obj["metadata"].(map[string]any)
	name, _ := md["name"].(string)
	return name
}

// matchesGVK checks that an object is the one a resource's GVK names.
func matchesGVK(obj object, gvk GVK) error {
	kind, _ := obj["kind"].(string)
	switch {
	case !strings.EqualFold(kind, gvk.Kind):
		return fmt.Errorf("is a %s, not the %s that spec.resourceGVK.kind names", kind, gvk.Kind)
	case nameOf(obj) != gvk.Name:
		return fmt.Errorf("is named %q, not %q as spec.resourceGVK.name says", nameOf(obj), gvk.Name)
	case obj["apiVersion"] != gvk.APIVersion:
		return fmt.Errorf("has apiVersion %v, not %s as spec.resourceGVK.apiVersion says", obj["apiVersion"], gvk.APIVersion)
	}
	return nil
}

// baseObject is what a new object starts from: its template, or for a ConfigMap or Secret
// without one a generated v1 object (a Secret of type Opaque, as EMCO makes).
func baseObject(r *resource) (object, error) {
	class := classOf(r.Spec.ResourceGVK.Kind)
	if len(r.Template) == 0 {
		switch class {
		case classConfigMap:
			return object{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": r.Spec.ResourceGVK.Name}}, nil
		case classSecret:
			return object{"apiVersion": "v1", "kind": "Secret", "type": "Opaque", "metadata": map[string]any{"name": r.Spec.ResourceGVK.Name}}, nil
		}
		return nil, errors.New("it has no template")
	}
	obj, err := parseObject(r.Template)
	if err != nil {
		return nil, fmt.Errorf("its template %v", err)
	}
	if class == classSecret && obj["type"] == nil {
		obj["type"] = "Opaque"
	}
	return obj, nil
}

// options are the data key options that apply to the object's kind.
func options(sp CustomizationSpec, class string) []KeyOption {
	switch class {
	case classConfigMap:
		return sp.ConfigMapOptions.DataKeyOptions
	case classSecret:
		return sp.SecretOptions.DataKeyOptions
	}
	return nil
}

func optionFor(opts []KeyOption, file string) (KeyOption, bool) {
	i := slices.IndexFunc(opts, func(o KeyOption) bool { return o.FileName == file })
	if i < 0 {
		return KeyOption{}, false
	}
	return opts[i], true
}

// dataFile is a customization file that becomes one data key.
type dataFile struct {
	Key     string
	Content []byte
}

// dataFiles are the files a customization adds to a ConfigMap or Secret: all but its
// merge patches, each under its option's keyName, else its file name.
func dataFiles(sp CustomizationSpec, files []api.NamedFile, class string) []dataFile {
	if class == "" {
		return nil // other kinds take files only as merge patches
	}
	var out []dataFile
	opts := options(sp, class)
	for _, f := range files {
		o, ok := optionFor(opts, f.Name)
		switch {
		case ok && o.MergePatch == flagTrue:
			continue
		case ok && o.KeyName != "":
			out = append(out, dataFile{Key: o.KeyName, Content: f.Content})
		default:
			out = append(out, dataFile{Key: f.Name, Content: f.Content})
		}
	}
	return out
}

// mergePatches are a merge customization's patch files: for a ConfigMap or Secret those
// its options mark mergePatch "true", for other kinds every file.
func mergePatches(sp CustomizationSpec, files []api.NamedFile, class string) []api.NamedFile {
	if sp.PatchType != patchMerge {
		return nil
	}
	if class == "" {
		return files
	}
	opts := options(sp, class)
	return slices.DeleteFunc(slices.Clone(files), func(f api.NamedFile) bool {
		o, ok := optionFor(opts, f.Name)
		return !ok || o.MergePatch != flagTrue
	})
}

// addData puts files into a ConfigMap's or Secret's data. A key the template already has
// is refused, as in EMCO; a key an earlier customization set is replaced. Secret values
// are base64 of the file, as EMCO stores them; ConfigMap files that are not UTF-8 go to
// binaryData, where Kubernetes expects them.
func addData(obj object, class string, files []dataFile, templateKeys map[string]bool) error {
	data, err := stringMap(obj, "data")
	if err != nil {
		return err
	}
	binary, err := stringMap(obj, "binaryData")
	if err != nil {
		return err
	}
	for _, f := range files {
		if errs := validation.IsConfigMapKey(f.Key); len(errs) > 0 {
			return fmt.Errorf("%q is not a valid data key: %s", f.Key, strings.Join(errs, "; "))
		}
		if templateKeys[f.Key] {
			return fmt.Errorf("the template already has data key %q", f.Key)
		}
		delete(data, f.Key)
		delete(binary, f.Key)
		switch {
		case class == classSecret:
			data[f.Key] = base64.StdEncoding.EncodeToString(f.Content)
		case utf8.Valid(f.Content):
			data[f.Key] = string(f.Content)
		default:
			binary[f.Key] = base64.StdEncoding.EncodeToString(f.Content)
		}
	}
	setOrDrop(obj, "data", data)
	setOrDrop(obj, "binaryData", binary)
	return nil
}

// dataKeys are the keys of an object's data and binaryData.
func dataKeys(obj object) map[string]bool {
	keys := map[string]bool{}
	for _, field := range []string{"data", "binaryData"} {
		m, _ := obj[field].(map[string]any)
		for k := range m {
			keys[k] = true
		}
	}
	return keys
}

func stringMap(obj object, field string) (map[string]any, error) {
	switch m := obj[field].(type) {
	case nil:
		return map[string]any{}, nil
	case map[string]any:
		for k, v := range m {
			if _, ok := v.(string); !ok {
				return nil, fmt.Errorf("%s.%s is not a string", field, k)
			}
		}
		return m, nil
	}
	return nil, fmt.Errorf("%s is not a map of strings", field)
}

func setOrDrop(obj object, field string, m map[string]any) {
	if len(m) == 0 {
		delete(obj, field)
		return
	}
	obj[field] = m
}

// customize applies one customization to a new object: its data files, then its patch.
func customize(obj object, c *customization, class string, templateKeys map[string]bool) (object, error) {
	if class != "" {
		if err := addData(obj, class, dataFiles(c.Spec, c.Files, class), templateKeys); err != nil {
			return nil, err
		}
	}
	switch c.Spec.PatchType {
	case patchJSON:
		ops, err := jsonOps(c.Spec.PatchJSON)
		if err != nil {
			return nil, err
		}
		return patchObject(obj, func(doc []byte) ([]byte, error) { return applyJSONPatch(doc, ops) })
	case patchMerge:
		for _, f := range mergePatches(c.Spec, c.Files, class) {
			p, err := mergePatchJSON(f)
			if err != nil {
				return nil, err
			}
			if obj, err = patchObject(obj, func(doc []byte) ([]byte, error) { return strategicMerge(doc, p) }); err != nil {
				return nil, fmt.Errorf("merge patch %s: %v", f.Name, err)
			}
		}
	}
	return obj, nil
}

func patchObject(obj object, patch func([]byte) ([]byte, error)) (object, error) {
	doc, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	out, err := patch(doc)
	if err != nil {
		return nil, err
	}
	return decodeObject(out)
}

// strategicMerge applies a strategic merge patch to a built-in kind, and a JSON merge
// patch to others, which have no patch strategy (EMCO fails on them).
func strategicMerge(doc, patch []byte) ([]byte, error) {
	var tm struct{ APIVersion, Kind string }
	if err := json.Unmarshal(doc, &tm); err != nil {
		return nil, err
	}
	gv, err := schema.ParseGroupVersion(tm.APIVersion)
	if err != nil {
		return nil, err
	}
	typed, err := scheme.Scheme.New(gv.WithKind(tm.Kind))
	if err != nil {
		return jsonpatch.MergePatch(doc, patch)
	}
	return strategicpatch.StrategicMergePatch(doc, patch, typed)
}

// mergePatchJSON reads a merge patch file (YAML or JSON object) as JSON.
func mergePatchJSON(f api.NamedFile) ([]byte, error) {
	js, err := yaml.YAMLToJSON(f.Content)
	if err != nil {
		return nil, fmt.Errorf("merge patch %s is not YAML or JSON: %v", f.Name, err)
	}
	if len(js) > maxObjectBytes {
		return nil, fmt.Errorf("merge patch %s comes to %d bytes of JSON, more than the %s an object may have", f.Name, len(js), size(maxObjectBytes))
	}
	if _, err := decodeObject(js); err != nil {
		return nil, fmt.Errorf("merge patch %s %v", f.Name, err)
	}
	return js, nil
}

// jsonOps checks RFC 6902 operations and returns them as a JSON patch document ($(URL)$
// values are checked by lookupsOf and replaced by values.resolve before it is applied).
func jsonOps(ops []map[string]any) ([]byte, error) {
	switch {
	case len(ops) == 0:
		return nil, errors.New("patchType json needs patchJson operations")
	case len(ops) > maxPatchOps:
		return nil, fmt.Errorf("patchJson has %d operations, more than the %d a JSON patch may have", len(ops), maxPatchOps)
	}
	// Encoded one operation at a time: $(URL)$ values repeated in many operations stop
	// at the limit, not once all of them are in memory.
	doc := []byte{'['}
	for i, op := range ops {
		if err := checkOp(op); err != nil {
			return nil, fmt.Errorf("patchJson[%d] %v", i, err)
		}
		js, err := json.Marshal(op)
		if err != nil {
			return nil, err
		}
		if len(doc)+len(js)+1 > maxObjectBytes {
			return nil, fmt.Errorf("patchJson comes to more than %s of JSON, the most a patch may have", size(maxObjectBytes))
		}
		if i > 0 {
			doc = append(doc, ',')
		}
		doc = append(doc, js...)
	}
	doc = append(doc, ']')
	if _, err := jsonpatch.DecodePatch(doc); err != nil {
		return nil, fmt.Errorf("patchJson is not a JSON patch: %v", err)
	}
	return doc, nil
}

func checkOp(op map[string]any) error {
	name, _ := op["op"].(string)
	path, ok := op["path"].(string)
	switch {
	case !ok:
		return errors.New("has no path")
	case path != "" && !strings.HasPrefix(path, "/"):
		return fmt.Errorf("path %q is not a JSON pointer (it starts with /)", path)
	}
	switch name {
	case "add", "replace", "test":
		if _, ok := op["value"]; !ok {
			return fmt.Errorf("(%s) has no value", name)
		}
	case "move", "copy":
		if from, ok := op["from"].(string); !ok || from != "" && !strings.HasPrefix(from, "/") {
			return fmt.Errorf("(%s) needs from, a JSON pointer", name)
		}
	case "remove":
	default:
		return fmt.Errorf("op %q is not add, remove, replace, move, copy or test", name)
	}
	return nil
}
