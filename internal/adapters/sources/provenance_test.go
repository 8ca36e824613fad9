package sources

import (
	"bytes"
	"context"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
	"helm.sh/helm/v3/pkg/provenance"
	"helm.sh/helm/v3/pkg/registry"

	"github.com/temco/temco/internal/adapters/egress"
	"github.com/temco/temco/internal/core/artifact"
	"github.com/temco/temco/internal/dev/devstack"
	"github.com/temco/temco/internal/dev/testenv"
)

// newKey makes a signing key of identity "<name> <<name>@example.com>".
func newKey(t *testing.T, name string) *openpgp.Entity {
	t.Helper()
	e, err := openpgp.NewEntity(name, "", name+"@example.com", &packet.Config{Algorithm: packet.PubKeyAlgoEdDSA})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// keyringOf writes the public keys of keys as a binary keyring (gpg --export) and returns its path.
func keyringOf(t *testing.T, keys ...*openpgp.Entity) string {
	t.Helper()
	var buf bytes.Buffer
	for _, k := range keys {
		if err := k.Serialize(&buf); err != nil {
			t.Fatal(err)
		}
	}
	p := filepath.Join(t.TempDir(), "pubring.gpg")
	if err := os.WriteFile(p, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// sign is the .prov `helm package --sign` writes for archive, named name, signed by key.
func sign(t *testing.T, key *openpgp.Entity, name string, archive []byte) []byte {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, archive, 0o600); err != nil {
		t.Fatal(err)
	}
	prov, err := (&provenance.Signatory{Entity: key}).ClearSign(p)
	if err != nil {
		t.Fatal(err)
	}
	return []byte(prov)
}

func loadKeyring(t *testing.T, keys ...*openpgp.Entity) *Keyring {
	t.Helper()
	k, err := LoadKeyring(keyringOf(t, keys...))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// A Helm repository's chart is verified against the .prov beside it: signed by a key of the
// keyring it passes, naming its signer; a tampered .prov, one signed by another key, one
// for other bytes or none at all fail permanently, naming the chart; a repository that
// fails is tried again.
func TestAHelmRepositoryChartsProvenanceIsVerifiedWithTheKeyring(t *testing.T) {
	archive := testenv.VersionedChart("web", "1.0.0", "", map[string]string{"cm.yaml": "kind: ConfigMap\n"})
	digest := artifact.Digest(archive)
	srv, files, fails := repoServer(t, archive, digest)
	signer, stranger := newKey(t, "signer"), newKey(t, "stranger")
	good := sign(t, signer, "web-1.0.0.tgz", archive)
	files["/charts/web-1.0.0.tgz.prov"] = good
	keyring := loadKeyring(t, signer)
	ctx := context.Background()
	c := clientFor(srv, true)
	r, err := Resolve(ctx, artifact.Source{HelmRepo: srv.URL + "/charts", Chart: "web", Version: "1.0.0"}, c)
	if err != nil {
		t.Fatal(err)
	}
	data, _, err := Download(ctx, r, c)
	if err != nil {
		t.Fatal(err)
	}
	verify := func() (Signature, error) {
		t.Helper()
		prov, name, err := DownloadProvenance(ctx, r, c)
		if err != nil {
			return Signature{}, err
		}
		if name != "web-1.0.0.tgz" {
			t.Errorf("the archive's name %q, want web-1.0.0.tgz", name)
		}
		return keyring.Verify(name, data, prov)
	}
	sig, err := verify()
	fingerprint := hex.EncodeToString(signer.PrimaryKey.Fingerprint)
	if err != nil || sig.Signer != "signer <signer@example.com>" || sig.Key != fingerprint {
		t.Fatalf("verified %+v, %v; want signed by signer (%s)", sig, err, fingerprint)
	}
	if !keyring.Has(sig.Key) || keyring.Has(hex.EncodeToString(stranger.PrimaryKey.Fingerprint)) || keyring.Has("") {
		t.Error("the keyring holds the signer's key only")
	}

	otherChart := testenv.VersionedChart("web", "1.0.0", "other: values\n", nil)
	for what, c := range map[string]struct {
		prov []byte
		want string
	}{
		"tampered":           {bytes.Replace(good, []byte("name: web"), []byte("name: wab"), 1), "invalid provenance"},
		"signed by stranger": {sign(t, stranger, "web-1.0.0.tgz", archive), "not signed by a key of the worker's keyring"},
		"for other bytes":    {sign(t, signer, "web-1.0.0.tgz", otherChart), "sha256 sum does not match"},
		"for another file":   {sign(t, signer, "web-2.0.0.tgz", archive), "does not contain a SHA for a file named"},
		"not a signature":    {[]byte("hello"), "signature block not found"},
	} {
		files["/charts/web-1.0.0.tgz.prov"] = c.prov
		if _, err := verify(); err == nil || !IsPermanent(err) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want a permanent failure saying %q", what, err, c.want)
		}
	}

	files["/charts/web-1.0.0.tgz.prov"] = good
	*fails = 1
	if _, err := verify(); err == nil || IsPermanent(err) {
		t.Errorf("a 503 for the .prov answered %v, want a transient error", err)
	}
	delete(files, "/charts/web-1.0.0.tgz.prov")
	if _, err := verify(); err == nil || !IsPermanent(err) || !strings.Contains(err.Error(), "no provenance file") || !strings.Contains(err.Error(), r.Ref+".prov: 404") {
		t.Errorf("no .prov: %v, want a permanent failure saying %s.prov is not there", err, r.Ref)
	}

	// A chart at a URL: its URL + ".prov".
	files["/charts/web-1.0.0.tgz.prov"] = good
	u, err := Resolve(ctx, artifact.Source{URL: srv.URL + "/charts/web-1.0.0.tgz", Digest: digest}, c)
	if err != nil {
		t.Fatal(err)
	}
	prov, name, err := DownloadProvenance(ctx, u, c)
	if err != nil {
		t.Fatal(err)
	}
	if sig, err := keyring.Verify(name, data, prov); err != nil || sig.Key != fingerprint {
		t.Errorf("the URL's chart: %+v, %v", sig, err)
	}
}

func TestAKeyringIsAPublicGPGKeyring(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad")
	_ = os.WriteFile(bad, []byte("not a keyring"), 0o600)
	for _, p := range []string{bad, filepath.Join(t.TempDir(), "none")} {
		if _, err := LoadKeyring(p); err == nil || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: %v, want an error naming it", p, err)
		}
	}
}

// An OCI chart's provenance is its manifest's provenance layer (helm push of a signed
// chart), pulled with Helm's registry client; a chart pushed without one fails permanently.
func TestAnOCIChartsProvenanceIsItsProvenanceLayer(t *testing.T) {
	bin, err := testenv.BinDir()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(bin, "registry")); err != nil {
		t.Skip("the OCI registry is not built (make tools):", err)
	}
	port, err := devstack.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	reg := &devstack.Registry{Bin: filepath.Join(bin, "registry"), Dir: t.TempDir(), Port: port, User: "temco"}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := reg.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(reg.Stop)
	push, err := registry.NewClient(registry.ClientOptPlainHTTP(), registry.ClientOptBasicAuth(reg.User, reg.Password),
		registry.ClientOptCredentialsFile(filepath.Join(t.TempDir(), "registry.json")))
	if err != nil {
		t.Fatal(err)
	}
	signer := newKey(t, "signer")
	keyring := loadKeyring(t, signer)
	c := NewClient(ctx, egress.MustParse(reg.Address()), func(host string) (Credential, bool) {
		return Credential{reg.User, reg.Password}, host == reg.Address()
	}, nil)

	signed := testenv.VersionedChart("web", "1.0.0", "", nil)
	if _, err := push.Push(signed, reg.Address()+"/charts/web:1.0.0", registry.PushOptStrictMode(false),
		registry.PushOptProvData(sign(t, signer, "web-1.0.0.tgz", signed))); err != nil {
		t.Fatal(err)
	}
	unsigned := testenv.VersionedChart("api", "1.0.0", "", nil)
	if _, err := push.Push(unsigned, reg.Address()+"/charts/api:1.0.0", registry.PushOptStrictMode(false)); err != nil {
		t.Fatal(err)
	}

	r, err := Resolve(ctx, artifact.Source{OCI: "oci://" + reg.Address() + "/charts/web", Version: "1.0.0", PlainHTTP: true}, c)
	if err != nil {
		t.Fatal(err)
	}
	data, _, err := Download(ctx, r, c)
	if err != nil {
		t.Fatal(err)
	}
	prov, name, err := DownloadProvenance(ctx, r, c)
	if err != nil || name != "web-1.0.0.tgz" {
		t.Fatalf("provenance of %s: %q, %v", r.Ref, name, err)
	}
	if sig, err := keyring.Verify(name, data, prov); err != nil || sig.Signer != "signer <signer@example.com>" {
		t.Errorf("verified %+v, %v", sig, err)
	}

	r, err = Resolve(ctx, artifact.Source{OCI: "oci://" + reg.Address() + "/charts/api", Version: "1.0.0", PlainHTTP: true}, c)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := DownloadProvenance(ctx, r, c); err == nil || !IsPermanent(err) || !strings.Contains(err.Error(), "no provenance file") {
		t.Errorf("a chart pushed unsigned: %v, want a permanent failure saying it has no provenance", err)
	}
}
