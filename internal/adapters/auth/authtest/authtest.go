// Package authtest is a token issuer for tests: an ECDSA key, its public key as PEM and as
// a JWKS document, and signed tokens with any claims.
package authtest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"time"

	"github.com/go-jose/go-jose/v4"
)

// Issuer signs tokens as Name for Audience.
type Issuer struct {
	Name, Audience string
	key            *ecdsa.PrivateKey
	signer         jose.Signer
}

// New makes an issuer with a fresh P-256 key.
func New(name, audience string) (*Issuer, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: jose.JSONWebKey{Key: key, KeyID: "test-1"}},
		(&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		return nil, err
	}
	return &Issuer{Name: name, Audience: audience, key: key, signer: signer}, nil
}

// PublicKeyPEM is the verification key as a PEM "PUBLIC KEY" block.
func (i *Issuer) PublicKeyPEM() []byte {
	der, _ := x509.MarshalPKIXPublicKey(&i.key.PublicKey)
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

// JWKS serves the verification key as a JSON Web Key Set.
func (i *Issuer) JWKS() http.Handler {
	set := jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &i.key.PublicKey, KeyID: "test-1", Algorithm: "ES256", Use: "sig"}}}
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(set)
	})
}

// Token signs a token for subject with roles, valid for an hour; extra overrides or adds claims.
func (i *Issuer) Token(subject string, roles []string, extra map[string]any) string {
	now := time.Now()
	claims := map[string]any{"iss": i.Name, "aud": i.Audience, "sub": subject, "roles": roles,
		"iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}
	for k, v := range extra {
		claims[k] = v
	}
	payload, err := json.Marshal(claims)
	if err != nil {
		panic(err)
	}
	jws, err := i.signer.Sign(payload)
	if err != nil {
		panic(err)
	}
	raw, err := jws.CompactSerialize()
	if err != nil {
		panic(err)
	}
	return raw
}
