package artifact

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"

	"go.mongodb.org/mongo-driver/v2/bson"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/errcode"

	"github.com/temco/temco/internal/adapters/sources"
	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/artifact"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/model"
)

// PinImages resolves every container image the context's objects name (rendered,
// edited by controllers, and per capabilities) to its digest at its registry, once, and
// rewrites each as name:tag@sha256:...: every cluster of the revision runs the same bits.
// The images and digests are recorded in the context's header. An image its registry
// does not have, or refuses, fails the operation; an unreachable registry is retried.
func (a *Activities) PinImages(ctx context.Context, in lifecycle.ContextRef) error {
	header, err := a.Contexts.Get(ctx, in.ContextID)
	if err != nil {
		return err
	}
	apps, err := a.Contexts.Apps(ctx, header)
	if err != nil {
		return err
	}
	plainHTTP, err := a.plainHTTP(ctx, in.Target)
	if err != nil {
		return err
	}
	// Controllers' cluster-specific edits are objects too: the clusters that have any.
	placed, err := a.Contexts.Placements(ctx, in.ContextID, appctx.Filter{})
	if err != nil {
		return err
	}
	images := namedImages(apps, placed)
	if len(images) == 0 {
		return nil
	}
	creds, err := a.credentials(ctx, in.Target.Project)
	if err != nil {
		return err
	}
	if err := a.resolveImages(ctx, images, creds, plainHTTP); err != nil {
		return failure(err)
	}
	if err := a.savePinned(ctx, in.ContextID, header.Apps, apps, placed, images); err != nil {
		return err
	}
	var record []artifact.Image
	for _, img := range slices.Sorted(maps.Keys(images)) {
		record = append(record, artifact.Image{Image: img, Digest: images[img]})
	}
	return a.Contexts.Set(ctx, in.ContextID, bson.D{{Key: "images", Value: record}})
}

// plainHTTP are the registries the DIG's image pinning reaches over plain HTTP.
func (a *Activities) plainHTTP(ctx context.Context, t lifecycle.Target) ([]string, error) {
	digDoc, err := a.Store.Get(ctx, t.ID())
	if err != nil {
		return nil, err
	}
	dig, err := model.Decode[model.DIGSpec](digDoc.Body)
	if err != nil {
		return nil, err
	}
	if p := dig.Spec.ImagePinning; p != nil {
		return p.PlainHTTP, nil
	}
	return nil, nil
}

// namedImages are the images the apps' objects and the clusters' edited objects name,
// each mapped to "" until resolved.
func namedImages(apps map[string]*appctx.App, placed []*appctx.ClusterApp) map[string]string {
	sets := [][]appctx.Object{}
	for _, app := range apps {
		sets = append(sets, objectSets(app)...)
	}
	for _, p := range placed {
		if p.Objects != nil {
			sets = append(sets, p.Objects)
		}
	}
	images := map[string]string{}
	for _, objs := range sets {
		for _, o := range objs {
			for _, img := range imagesOf(o.Manifest) {
				images[img] = ""
			}
		}
	}
	return images
}

// savePinned rewrites the images of the apps (in order) and of each edited cluster's
// objects to their digests, and saves both.
func (a *Activities) savePinned(ctx context.Context, ctxID string, order []string, apps map[string]*appctx.App,
	placed []*appctx.ClusterApp, images map[string]string) error {
	list := make([]*appctx.App, 0, len(apps))
	for _, name := range order {
		app := apps[name]
		if err := pinApp(app, images); err != nil {
			return err
		}
		list = append(list, app)
	}
	if err := a.Contexts.PutApps(ctx, ctxID, list); err != nil {
		return err
	}
	edited := map[string]bool{}
	for _, p := range placed {
		if p.Objects != nil {
			edited[p.Cluster] = true
		}
	}
	var clusters []*appctx.ClusterApp // every app of each edited cluster: saved whole
	for _, p := range placed {
		if !edited[p.Cluster] {
			continue
		}
		if err := pinSet(p.App, p.Objects, images); err != nil {
			return err
		}
		clusters = append(clusters, p)
	}
	return a.Contexts.SaveClusters(ctx, ctxID, clusters)
}

// objectSets are every list of objects an app holds.
func objectSets(app *appctx.App) [][]appctx.Object {
	sets := [][]appctx.Object{app.Objects}
	for _, k := range slices.Sorted(maps.Keys(app.Variants)) {
		sets = append(sets, app.Variants[k])
	}
	return sets
}

// resolveImages fills in each image's digest (one named by digest keeps it), eight at once.
func (a *Activities) resolveImages(ctx context.Context, images map[string]string, creds credentials, plainHTTP []string) error {
	c := sources.NewClient(ctx, a.Allow, creds.lookup, nil)
	defer c.Close()
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
		sem  = make(chan struct{}, 8)
	)
	for img := range images {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			d, err := resolveImage(ctx, c, img, plainHTTP)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Errorf("image %s: %w", img, err))
				return
			}
			images[img] = d
		})
	}
	wg.Wait()
	slices.SortFunc(errs, func(x, y error) int { return strings.Compare(x.Error(), y.Error()) })
	return errors.Join(errs...)
}

