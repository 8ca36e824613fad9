package testenv

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"helm.sh/helm/v3/pkg/registry"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"

	"github.com/temco/temco/internal/dev/devstack"
)

// VersionedChart packs a Helm chart as Chart does, at version.
func VersionedChart(name, version, values string, templates map[string]string) []byte {
	files := map[string]string{
		name + "/Chart.yaml":  "apiVersion: v2\nname: " + name + "\nversion: " + version + "\n",
		name + "/values.yaml": values,
	}
	for f, t := range templates {
		files[name+"/templates/"+f] = t
	}
	return TarGz(files)
}

// RegistryClient is Helm's own OCI registry client, logged in to the stack's registry as
// its user (plain HTTP; credentials kept in a temporary folder of the test's).
func RegistryClient(t testing.TB, st *devstack.Stack) *registry.Client {
	t.Helper()
	c, err := registry.NewClient(registry.ClientOptPlainHTTP(),
		registry.ClientOptBasicAuth(st.Registry.User, st.Registry.Password),
		registry.ClientOptCredentialsFile(filepath.Join(t.TempDir(), "registry.json")))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// PushChart pushes chart archive tgz to the stack's OCI registry as <repo>:<tag>, with
// Helm's registry client (`helm push`), and returns the manifest's digest; the chart is
// then oci://<st.Registry.Address()>/<repo>. Strict mode is off: repo and tag need not
// end in the chart's name and version.
func PushChart(t testing.TB, st *devstack.Stack, tgz []byte, repo, tag string) (manifestDigest string) {
	t.Helper()
	res, err := RegistryClient(t, st).Push(tgz, st.Registry.Address()+"/"+repo+":"+tag, registry.PushOptStrictMode(false))
	if err != nil {
		t.Fatalf("push %s:%s to %s: %v", repo, tag, st.Registry.Address(), err)
	}
	return res.Manifest.Digest
}

// PublishChart adds chart archive tgz to the stack's Helm repository as filename (a .tgz
// name) and regenerates its index.yaml.
func PublishChart(t testing.TB, st *devstack.Stack, tgz []byte, filename string) {
	t.Helper()
	if err := st.HelmRepo.Publish(tgz, filename); err != nil {
		t.Fatal(err)
	}
}

// PushImage pushes a small container image (an OCI image manifest: a config naming
// body, and one layer holding it) to the stack's registry as <repo>:<tag>, and
// returns the manifest's digest; a different body makes a different digest.
func PushImage(t testing.TB, st *devstack.Stack, repo, tag, body string) (manifestDigest string) {
	t.Helper()
	ctx := context.Background()
	r, err := remote.NewRepository(st.Registry.Address() + "/" + repo)
	if err != nil {
		t.Fatal(err)
	}
	r.PlainHTTP = true
	r.Client = &auth.Client{Credential: auth.StaticCredential(st.Registry.Address(),
		auth.Credential{Username: st.Registry.User, Password: st.Registry.Password})}
	push := func(mediaType string, data []byte) ocispec.Descriptor {
		desc := content.NewDescriptorFromBytes(mediaType, data)
		if err := r.Push(ctx, desc, bytes.NewReader(data)); err != nil && !errors.Is(err, errdef.ErrAlreadyExists) {
			t.Fatalf("push %s to %s: %v", mediaType, repo, err)
		}
		return desc
	}
	layer := push(ocispec.MediaTypeImageLayer, []byte(body))
	config := push(ocispec.MediaTypeImageConfig, []byte(`{"architecture":"amd64","os":"linux","rootfs":{"type":"layers","diff_ids":["`+layer.Digest.String()+`"]}}`))
	desc, err := oras.PackManifest(ctx, r, oras.PackManifestVersion1_1, "", oras.PackManifestOptions{
		ConfigDescriptor: &config, Layers: []ocispec.Descriptor{layer}})
	if err != nil {
		t.Fatalf("pack %s:%s: %v", repo, tag, err)
	}
	if err := r.Tag(ctx, desc, tag); err != nil {
		t.Fatalf("tag %s:%s: %v", repo, tag, err)
	}
	return desc.Digest.String()
}
