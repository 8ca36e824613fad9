package seal

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func key(b byte) []byte { return bytes.Repeat([]byte{b}, 32) }

func TestSealOpenAndRotation(t *testing.T) {
	old, err := NewKeyring([]string{"k1"}, [][]byte{key(1)})
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := old.Seal([]byte("secret kubeconfig"), []byte("/cluster-providers/p/clusters/a"))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(sealed, []byte("secret")) {
		t.Fatal("plaintext visible in the sealed value")
	}
	// Rotated: k2 is primary, k1 still opens old values.
	rotated, _ := NewKeyring([]string{"k2", "k1"}, [][]byte{key(2), key(1)})
	plain, err := rotated.Open(sealed, []byte("/cluster-providers/p/clusters/a"))
	if err != nil || string(plain) != "secret kubeconfig" {
		t.Fatalf("open after rotation: %q %v", plain, err)
	}
	resealed, _ := rotated.Seal(plain, []byte("x"))
	if _, err := old.Open(resealed, []byte("x")); err == nil || !strings.Contains(err.Error(), `unknown key "k2"`) {
		t.Errorf("old keyring opened a value of a newer key: %v", err)
	}
	// Bound to its owner: a value copied to another resource does not open.
	if _, err := rotated.Open(sealed, []byte("/cluster-providers/p/clusters/b")); err == nil {
		t.Error("a sealed value opened under another resource's id")
	}
	sealed[len(sealed)-1] ^= 1
	if _, err := rotated.Open(sealed, []byte("/cluster-providers/p/clusters/a")); err == nil {
		t.Error("a tampered value opened")
	}
}

func TestKeyFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys")
	if err := WriteNewKeyFile(path, "k1"); err != nil {
		t.Fatal(err)
	}
	first, _ := os.ReadFile(path)
	if err := WriteNewKeyFile(path, "k1"); err != nil { // an existing file is kept
		t.Fatal(err)
	}
	second, _ := os.ReadFile(path)
	if !bytes.Equal(first, second) {
		t.Fatal("an existing key file was overwritten")
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("key file mode %v, want 0600", fi.Mode().Perm())
	}
	k, err := LoadKeyFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := k.Seal([]byte("x"), nil); err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{"short key": "k1 AAAA\n", "no key": "k1\n", "not base64": "k1 !!!\n", "empty": "# nothing\n"} {
		p := filepath.Join(t.TempDir(), "k")
		_ = os.WriteFile(p, []byte(content), 0o600)
		if _, err := LoadKeyFile(p); err == nil {
			t.Errorf("%s: loaded", name)
		}
	}
}