// resolveImage asks img's registry for the digest its tag names now.
func resolveImage(ctx context.Context, c *sources.Client, img string, plainHTTP []string) (string, error) {
	ref, err := parseImage(img)
	if err != nil {
		return "", sources.Permanent(err)
	}
	if ref.digest != "" {
		return ref.digest, nil
	}
	repo, err := remote.NewRepository(ref.host + "/" + ref.repository)
	if err != nil {
		return "", sources.Permanent(err)
	}
	repo.PlainHTTP = slices.Contains(plainHTTP, ref.host)
	repo.Client = &auth.Client{Client: c.HTTP, Credential: func(_ context.Context, h string) (auth.Credential, error) {
		if cr, ok := c.Credentials(h); ok {
			return auth.Credential{Username: cr.Username, Password: cr.Password}, nil
		}
		return auth.EmptyCredential, nil
	}}
	desc, err := repo.Resolve(ctx, ref.tag)
	if err != nil {
		return "", registryFailure(err)
	}
	return desc.Digest.String(), nil
}

// registryFailure: what a registry refused or does not have is permanent; the rest is
// tried again.
func registryFailure(err error) error {
	var resp *errcode.ErrorResponse
	if errors.As(err, &resp) && resp.StatusCode >= 400 && resp.StatusCode < 500 &&
		resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode != http.StatusRequestTimeout {
		return sources.Permanent(err)
	}
	if errors.Is(err, errdef.ErrNotFound) || sources.IsPermanent(err) {
		return sources.Permanent(err)
	}
	return err
}

// imageRef is an image reference split as a registry is asked.
type imageRef struct{ host, repository, tag, digest string }

// parseImage reads an image as Kubernetes does (Docker's rules): no registry host means
// Docker Hub (library/ for a single name), no tag means latest.
func parseImage(img string) (imageRef, error) {
	var r imageRef
	name := img
	if i := strings.Index(name, "@"); i >= 0 {
		d, err := artifact.ParseDigest(name[i+1:])
		if err != nil {
			return r, err
		}
		name, r.digest = name[:i], d
	}
	if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") {
		name, r.tag = name[:i], name[i+1:]
	}
	if r.tag == "" {
		r.tag = "latest"
	}
	first, rest, found := strings.Cut(name, "/")
	if found && (strings.ContainsAny(first, ".:") || first == "localhost") {
		r.host, r.repository = first, rest
	} else {
		r.host, r.repository = "registry-1.docker.io", name
		if !found {
			r.repository = "library/" + name
		}
	}
	if r.host == "docker.io" || r.host == "index.docker.io" {
		r.host = "registry-1.docker.io"
	}
	if r.repository == "" || r.repository != strings.ToLower(r.repository) || strings.ContainsAny(r.repository+r.tag, " \t\n") {
		return r, fmt.Errorf("%q is not an image reference", img)
	}
	return r, nil
}

// containerLists are the fields of a pod spec that hold containers; pinning looks for
// them anywhere in an object, so that workloads of any kind (a CRD's too) are pinned.
var containerLists = []string{"containers", "initContainers", "ephemeralContainers"}

// imagesOf lists the images a manifest's containers name.
func imagesOf(manifest string) []string {
	var obj map[string]any
	if json.Unmarshal([]byte(manifest), &obj) != nil {
		return nil
	}
	var out []string
	walkContainers(obj, func(c map[string]any) {
		if img, ok := c["image"].(string); ok && img != "" {
			out = append(out, img)
		}
	})
	return out
}

// walkContainers calls visit on every container of v.
func walkContainers(v any, visit func(map[string]any)) {
	switch t := v.(type) {
	case map[string]any:
		for k, child := range t {
			if list, ok := child.([]any); ok && slices.Contains(containerLists, k) {
				for _, c := range list {
					if cm, ok := c.(map[string]any); ok {
						visit(cm)
					}
				}
				continue
			}
			walkContainers(child, visit)
		}
	case []any:
		for _, child := range t {
			walkContainers(child, visit)
		}
	}
}

// pinApp rewrites the images of every object of app with their digests.
func pinApp(app *appctx.App, digests map[string]string) error {
	for _, objs := range objectSets(app) {
		if err := pinSet(app.Name, objs, digests); err != nil {
			return err
		}
	}
	return nil
}

// pinSet rewrites the images of objs, in place, with their digests.
func pinSet(app string, objs []appctx.Object, digests map[string]string) error {
	for i, o := range objs {
		pinned, changed, err := pinObject(o, digests)
		if err != nil {
			return fmt.Errorf("app %s: %s: %w", app, o.Ref, err)
		}
		if changed {
			objs[i] = pinned
		}
	}
	return nil
}

// pinObject is o with each container's image named by digest.
func pinObject(o appctx.Object, digests map[string]string) (appctx.Object, bool, error) {
	var obj map[string]any
	if err := json.Unmarshal([]byte(o.Manifest), &obj); err != nil {
		return o, false, err
	}
	changed := false
	walkContainers(obj, func(c map[string]any) {
		img, _ := c["image"].(string)
		if d := digests[img]; d != "" && !strings.Contains(img, "@") {
			c["image"], changed = img+"@"+d, true
		}
	})
	if !changed {
		return o, false, nil
	}
	pinned, err := appctx.NewObject(&unstructured.Unstructured{Object: obj})
	return pinned, true, err
}
