package events

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"
)

var at = time.Date(2026, 12, 7, 10, 30, 0, 0, time.UTC)

func failedOperation() *Event {
	e := &Event{ID: ID("ctx1", OperationFailed), Type: OperationFailed, Time: at, Summary: "instantiate of p1/ca/v1/d1 failed",
		Details: map[string]any{"context": "ctx1"}}
	return e.About("/projects/p1/composite-apps/ca/v1/deployment-intent-groups/d1")
}

// A cloudevents receiver gets CloudEvents 1.0 in structured JSON: the event is the data,
// its type under io.temco., its source the project's path (the fleet's for its own).
func TestCloudEventIsStructuredCloudEvents10(t *testing.T) {
	for _, c := range []struct {
		name   string
		e      *Event
		source string
	}{
		{"a project's event", failedOperation(), "/v2/projects/p1"},
		{"the fleet's event", (&Event{ID: "e2", Type: ClusterUnreachable, Time: at.In(time.FixedZone("X", 3600)), Summary: "down"}).AboutCluster("cp+c1", nil), "/v2"},
	} {
		t.Run(c.name, func(t *testing.T) {
			b, err := CloudEvent(c.e)
			if err != nil {
				t.Fatal(err)
			}
			var got map[string]any
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatal(err)
			}
			want := map[string]any{"specversion": "1.0", "id": c.e.ID, "source": c.source, "type": "io.temco." + c.e.Type,
				"time": "2026-12-07T10:30:00Z", "subject": c.e.Resource, "datacontenttype": "application/json"}
			for k, v := range want {
				if got[k] != v {
					t.Errorf("%s = %v, want %v", k, got[k], v)
				}
			}
			data, ok := got["data"].(map[string]any)
			if !ok || data["id"] != c.e.ID || data["type"] != c.e.Type || data["summary"] != c.e.Summary || data["resource"] != c.e.Resource {
				t.Errorf("data %v, want the event", got["data"])
			}
		})
	}
}

func TestSlackBodyIsItsText(t *testing.T) {
	b, err := Slack(failedOperation())
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]string
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got["text"] != "temco: instantiate of p1/ca/v1/d1 failed (operation.failed)" {
		t.Errorf("slack body %s", b)
	}
}

// Signatures are Standard Webhooks': "v1," and the base64 HMAC-SHA256 of
// "id.timestamp.body", keyed by the secret's bytes or, for "whsec_<base64>", the key it
// encodes; Verify takes one of several signatures and refuses anything changed.
func TestSignAndVerify(t *testing.T) {
	body := []byte(`{"id":"e1"}`)
	key := []byte("a key of 24 bytes, exact")
	whsec := "whsec_" + base64.StdEncoding.EncodeToString(key)
	ts := strconv.FormatInt(at.Unix(), 10)

	mac := hmac.New(sha256.New, key)
	mac.Write([]byte("e1." + ts + "." + string(body)))
	want := "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
	if got := Sign(whsec, "e1", at, body); got != want {
		t.Errorf("whsec_ secret: signature %s, want %s (the key it encodes)", got, want)
	}
	if got := Sign(string(key), "e1", at, body); got != want {
		t.Errorf("plain secret: signature %s, want %s (its own bytes)", got, want)
	}
	// A "whsec_" secret that is no base64 is its own bytes, prefix included.
	mac = hmac.New(sha256.New, []byte("whsec_not base64!"))
	mac.Write([]byte("e1." + ts + "." + string(body)))
	if got := Sign("whsec_not base64!", "e1", at, body); got != "v1,"+base64.StdEncoding.EncodeToString(mac.Sum(nil)) {
		t.Errorf("a whsec_ secret that is no base64: signature %s, not with its own bytes", got)
	}

	sig := Sign(whsec, "e1", at, body)
	for _, c := range []struct {
		name                 string
		secret, id, ts, sigs string
		body                 []byte
		want                 bool
	}{
		{"as signed", whsec, "e1", ts, sig, body, true},
		{"among several signatures", whsec, "e1", ts, "v1,b3RoZXI= " + sig, body, true},
		{"the plain form of the same key", string(key), "e1", ts, sig, body, true},
		{"a tampered body", whsec, "e1", ts, sig, []byte(`{"id":"e2"}`), false},
		{"another id", whsec, "e2", ts, sig, body, false},
		{"another time", whsec, "e1", strconv.FormatInt(at.Unix()+1, 10), sig, body, false},
		{"a timestamp that is no number", whsec, "e1", "now", sig, body, false},
		{"another secret", "whsec_" + base64.StdEncoding.EncodeToString([]byte("another key")), "e1", ts, sig, body, false},
		{"no signature", whsec, "e1", ts, "", body, false},
		{"the signature without its version", whsec, "e1", ts, strings.TrimPrefix(sig, "v1,"), body, false},
	} {
		if got := Verify(c.secret, c.id, c.ts, c.sigs, c.body); got != c.want {
			t.Errorf("%s: Verify %v, want %v", c.name, got, c.want)
		}
	}
}

