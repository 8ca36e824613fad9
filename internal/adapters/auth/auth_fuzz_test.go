package auth_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/temco/temco/internal/adapters/auth"
	"github.com/temco/temco/internal/adapters/auth/authtest"
)

// No bearer token but a genuine one is accepted, and none makes the verifier panic.
func FuzzAuthenticate(f *testing.F) {
	iss, err := authtest.New("https://issuer.test", "temco")
	if err != nil {
		f.Fatal(err)
	}
	keyFile := filepath.Join(f.TempDir(), "k.pem")
	if err := os.WriteFile(keyFile, iss.PublicKeyPEM(), 0o600); err != nil {
		f.Fatal(err)
	}
	a, err := auth.New(context.Background(), auth.Config{Issuer: "https://issuer.test", Audience: "temco", PublicKeyFile: keyFile})
	if err != nil {
		f.Fatal(err)
	}
	good := iss.Token("u", []string{"admin"}, nil)
	if _, err := a.Authenticate(context.Background(), good); err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(strings.Replace(good, ".", "..", 1))
	parts := strings.Split(good, ".")
	f.Add("eyJhbGciOiJub25lIn0." + parts[1] + ".")
	f.Add("eyJhbGciOiJIUzI1NiJ9." + parts[1] + "." + parts[2])
	f.Add(parts[0] + "." + parts[1] + "x." + parts[2])
	f.Fuzz(func(t *testing.T, token string) {
		// The signature covers the exact header.payload text; only the encoding of the
		// signature itself may vary (non-canonical base64 padding bits).
		p, err := a.Authenticate(context.Background(), token)
		if err == nil && !strings.HasPrefix(token, parts[0]+"."+parts[1]+".") {
			t.Fatalf("a forged token was accepted: %q as %+v", token, p)
		}
	})
}
