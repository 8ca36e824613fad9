package api

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/temco/temco/internal/adapters/egress"
	"github.com/temco/temco/internal/core/artifact/blobs"
	"github.com/temco/temco/internal/core/model"
	"github.com/temco/temco/internal/core/store"
)

// registerArtifacts serves a project's artifact credentials: the logins its charts'
// registries and repositories need, one per host, the password sealed at rest and masked
// in every answer. Only the project's own are ever sent, and only to the host each names.
func (s *Server) registerArtifacts(g *echo.Group) {
	register(g, s, kind[model.ArtifactCredentialSpec]{name: model.KindArtifactCredential, check: checkArtifactCredential,
		coll: "/projects/:project/artifact-credentials", item: "/projects/:project/artifact-credentials/:artifactCredential"})
}

func checkArtifactCredential(ctx context.Context, s *Server, r *request[model.ArtifactCredentialSpec]) error {
	sp := &r.res.Spec
	sp.Host = strings.ToLower(strings.TrimSpace(sp.Host))
	if sp.Host == "" || strings.Contains(sp.Host, ",") {
		return badRequest("spec.host is required: the registry's or repository's host, or host:port")
	}
	if _, err := egress.Parse(sp.Host); err != nil {
		return badRequest("spec.host: %v", err)
	}
	if err := model.ValidateLen("spec.username", sp.Username, 256); err != nil {
		return badRequest("%v", err)
	}
	if err := model.ValidateLen("spec.password", sp.Password, 8192); err != nil {
		return badRequest("%v", err)
	}
	others, err := s.Store.List(ctx, store.Query{Parent: r.parent, Kind: model.KindArtifactCredential, Fields: map[string]string{"host": sp.Host}})
	if err != nil {
		return err
	}
	for _, o := range others {
		if o.ID != r.id {
			return conflict("%s already holds the credentials for host %q", describe(o.ID), sp.Host)
		}
	}
	r.field("host", sp.Host)
	password := sp.Password
	if password == secretMask || password == "" && r.old != nil {
		if r.old == nil || len(r.old.Secret) == 0 {
			return badRequest("spec.password is the mask %q but no password is stored to keep", secretMask)
		}
		if err := sameHost(r.old, sp.Host); err != nil {
			return err
		}
		r.secret = r.old.Secret // the stored one, sealed for this id
		sp.Password = secretMask
		return nil
	}
	if password == "" {
		return badRequest("spec.password is required (a password or token)")
	}
	plain, err := json.Marshal(struct{ Password string }{password})
	if err != nil {
		return err
	}
	if r.secret, err = s.Keys.Seal(plain, []byte(r.id)); err != nil {
		return err
	}
	sp.Password = secretMask
	return nil
}

// sameHost refuses to keep the stored password of a credential moved to another host:
// the host is where the password is sent, so whoever may write the credential but not
// read its password (a tenant, of an admin's) could otherwise send it to a host it reads.
func sameHost(old *store.Doc, host string) error {
	was, err := model.Decode[model.ArtifactCredentialSpec](old.Body)
	if err != nil {
		return err
	}
	if was.Spec.Host != host {
		return badRequest("spec.host changes from %q to %q: a new host needs its password: send it in spec.password", was.Spec.Host, host)
	}
	return nil
}

// artifactGrace spares an artifact used this recently from collection: an operation that
// is pinning it may not have recorded it in its context yet.
const artifactGrace = 10 * time.Minute

// collectArtifacts deletes the stored charts no revision keeps any more (their DIGs were
// deleted, the last revisions holding them with them) and none used lately: a DIG's
// deletion is when revisions go, so it is when charts may go. Leftovers of a deletion
// within the grace go at a later one. Its failure fails nothing: it is logged.
func (s *Server) collectArtifacts(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	n, err := blobs.StoreOf(s.Store).Collect(ctx, time.Now().Add(-artifactGrace), s.Contexts.RefersTo)
	if err != nil {
		s.Log.Warn("collect unused artifacts", "error", err)
	} else if n > 0 {
		s.Log.Info("unused artifacts deleted", "count", n)
	}
}
