package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

const (
	digPath = "/projects/p1/composite-apps/ca/v1/deployment-intent-groups/dig"
	snapA   = "aaaaaaaaaaaaaaaa"
	snapB   = "bbbbbbbbbbbbbbbb"
)

// snapshotAPI answers a DIG's newest snapshot (B) and the diff from A to B, and 404 for
// anything else; it records the requests' paths and tokens.
func snapshotAPI(t *testing.T) (*httptest.Server, *[]string) {
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = append(seen, r.URL.RequestURI()+" "+r.Header.Get("Authorization"))
		switch r.URL.RequestURI() {
		case "/v2" + digPath + "/snapshots?limit=1":
			_, _ = w.Write([]byte(`[{"id":"` + snapB + `","revisions":[{"revision":2}]}]`))
		case "/v2" + digPath + "/snapshots/" + snapA + "/diff/" + snapB:
			_, _ = w.Write([]byte(`{"from":"` + snapA + `","to":"` + snapB + `","changes":[
				{"resource":"` + digPath + `/generic-placement-intents/g/app-intents/web","path":"spec.intent.allOf[0].cluster","op":"changed","from":"c1","to":"c2"},
				{"resource":"` + digPath + `/generic-placement-intents/g/app-intents/web","path":"spec.replicas","op":"added","to":3},
				{"resource":"` + digPath + `/rollout-strategies/rs","path":"","op":"added","to":{"kind":"rolloutStrategy","spec":{}}},
				{"resource":"/projects/p1/composite-apps/ca/v1/apps/db","path":"","op":"removed","from":{"kind":"app"}}]}`))
		case "/v2" + digPath + "/snapshots/" + snapB + "/diff/" + snapB:
			_, _ = w.Write([]byte(`{"from":"` + snapB + `","to":"` + snapB + `","changes":[]}`))
		default:
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"message":"deployment intent group \"dig\" has no snapshot \"cccccccccccccccc\""}`))
		}
	}))
	t.Cleanup(srv.Close)
	return srv, &seen
}

func runDiff(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := diffCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), err
}

// temco diff prints each changed resource with its fields: changed, added, removed, and
// whole resources added or removed with their kind.
func TestDiffPrintsTheChangesReadably(t *testing.T) {
	srv, seen := snapshotAPI(t)
	out, err := runDiff(t, srv.URL+"/v2"+digPath, snapA, snapB, "-t", "tok")
	if err != nil {
		t.Fatal(err)
	}
	want := snapA + " → " + snapB + `: 4 changes

` + digPath + `/generic-placement-intents/g/app-intents/web
  ~ spec.intent.allOf[0].cluster: "c1" → "c2"
  + spec.replicas: 3

` + digPath + `/rollout-strategies/rs
  + added (rolloutStrategy)

/projects/p1/composite-apps/ca/v1/apps/db
  - removed (app)
`
	if out != want {
		t.Errorf("temco diff printed\n%s\nwant\n%s", out, want)
	}
	if len(*seen) != 1 || !strings.HasSuffix((*seen)[0], " Bearer tok") {
		t.Errorf("requests %q: want one, with the token", *seen)
	}
}

// With one snapshot, temco diff compares it with the newest; the DIG may be a path on
// --api, with or without /v2.
func TestDiffWithOneSnapshotComparesWithTheNewest(t *testing.T) {
	for _, dig := range []string{digPath, "/v2" + digPath + "/", strings.TrimPrefix(digPath, "/")} {
		srv, seen := snapshotAPI(t)
		out, err := runDiff(t, dig, snapB, "--api", srv.URL)
		if err != nil {
			t.Fatalf("temco diff %s %s: %v", dig, snapB, err)
		}
		if out != snapB+" → "+snapB+": no change\n" {
			t.Errorf("temco diff %s %s printed %q", dig, snapB, out)
		}
		if len(*seen) != 2 || !strings.HasPrefix((*seen)[0], "/v2"+digPath+"/snapshots?limit=1 ") {
			t.Errorf("requests %q: want the newest snapshot, then the diff", *seen)
		}
	}
}

// What the API refuses reaches the user as its message; what is not a DIG is refused
// before any request.
func TestDiffReportsRefusals(t *testing.T) {
	srv, seen := snapshotAPI(t)
	if _, err := runDiff(t, digPath, "cccccccccccccccc", snapB, "--api", srv.URL); err == nil ||
		!strings.Contains(err.Error(), `404 deployment intent group "dig" has no snapshot "cccccccccccccccc"`) {
		t.Errorf("unknown snapshot: %v", err)
	}
	for _, bad := range []string{"/projects/p1", srv.URL + "/v2/projects/p1/composite-apps/ca/v1", digPath + "/snapshots"} {
		n := len(*seen)
		if _, err := runDiff(t, bad, snapA, "--api", srv.URL); err == nil || !strings.Contains(err.Error(), "is not a DIG") {
			t.Errorf("temco diff %s: %v, want it refused as not a DIG", bad, err)
		}
		if len(*seen) != n {
			t.Errorf("temco diff %s sent a request", bad)
		}
	}
	if _, err := runDiff(t, digPath, snapA, "-o", "yaml", "--api", srv.URL); err == nil || !strings.Contains(err.Error(), "use text or json") {
		t.Errorf("-o yaml: %v", err)
	}
}
