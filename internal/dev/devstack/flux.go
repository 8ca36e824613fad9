package devstack

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
)

var (
	namespaceResource     = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	secretResource        = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	gitRepositoryResource = schema.GroupVersionResource{Group: "source.toolkit.fluxcd.io", Version: "v1", Resource: "gitrepositories"}
	// KustomizationResource is Flux's Kustomization (kustomize.toolkit.fluxcd.io/v1).
	KustomizationResource = schema.GroupVersionResource{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Resource: "kustomizations"}
)

// fluxCRDFiles reads the definitions of Flux's kinds that tools/build.sh copied from
// the controllers' modules.
func fluxCRDFiles(binDir string) ([]CRDFile, error) {
	dir := filepath.Join(binDir, "crds", "flux")
	files, err := readCRDFiles(os.DirFS(dir), "*.yaml")
	if err == nil && len(files) == 0 {
		err = fmt.Errorf("no Flux CustomResourceDefinitions in %s: run `make tools`", dir)
	}
	return files, err
}

// bootstrap does on the cluster what `flux bootstrap` would, minus deploying the
// controllers (they run outside): Flux's definitions, namespace flux-system, the git
// credentials, and the GitRepository and Kustomization "flux-system" that apply Path().
// Every start applies them again, so a changed git URL or password reaches the cluster.
func (g *GitOps) bootstrap(ctx context.Context) error {
	files, err := fluxCRDFiles(g.BinDir)
	if err != nil {
		return err
	}
	names, err := g.Cluster.applyCRDFiles(ctx, files)
	if err != nil {
		return err
	}
	if err := g.Cluster.awaitCRDs(ctx, names); err != nil {
		return err
	}
	dc, err := g.Cluster.Dynamic()
	if err != nil {
		return err
	}
	meta := func(name string) map[string]any { return map[string]any{"name": name, "namespace": fluxNamespace} }
	objects := []struct {
		resource schema.GroupVersionResource
		obj      map[string]any
	}{
		{namespaceResource, map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": fluxNamespace}}},
		{secretResource, map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": meta("git-auth"), "type": "Opaque",
			"data": map[string]any{"username": b64(g.User), "password": b64(g.Password)}}},
		{gitRepositoryResource, map[string]any{"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository", "metadata": meta(fluxName),
			"spec": map[string]any{"url": g.URL(), "ref": map[string]any{"branch": g.Branch},
				"secretRef": map[string]any{"name": "git-auth"}, "interval": fluxInterval}}},
		{KustomizationResource, map[string]any{"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization", "metadata": meta(fluxName),
			"spec": map[string]any{"sourceRef": map[string]any{"kind": "GitRepository", "name": fluxName},
				"path": "./" + g.Path(), "prune": true, "interval": fluxInterval}}},
	}
	for _, o := range objects {
		if err := apply(ctx, dc, o.resource, &unstructured.Unstructured{Object: o.obj}); err != nil {
			return err
		}
	}
	return nil
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// apply server-side applies obj as the dev stack, again while the server is too slow.
func apply(ctx context.Context, dc dynamic.Interface, resource schema.GroupVersionResource, obj *unstructured.Unstructured) error {
	body, err := json.Marshal(obj.Object)
	if err != nil {
		return err
	}
	force := true
	err = retryTransient(ctx, applyBound, func(ctx context.Context) error {
		_, err := dc.Resource(resource).Namespace(obj.GetNamespace()).Patch(ctx, obj.GetName(), types.ApplyPatchType, body,
			metav1.PatchOptions{FieldManager: crdFieldManager, Force: &force, FieldValidation: metav1.FieldValidationStrict})
		return err
	})
	if err != nil {
		return fmt.Errorf("apply %s %s/%s: %w", obj.GetKind(), obj.GetNamespace(), obj.GetName(), err)
	}
	return nil
}

// WaitApplied waits until the bootstrap Kustomization is Ready with the branch's head
// applied: what the repository holds under Path() now is on the cluster.
func (g *GitOps) WaitApplied(ctx context.Context, timeout time.Duration) error {
	head, err := g.git.Git(ctx, g.Repo, "rev-parse", "refs/heads/"+g.Branch)
	if err != nil {
		return err
	}
	want := g.Branch + "@sha1:" + head
	dc, err := g.Cluster.Dynamic()
	if err != nil {
		return err
	}
	return WaitReady(ctx, g.proc("kustomize-controller"), timeout, func(ctx context.Context) error {
		k, err := dc.Resource(KustomizationResource).Namespace(fluxNamespace).Get(ctx, fluxName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		applied, _, _ := unstructured.NestedString(k.Object, "status", "lastAppliedRevision")
		if status, message := readyCondition(k); status != "True" || applied != want {
			return fmt.Errorf("Kustomization %s/%s: Ready %s (%s), applied %q, not %q", fluxNamespace, fluxName, status, message, applied, want)
		}
		return nil
	})
}

// waitArtifact waits until the bootstrap GitRepository's artifact is served under url.
func (g *GitOps) waitArtifact(ctx context.Context, p *Proc, url string) error {
	dc, err := g.Cluster.Dynamic()
	if err != nil {
		return err
	}
	return WaitReady(ctx, p, 2*time.Minute, func(ctx context.Context) error {
		r, err := dc.Resource(gitRepositoryResource).Namespace(fluxNamespace).Get(ctx, fluxName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		got, _, _ := unstructured.NestedString(r.Object, "status", "artifact", "url")
		if !strings.HasPrefix(got, url) {
			status, message := readyCondition(r)
			return fmt.Errorf("GitRepository %s/%s: Ready %s (%s), artifact %q, not under %s", fluxNamespace, fluxName, status, message, got, url)
		}
		return nil
	})
}

// readyCondition returns the status and message of a Flux object's Ready condition.
func readyCondition(obj *unstructured.Unstructured) (status, message string) {
	conditions, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conditions {
		if m, ok := c.(map[string]any); ok && m["type"] == "Ready" {
			status, _ = m["status"].(string)
			message, _ = m["message"].(string)
			return status, message
		}
	}
	return "Unknown", "no Ready condition yet"
}