// An event's id is derived from what makes it unique: the same parts the same id, any
// other part another (the separator keeps "a"+"bc" from "ab"+"c").
func TestIDIsStable(t *testing.T) {
	a := ID("ctx1", OperationFailed)
	if a != ID("ctx1", OperationFailed) {
		t.Error("the same parts gave two ids")
	}
	if len(a) != 32 || strings.Trim(a, "0123456789abcdef") != "" {
		t.Errorf("id %q is not 32 hex digits", a)
	}
	for _, other := range []string{ID("ctx2", OperationFailed), ID("ctx1", OperationSucceeded), ID("ctx1"), ID("ctx1", OperationFailed, "")} {
		if other == a {
			t.Errorf("other parts gave the same id %s", a)
		}
	}
	if ID("a", "bc") == ID("ab", "c") {
		t.Error(`"a","bc" and "ab","c" have one id`)
	}
}

func TestAbout(t *testing.T) {
	for _, c := range []struct {
		id                        string
		project, ca, version, dig string
		name                      string
	}{
		{id: "/projects/p1/composite-apps/ca/v1/deployment-intent-groups/d1", project: "p1", ca: "ca", version: "v1", dig: "d1", name: "p1/ca/v1/d1"},
		{id: "/projects/p1/logical-clouds/lc1", project: "p1", name: "/projects/p1/logical-clouds/lc1"},
		{id: "/projects/p1/composite-apps/ca/v1", project: "p1", name: "/projects/p1/composite-apps/ca/v1"},
		{id: "/projects/p1/composite-apps/ca/v1/deployment-intent-groups/d1/intents/i1", project: "p1", name: "/projects/p1/composite-apps/ca/v1/deployment-intent-groups/d1/intents/i1"},
		{id: "/cluster-providers/cp/clusters/c1", name: "/cluster-providers/cp/clusters/c1"},
	} {
		e := (&Event{}).About(c.id)
		if e.Resource != c.id || e.Project != c.project || e.CompositeApp != c.ca || e.Version != c.version || e.DIG != c.dig {
			t.Errorf("About(%s): %+v", c.id, e)
		}
		if e.Name() != c.name {
			t.Errorf("About(%s).Name() = %q, want %q", c.id, e.Name(), c.name)
		}
		if wantKey := map[bool]string{true: "p1/ca/v1/d1", false: ""}[c.dig != ""]; e.DIGKey() != wantKey {
			t.Errorf("About(%s).DIGKey() = %q, want %q", c.id, e.DIGKey(), wantKey)
		}
	}

	// A cluster's key and labels; its resource unless the event is about something else.
	e := (&Event{}).AboutCluster("cp+c1", []string{"edge"})
	if e.Resource != "/cluster-providers/cp/clusters/c1" || e.Cluster != "cp+c1" || len(e.ClusterLabels) != 1 || e.Name() != "cp+c1" || e.Project != "" {
		t.Errorf("AboutCluster: %+v", e)
	}
	e = (&Event{}).About("/projects/p1/composite-apps/ca/v1/deployment-intent-groups/d1").AboutCluster("cp+c1", nil)
	if e.Resource != "/projects/p1/composite-apps/ca/v1/deployment-intent-groups/d1" || e.Cluster != "cp+c1" || e.Name() != "p1/ca/v1/d1" {
		t.Errorf("a DIG's event about a cluster: %+v", e)
	}
}

func TestScopeOf(t *testing.T) {
	for id, want := range map[string]string{
		"/projects/p1/notification-receivers/r":  "p1",
		"/notification-receivers/r":              "",
		"/projects/p-2/notification-receivers/x": "p-2",
	} {
		if got := ScopeOf(id); got != want {
			t.Errorf("ScopeOf(%s) = %q, want %q", id, got, want)
		}
	}
}
