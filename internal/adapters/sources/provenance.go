package sources

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	pgperrors "github.com/ProtonMail/go-crypto/openpgp/errors"
	"helm.sh/helm/v3/pkg/provenance"

	"github.com/temco/temco/internal/core/artifact"
)

// Provenance: when the worker has a keyring (--chart-keyring), a chart is used only if its
// provenance file (what `helm package --sign` writes beside the archive) is signed by a key
// of the keyring and names the archive's sha256, as `helm verify --keyring` checks it, with
// Helm's own provenance package. Each transport fetches the file where Helm looks for it.

// DownloadProvenance fetches the provenance file of what r pins, and the archive's file
// name it signs for. A source without one fails permanently; one that does not answer is
// tried again.
func DownloadProvenance(ctx context.Context, r artifact.Resolved, c *Client) (prov []byte, name string, err error) {
	t, ok := transports[r.Transport]
	if !ok {
		return nil, "", Permanent(fmt.Errorf("no transport %q", r.Transport))
	}
	prov, name, err = t.Provenance(ctx, r, c)
	if err != nil {
		if IsPermanent(err) {
			return nil, "", Permanent(fmt.Errorf("no provenance file (the worker's --chart-keyring requires one): %w", err))
		}
		return nil, "", err
	}
	if len(prov) == 0 {
		return nil, "", Permanent(errors.New("no provenance file (the worker's --chart-keyring requires one): it is empty"))
	}
	return prov, name, nil
}

// provenanceURL is where Helm looks for an archive's provenance: its URL + ".prov"; and
// the archive's file name (the last element of the URL's path).
func provenanceURL(ctx context.Context, r artifact.Resolved, c *Client) ([]byte, string, error) {
	u, err := urlOf(r.Ref)
	if err != nil {
		return nil, "", err
	}
	prov, err := get(ctx, c, r.Ref+".prov", u.Host, 0)
	return prov, path.Base(u.Path), err
}

// Keyring is the public keys charts' provenance must be signed with.
type Keyring struct{ sig *provenance.Signatory }

// LoadKeyring reads a public GPG keyring (binary, as `gpg --export` writes it and `helm
// verify --keyring` takes it).
func LoadKeyring(file string) (*Keyring, error) {
	sig, err := provenance.NewFromKeyring(file, "")
	if err != nil {
		return nil, fmt.Errorf("keyring %s: %w (a binary public keyring, as gpg --export writes)", file, err)
	}
	if len(sig.KeyRing) == 0 {
		return nil, fmt.Errorf("keyring %s holds no key", file)
	}
	return &Keyring{sig: sig}, nil
}

// Has reports whether the keyring holds the key of fingerprint (as Signature.Key gives it).
func (k *Keyring) Has(fingerprint string) bool {
	if fingerprint == "" {
		return false
	}
	for _, e := range k.sig.KeyRing {
		if e.PrimaryKey != nil && strings.EqualFold(hex.EncodeToString(e.PrimaryKey.Fingerprint), fingerprint) {
			return true
		}
	}
	return false
}

// Signature is who signed a verified provenance.
type Signature struct {
	Signer string // the key's identity: "Name (comment) <email>"
	Key    string // the key's fingerprint (hex)
}

// Verify checks that prov, the provenance file of archive (whose file name it signs for
// is name), is signed by a key of the keyring and names archive's sha256. Any failure is
// permanent.
func (k *Keyring) Verify(name string, archive, prov []byte) (Signature, error) {
	dir, err := os.MkdirTemp("", "temco-provenance-")
	if err != nil {
		return Signature{}, err
	}
	defer os.RemoveAll(dir)
	name = filepath.Base(filepath.Clean("/" + name))
	if name == "/" || name == "." {
		name = "chart.tgz"
	}
	chartFile := filepath.Join(dir, name)
	if err := os.WriteFile(chartFile, archive, 0o600); err != nil {
		return Signature{}, err
	}
	if err := os.WriteFile(chartFile+".prov", prov, 0o600); err != nil {
		return Signature{}, err
	}
	v, err := k.sig.Verify(chartFile, chartFile+".prov")
	if errors.Is(err, pgperrors.ErrUnknownIssuer) {
		return Signature{}, Permanent(fmt.Errorf("provenance not signed by a key of the worker's keyring (--chart-keyring): %w", err))
	}
	if err != nil {
		return Signature{}, Permanent(fmt.Errorf("invalid provenance: %w", err))
	}
	if v.SignedBy == nil || v.SignedBy.PrimaryKey == nil {
		return Signature{}, Permanent(errors.New("invalid provenance: no signer"))
	}
	return Signature{Signer: signer(v), Key: hex.EncodeToString(v.SignedBy.PrimaryKey.Fingerprint)}, nil
}

// signer names the key that signed: its primary identity, else its key id.
func signer(v *provenance.Verification) string {
	if id := v.SignedBy.PrimaryIdentity(); id != nil && id.Name != "" {
		return id.Name
	}
	names := make([]string, 0, len(v.SignedBy.Identities))
	for n := range v.SignedBy.Identities {
		names = append(names, n)
	}
	slices.Sort(names)
	if len(names) > 0 {
		return names[0]
	}
	return "key " + strings.ToUpper(v.SignedBy.PrimaryKey.KeyIdString())
}
