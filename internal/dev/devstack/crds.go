package devstack

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/temco/temco/hubapi"
)

// crdFiles are the hand-written CustomResourceDefinitions every local cluster holds, so
// that it can store the custom objects temco's controllers produce, for the kinds whose
// definitions no module on the proxy ships (SD-EWAN, Nodus, KNCC; see each file's header).
// One file per API group, named after the group.
//
//go:embed crds/*.yaml
var crdFiles embed.FS

// moduleCRDFolders are the folders of BinDir/crds that tools/build.sh fills with the
// definitions of the other kinds temco's controllers produce, copied from the modules
// that ship them (pinned by tools/crds/go.mod): every local cluster applies them too.
var moduleCRDFolders = []string{
	"istio",             // istio.io/api: its's Gateway, ServiceEntry, DestinationRule, AuthorizationPolicy..., ca-certs' ProxyConfig
	"multus",            // network-attachment-definition-client: ncm's NetworkAttachmentDefinition
	"cert-manager",      // cert-manager: ca-certs' ClusterIssuer, and the other five kinds of its CRDs
	"cluster-inventory", // sigs.k8s.io/cluster-inventory-api: ClusterProfile, PlacementDecision (a hub's: cluster inventories)
}

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// crdFieldManager owns the fields of the definitions the dev stack applies.
const crdFieldManager = "temco-devstack"

// CRDFile is one file of crds/ and the definitions it holds, in order.
type CRDFile struct {
	Name string
	CRDs []*unstructured.Unstructured
}

// CRDFiles reads the embedded (hand-written) definitions.
func CRDFiles() ([]CRDFile, error) { return readCRDFiles(crdFiles, "crds/*.yaml") }

// ModuleCRDFiles reads the definitions tools/build.sh copied from their modules into
// binDir/crds/<folder>; a file's Name is "<folder>/<file>". An empty or missing folder
// is an error that says to build them.
func ModuleCRDFiles(binDir string) ([]CRDFile, error) {
	var out []CRDFile
	for _, folder := range moduleCRDFolders {
		dir := filepath.Join(binDir, "crds", folder)
		files, err := readCRDFiles(os.DirFS(dir), "*.yaml")
		if err == nil && len(files) == 0 {
			err = errors.New("no CustomResourceDefinitions there")
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w: run `make tools`", dir, err)
		}
		for _, f := range files {
			out = append(out, CRDFile{Name: folder + "/" + f.Name, CRDs: f.CRDs})
		}
	}
	return out, nil
}

// ClusterCRDFiles reads every definition a local cluster applies at start: the
// embedded ones, those of the modules in binDir/crds, and temco's own kinds (any local
// cluster may be a hub: cluster1 is the stack's).
func ClusterCRDFiles(binDir string) ([]CRDFile, error) {
	files, err := CRDFiles()
	if err != nil {
		return nil, err
	}
	mod, err := ModuleCRDFiles(binDir)
	if err != nil {
		return nil, err
	}
	own, err := readCRDFiles(hubapi.CRDs, "crds/*.yaml")
	if err != nil {
		return nil, err
	}
	for i := range own {
		own[i].Name = "temco/" + own[i].Name
	}
	return append(append(files, mod...), own...), nil
}

// readCRDFiles reads the definitions in the files of fsys matching pattern, in name order.
func readCRDFiles(fsys fs.FS, pattern string) ([]CRDFile, error) {
	names, err := fs.Glob(fsys, pattern)
	if err != nil {
		return nil, err
	}
	var out []CRDFile
	for _, name := range names {
		data, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		crds, err := decodeCRDs(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out = append(out, CRDFile{Name: path.Base(name), CRDs: crds})
	}
	return out, nil
}

// decodeCRDs reads a stream of YAML documents, each a CustomResourceDefinition; documents
// holding only comments are skipped.
func decodeCRDs(data []byte) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []*unstructured.Unstructured
	for i := 1; ; i++ {
		var obj map[string]any
		if err := dec.Decode(&obj); errors.Is(err, io.EOF) {
			return out, nil
		} else if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		if obj == nil {
			continue
		}
		crd := &unstructured.Unstructured{Object: obj}
		if crd.GetAPIVersion() != "apiextensions.k8s.io/v1" || crd.GetKind() != "CustomResourceDefinition" || crd.GetName() == "" {
			return nil, fmt.Errorf("document %d: not a named apiextensions.k8s.io/v1 CustomResourceDefinition", i)
		}
		out = append(out, crd)
	}
}

// InstallCRDs applies the definitions of crds/ and of the modules in BinDir/crds
// (ClusterCRDFiles) to the running cluster and waits until the apiserver has established
// each. Start does it on every start; again, it changes nothing.
func (c *Cluster) InstallCRDs(ctx context.Context) error {
	names, err := c.applyCRDs(ctx)
	if err != nil {
		return err
	}
	return c.awaitCRDs(ctx, names)
}

// applyCRDs server-side applies the definitions of ClusterCRDFiles and returns their names.
func (c *Cluster) applyCRDs(ctx context.Context) ([]string, error) {
	files, err := ClusterCRDFiles(c.BinDir)
	if err != nil {
		return nil, fmt.Errorf("cluster %s: %w", c.Name, err)
	}
	return c.applyCRDFiles(ctx, files)
}

// applyCRDFiles server-side applies the definitions of files and returns their names.
// Unknown fields in a definition are refused, not dropped; a write the server was too
// slow to finish is tried again.
func (c *Cluster) applyCRDFiles(ctx context.Context, files []CRDFile) ([]string, error) {
	dc, err := c.Dynamic()
	if err != nil {
		return nil, err
	}
	var names []string
	for _, f := range files {
		for _, crd := range f.CRDs {
			body, err := json.Marshal(crd.Object)
			if err != nil {
				return nil, err
			}
			force := true
			err = retryTransient(ctx, applyBound, func(ctx context.Context) error {
				_, err := dc.Resource(crdResource).Patch(ctx, crd.GetName(), types.ApplyPatchType, body, metav1.PatchOptions{
					FieldManager: crdFieldManager, Force: &force, FieldValidation: metav1.FieldValidationStrict})
				return err
			})
			if err != nil {
				return nil, fmt.Errorf("cluster %s: apply %s from %s: %w", c.Name, crd.GetName(), f.Name, err)
			}
			names = append(names, crd.GetName())
		}
	}
	return names, nil
}

// awaitCRDs waits until the apiserver serves the resources of the named definitions.
func (c *Cluster) awaitCRDs(ctx context.Context, names []string) error {
	dc, err := c.Dynamic()
	if err != nil {
		return err
	}
	// Generous: a CI machine running several stacks at once took more than 30 s to
	// establish a definition; a slow start is not a failed one.
	return WaitReady(ctx, c.proc("kube-apiserver"), 2*time.Minute, func(ctx context.Context) error {
		for _, name := range names {
			crd, err := dc.Resource(crdResource).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if !established(crd) {
				return fmt.Errorf("CustomResourceDefinition %s is not established", name)
			}
		}
		return nil
	})
}

// established reports whether the apiserver serves the definition's resource.
func established(crd *unstructured.Unstructured) bool {
	conditions, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	for _, c := range conditions {
		if m, ok := c.(map[string]any); ok && m["type"] == "Established" && m["status"] == "True" {
			return true
		}
	}
	return false
}
