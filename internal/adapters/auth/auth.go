// Package auth authenticates API callers by OIDC-style JWT bearer tokens (signature,
// issuer, audience, expiry) and turns the token's roles into a Principal: an admin, or a
// tenant granted a set of projects.
package auth

import (
	"context"
	"crypto"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/coreos/go-oidc/v3/oidc"
)

// ProjectRolePrefix starts a role granting one project: "project:<name>".
const ProjectRolePrefix = "project:"

// Config selects the token issuer and how roles are read. Exactly one of JWKSURL and
// PublicKeyFile names the signing keys.
type Config struct {
	Issuer        string // required "iss"
	Audience      string // required in "aud"
	JWKSURL       string // the issuer's JSON Web Key Set, fetched and refreshed on unknown key ids
	PublicKeyFile string // PEM public keys or certificates (several for rotation)
	RolesClaim    string // claim holding the roles; dotted for nested claims ("realm_access.roles"); default "roles"
	AdminRole     string // role of administrators; default "admin"
	// ControllerRole is the role of intent controllers outside temco's process
	// (contract/remote): they read and edit operations' contexts and nothing else;
	// default "controller".
	ControllerRole string
}

// Principal is an authenticated caller.
type Principal struct {
	Subject    string
	Admin      bool
	Controller bool // an external intent controller's: contexts' controller views only
	// Delegate is who sent a request narrowed to one project (AsProject): temco hub,
	// acting for a namespace bound to that project. Only what belongs to the sender itself
	// (the hub's ownership of what it wrote) is read from it, never a right of the tenant.
	Delegate *Principal
	// Agent is the cluster (provider+cluster) whose temco agent sent the request, with its
	// own credential (not a JWT): it reaches /v2/agent/... only.
	Agent    string
	projects map[string]bool
}

// AgentOf is the principal of cluster key's agent.
func AgentOf(key string) *Principal {
	return &Principal{Subject: "agent of cluster " + key, Agent: key}
}

// Anonymous is every caller when authentication is off: an admin.
func Anonymous() *Principal { return &Principal{Admin: true} }

// AsProject is p narrowed to project: a tenant of that project alone, with p as its
// delegate, so that everything after authentication applies exactly the tenant's rules.
// Narrowing never widens: ok is false when p may not access the project itself.
func (p *Principal) AsProject(project string) (*Principal, bool) {
	if !p.CanAccessProject(project) {
		return nil, false
	}
	subject := ProjectRolePrefix + project
	if p.Subject != "" {
		subject = p.Subject + " as " + subject
	}
	return &Principal{Subject: subject, Delegate: p, projects: map[string]bool{project: true}}, true
}

// DelegatedByAdmin reports whether p is an admin's request narrowed to a project.
func (p *Principal) DelegatedByAdmin() bool { return p.Delegate != nil && p.Delegate.Admin }

// Tenant reports whether p holds a project role.
func (p *Principal) Tenant() bool { return len(p.projects) > 0 }

// CanAccessProject reports whether p may read and change project name and everything under it.
func (p *Principal) CanAccessProject(name string) bool { return p.Admin || p.projects[name] }

// Authenticator verifies bearer tokens.
type Authenticator struct {
	verifier       *oidc.IDTokenVerifier
	rolesClaim     []string
	adminRole      string
	controllerRole string
}

// algorithms accepted in token headers: every asymmetric JOSE algorithm (never "none" or HMAC,
// whose key would have to be shared with every verifier).
var algorithms = []string{oidc.RS256, oidc.RS384, oidc.RS512, oidc.ES256, oidc.ES384, oidc.ES512,
	oidc.PS256, oidc.PS384, oidc.PS512, oidc.EdDSA}

