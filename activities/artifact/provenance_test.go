package artifact

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"helm.sh/helm/v3/pkg/provenance"

	"github.com/temco/temco/internal/adapters/egress"
	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/artifact"
	"github.com/temco/temco/internal/core/artifact/blobs"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/model"
	"github.com/temco/temco/internal/core/store"
	"github.com/temco/temco/internal/dev/testenv"
)

// provRepo is a Helm repository of one chart, web 1.0.0, whose .prov may be set or removed.
type provRepo struct {
	mu    sync.Mutex
	files map[string][]byte
}

func (p *provRepo) set(name string, data []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if data == nil {
		delete(p.files, name)
		return
	}
	p.files[name] = data
}

func (p *provRepo) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	data, ok := p.files[r.URL.Path]
	p.mu.Unlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	_, _ = w.Write(data)
}

func signingKey(t *testing.T, name string) *openpgp.Entity {
	t.Helper()
	e, err := openpgp.NewEntity(name, "", name+"@example.com", &packet.Config{Algorithm: packet.PubKeyAlgoEdDSA})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func keyringFile(t *testing.T, key *openpgp.Entity) string {
	t.Helper()
	var buf bytes.Buffer
	if err := key.Serialize(&buf); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "pubring.gpg")
	if err := os.WriteFile(p, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func clearSign(t *testing.T, key *openpgp.Entity, name string, archive []byte) []byte {
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

// With the worker's keyring, a chart is stored only with a valid provenance, its signer in
// the status and the store; a chart stored before without one (no keyring then), or
// verified by a key the keyring no longer holds, is fetched and verified again; a missing
// provenance or a signer not in the keyring fails the app's artifact at Verifying, for good.
func TestChartsAreStoredOnlyWithAProvenanceTheKeyringVerifies(t *testing.T) {
	ferret, err := testenv.StartFerretDB(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ferret.Stop)
	ctx := context.Background()
	db := testenv.Database(t, ferret, "artifact_provenance")

	archive := testenv.VersionedChart("web", "1.0.0", "", map[string]string{"cm.yaml": "kind: ConfigMap\n"})
	repo := &provRepo{files: map[string][]byte{
		"/charts/web-1.0.0.tgz": archive,
		"/charts/index.yaml": fmt.Appendf(nil, "apiVersion: v1\nentries:\n  web:\n  - name: web\n    version: 1.0.0\n    digest: %s\n    urls: [web-1.0.0.tgz]\n",
			strings.TrimPrefix(artifact.Digest(archive), "sha256:")),
	}}
	srv := httptest.NewServer(repo)
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)

	dig := lifecycle.Target{Project: "p", CompositeApp: "ca", Version: "v1", DIG: "d"}
	a := &Activities{Allow: egress.MustParse(u.Host), Blobs: blobs.NewStore(db)}
	if a.Store, err = store.New(ctx, db); err != nil {
		t.Fatal(err)
	}
	if a.Contexts, err = appctx.New(ctx, db); err != nil {
		t.Fatal(err)
	}
	for _, d := range []*store.Doc{
		{ID: "/projects/p", Kind: model.KindProject, Name: "p", Body: `{"metadata":{"name":"p"},"spec":{}}`},
		{ID: dig.CompositeAppID(), Parent: "/projects/p", Kind: model.KindCompositeApp, Name: "ca", Body: `{"metadata":{"name":"ca"},"spec":{}}`},
		{ID: dig.ID(), Kind: model.KindDIG, Name: "d", Body: `{"metadata":{"name":"d"},"spec":{}}`},
		{ID: dig.CompositeAppID() + "/apps/web", Parent: dig.CompositeAppID(), Kind: model.KindApp, Name: "web",
			Body: `{"metadata":{"name":"web"},"spec":{"chart":{"helmRepo":"` + srv.URL + `/charts","chart":"web","version":"1.0.0"}}}`},
	} {
		d.LooseRefs = true
		if err := a.Store.Create(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Contexts.Create(ctx, &appctx.Context{ID: "c1", DIG: dig.ID(), Instance: "c1", Revision: 1}); err != nil {
		t.Fatal(err)
	}
	ref := lifecycle.ContextRef{Target: dig, ContextID: "c1"}
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	env.RegisterActivity(a)

	// deploy runs the pipeline as workflows/artifact does, returning how many charts it
	// fetched, FetchArtifact's error, and the app's status.
	deploy := func() (int, error, artifact.Status) {
		t.Helper()
		n, err, h := runPipeline(t, env, a, ref)
		return n, err, h.Artifacts["web"]
	}
	final := func(err error) bool {
		var app *temporal.ApplicationError
		return errors.As(err, &app) && app.NonRetryable()
	}

	// No keyring: nothing is asked of the chart.
	if n, err, st := deploy(); n != 1 || err != nil || st.Stage != artifact.StageStored || st.Signer != "" {
		t.Fatalf("without a keyring: fetched %d, %v, %+v", n, err, st)
	}

	// A keyring: the chart stored unverified is fetched again, and has no provenance.
	signer := signingKey(t, "signer")
	a.Keyring = keyringFile(t, signer)
	n, err, st := deploy()
	if n != 1 || !final(err) || st.Stage != artifact.StageFailed || st.Retrying ||
		!strings.Contains(st.Error, `app "web"`) || !strings.Contains(st.Error, "chart "+srv.URL+"/charts/web-1.0.0.tgz: no provenance file") {
		t.Fatalf("no provenance: fetched %d, %v, %+v; want a final failure at Verifying naming the chart", n, err, st)
	}

	// Signed: stored with its signer, then found in the store, verified.
	repo.set("/charts/web-1.0.0.tgz.prov", clearSign(t, signer, "web-1.0.0.tgz", archive))
	if n, err, st := deploy(); n != 1 || err != nil || st.Stage != artifact.StageStored || st.Signer != "signer <signer@example.com>" {
		t.Fatalf("signed: fetched %d, %v, %+v", n, err, st)
	}
	e, ok, err := a.Blobs.Lookup(ctx, artifact.Digest(archive))
	if err != nil || !ok || e.Signer != "signer <signer@example.com>" || e.SignerKey != hex.EncodeToString(signer.PrimaryKey.Fingerprint) {
		t.Fatalf("the store's entry %+v, %v %v", e, ok, err)
	}
	if n, err, st := deploy(); n != 0 || err != nil || st.Stage != artifact.StageStored || !st.Cached || st.Signer != "signer <signer@example.com>" {
		t.Fatalf("stored and verified: fetched %d, %v, %+v; want it found in the store", n, err, st)
	}

	// The keyring now holds another key only: the stored chart is verified again, and refused.
	a.Keyring = keyringFile(t, signingKey(t, "other"))
	n, err, st = deploy()
	if n != 1 || !final(err) || st.Stage != artifact.StageFailed || !strings.Contains(st.Error, "not signed by a key of the worker's keyring") {
		t.Fatalf("a signer not in the keyring: fetched %d, %v, %+v; want a final failure", n, err, st)
	}
}
