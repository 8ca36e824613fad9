// Package seal encrypts secrets at rest (kubeconfigs, generated credentials) with
// AES-256-GCM. A sealed value names the key that sealed it, so keys can be rotated:
// new values use the primary key, old values still open with the key they name.
package seal

import (
	"bufio"
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"strings"
)

// format version of a sealed value: 1 byte version, 1 byte key-id length, key id, nonce, ciphertext.
const version = 1

// Keyring holds the keys a process can open with; the primary one seals.
type Keyring struct {
	primary string
	aeads   map[string]cipher.AEAD
}

// NewKeyring builds a keyring from key ids and 32-byte keys; the first id is primary.
func NewKeyring(ids []string, keys [][]byte) (*Keyring, error) {
	if len(ids) == 0 || len(ids) != len(keys) {
		return nil, errors.New("seal: at least one key is required")
	}
	k := &Keyring{primary: ids[0], aeads: map[string]cipher.AEAD{}}
	for i, id := range ids {
		if id == "" || len(id) > 255 {
			return nil, fmt.Errorf("seal: key id %q must be 1..255 bytes", id)
		}
		if len(keys[i]) != 32 {
			return nil, fmt.Errorf("seal: key %q must be 32 bytes (AES-256), got %d", id, len(keys[i]))
		}
		block, err := aes.NewCipher(keys[i])
		if err != nil {
			return nil, err
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, err
		}
		k.aeads[id] = aead
	}
	return k, nil
}

// LoadKeyFile reads a key file: one "<id> <base64 32-byte key>" per line, primary first;
// blank lines and lines starting with # are ignored.
func LoadKeyFile(path string) (*Keyring, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("seal: read key file: %w", err)
	}
	var ids []string
	var keys [][]byte
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		id, enc, ok := strings.Cut(line, " ")
		if !ok {
			return nil, fmt.Errorf("seal: %s line %d: want \"<id> <base64 key>\"", path, n)
		}
		key, err := base64.StdEncoding.DecodeString(strings.TrimSpace(enc))
		if err != nil {
			return nil, fmt.Errorf("seal: %s line %d: key is not base64", path, n)
		}
		ids, keys = append(ids, id), append(keys, key)
	}
	return NewKeyring(ids, keys)
}

// WriteNewKeyFile creates path with one fresh random key (mode 0600) unless it exists.
func WriteNewKeyFile(path, id string) error {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return nil
	}
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(f, "# temco encryption keys: <id> <base64 AES-256 key>, primary first\n%s %s\n",
		id, base64.StdEncoding.EncodeToString(key))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// Primary is the id of the key new values are sealed with.
func (k *Keyring) Primary() string { return k.primary }

// Seal encrypts plaintext with the primary key; aad binds it to its owner (e.g. the resource path).
func (k *Keyring) Seal(plaintext, aad []byte) ([]byte, error) {
	aead := k.aeads[k.primary]
	out := make([]byte, 0, 2+len(k.primary)+aead.NonceSize()+len(plaintext)+aead.Overhead())
	out = append(out, version, byte(len(k.primary)))
	out = append(out, k.primary...)
	nonce := make([]byte, aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	out = append(out, nonce...)
	return aead.Seal(out, nonce, plaintext, aad), nil
}

// Open decrypts a value produced by Seal with the same aad.
func (k *Keyring) Open(sealed, aad []byte) ([]byte, error) {
	if len(sealed) < 2 || sealed[0] != version || len(sealed) < 2+int(sealed[1]) {
		return nil, errors.New("seal: not a sealed value")
	}
	id := string(sealed[2 : 2+int(sealed[1])])
	aead, ok := k.aeads[id]
	if !ok {
		return nil, fmt.Errorf("seal: value sealed with unknown key %q", id)
	}
	rest := sealed[2+len(id):]
	if len(rest) < aead.NonceSize() {
		return nil, errors.New("seal: truncated value")
	}
	plain, err := aead.Open(nil, rest[:aead.NonceSize()], rest[aead.NonceSize():], aad)
	if err != nil {
		return nil, fmt.Errorf("seal: open with key %q: authentication failed", id)
	}
	return plain, nil
}