// New builds an Authenticator. ctx bounds the background JWKS fetches: pass the process's.
func New(ctx context.Context, cfg Config) (*Authenticator, error) {
	if cfg.Issuer == "" || cfg.Audience == "" {
		return nil, errors.New("auth: issuer and audience are required")
	}
	var keys oidc.KeySet
	switch {
	case cfg.JWKSURL != "" && cfg.PublicKeyFile != "":
		return nil, errors.New("auth: give a JWKS URL or a public key file, not both")
	case cfg.JWKSURL != "":
		keys = oidc.NewRemoteKeySet(ctx, cfg.JWKSURL)
	case cfg.PublicKeyFile != "":
		pub, err := LoadPublicKeys(cfg.PublicKeyFile)
		if err != nil {
			return nil, err
		}
		keys = &oidc.StaticKeySet{PublicKeys: pub}
	default:
		return nil, errors.New("auth: a JWKS URL or a public key file is required")
	}
	claim := cfg.RolesClaim
	if claim == "" {
		claim = "roles"
	}
	admin := cfg.AdminRole
	if admin == "" {
		admin = "admin"
	}
	controller := cfg.ControllerRole
	if controller == "" {
		controller = "controller"
	}
	return &Authenticator{
		verifier:   oidc.NewVerifier(cfg.Issuer, keys, &oidc.Config{ClientID: cfg.Audience, SupportedSigningAlgs: algorithms}),
		rolesClaim: strings.Split(claim, "."), adminRole: admin, controllerRole: controller,
	}, nil
}

// Authenticate verifies a raw token and returns its principal. Errors are safe to show the caller.
func (a *Authenticator) Authenticate(ctx context.Context, raw string) (*Principal, error) {
	tok, err := a.verifier.Verify(ctx, raw)
	if err != nil {
		var expired *oidc.TokenExpiredError
		if errors.As(err, &expired) {
			return nil, fmt.Errorf("token expired at %s", expired.Expiry.UTC().Format("2006-01-02T15:04:05Z"))
		}
		return nil, fmt.Errorf("invalid token: %s", strings.TrimPrefix(err.Error(), "oidc: "))
	}
	var claims map[string]any
	if err := tok.Claims(&claims); err != nil {
		return nil, fmt.Errorf("invalid token claims: %w", err)
	}
	p := &Principal{Subject: tok.Subject, projects: map[string]bool{}}
	for _, role := range roles(claims, a.rolesClaim) {
		switch {
		case role == a.adminRole:
			p.Admin = true
		case role == a.controllerRole:
			p.Controller = true
		case strings.HasPrefix(role, ProjectRolePrefix) && len(role) > len(ProjectRolePrefix):
			p.projects[role[len(ProjectRolePrefix):]] = true
		}
	}
	return p, nil
}

// roles reads the claim at path: a JSON array of strings, or one space-separated string
// (as OAuth "scope"). Anything else grants nothing.
func roles(claims map[string]any, path []string) []string {
	var v any = claims
	for _, k := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	switch r := v.(type) {
	case string:
		return strings.Fields(r)
	case []any:
		out := make([]string, 0, len(r))
		for _, e := range r {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// LoadPublicKeys reads PEM "PUBLIC KEY" and "CERTIFICATE" blocks; a file with several keys
// lets a signing key be rotated without downtime.
func LoadPublicKeys(path string) ([]crypto.PublicKey, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("auth: read public key file: %w", err)
	}
	var keys []crypto.PublicKey
	for {
		var block *pem.Block
		if block, data = pem.Decode(data); block == nil {
			break
		}
		switch block.Type {
		case "PUBLIC KEY":
			k, err := x509.ParsePKIXPublicKey(block.Bytes)
			if err != nil {
				return nil, fmt.Errorf("auth: %s: %w", path, err)
			}
			keys = append(keys, k)
		case "CERTIFICATE":
			c, err := x509.ParseCertificate(block.Bytes)
			if err != nil {
				return nil, fmt.Errorf("auth: %s: %w", path, err)
			}
			keys = append(keys, c.PublicKey)
		}
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("auth: %s holds no PEM public key or certificate", path)
	}
	return keys, nil
}

// Projects lists the projects granted to p by name, sorted (none for an admin, who has all).
func (p *Principal) Projects() []string {
	return slices.Sorted(maps.Keys(p.projects))
}
