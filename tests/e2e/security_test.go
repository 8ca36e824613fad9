package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"math/rand/v2"
	"mime/multipart"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/temco/temco/internal/adapters/auth/authtest"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/dev/devstack"
	"github.com/temco/temco/internal/dev/testenv"
)

// encryptedMarker is how an encrypted payload's metadata appears in JSON: base64 of "binary/encrypted".
var encryptedMarker = []byte(base64.StdEncoding.EncodeToString([]byte("binary/encrypted")))

// A whole instantiate — a standard logical cloud whose credentials temco generates, and a
// DIG deployed into it — leaves no key material in any workflow history (raw, or decoded
// through the codec as the UI shows it) nor in the logs of api, worker and Temporal server.
// The raw histories hold encrypted payloads; decoded, they are readable.
func TestSecretsNeverLeak(t *testing.T) {
	started := time.Now().UTC().Add(-time.Second)
	d := newDeployment(t, app{name: "web", chart: webChart("web"), placement: clusterNamed("cluster1")})
	d.logicalCloud = "leak"
	d.setUpCloud = func(d *deployment) {
		lc := standardCloud(d, "leak", "cluster1", "cluster2")
		grantWorkloads(d, lc, "leak-ns")
		d.c.do("POST", lc+"/instantiate", nil).must(t, 202)
		d.awaitCloud("leak", lifecycle.StatusInstantiated)
	}
	d.create()
	d.operate(lifecycle.OpInstantiate)
	d.await("Instantiated", 2*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusInstantiated })

	secrets := keyMaterial(t)
	var evidence [][]byte
	for _, f := range []string{"logs/api.log", "logs/worker.log", "temporal/temporal.log"} {
		b, err := os.ReadFile(filepath.Join(stack.DataDir(), f))
		if err != nil {
			t.Fatal(err)
		}
		evidence = append(evidence, b)
	}
	ids := workflowsSince(t, started)
	if len(ids) < 4 { // cloud entity + instantiate, DIG entity + instantiate (+ batches)
		t.Fatalf("%d workflows since the test started, want at least 4: %v", len(ids), ids)
	}
	for _, id := range ids {
		raw := temporalCLI(t, "workflow", "show", "--workflow-id", id, "--output", "json")
		decoded := temporalCLI(t, "workflow", "show", "--workflow-id", id, "--output", "json", "--codec-endpoint", stack.CodecEndpoint())
		if !bytes.Contains(raw, encryptedMarker) {
			t.Errorf("history of %s holds no encrypted payload", id)
		}
		if bytes.Contains(decoded, encryptedMarker) {
			t.Errorf("history of %s still holds encrypted payloads through the codec", id)
		}
		evidence = append(evidence, raw, decoded)
	}
	for _, e := range evidence {
		for _, sec := range secrets {
			if bytes.Contains(e, sec) {
				t.Fatalf("key material found in logs or history: %.12q...", sec)
			}
		}
	}
	t.Logf("searched 3 process logs and the raw and decoded histories of %d workflows for %d secrets: none found", len(ids), len(secrets))
}

// keyMaterial is every secret of the stack in the forms it could leak in: the registered
// clusters' client keys and certificates, the credentials temco generated for logical
// clouds, and the encryption keys — raw, base64, and single lines of their PEM bodies.
func keyMaterial(t *testing.T) [][]byte {
	t.Helper()
	var kubeconfigs [][]byte
	for _, cl := range stack.Clusters {
		b, err := os.ReadFile(cl.Kubeconfig())
		if err != nil {
			t.Fatal(err)
		}
		kubeconfigs = append(kubeconfigs, b)
	}
	for _, cl := range []string{"cluster1", "cluster2"} {
		for _, p := range projectsWithCloud(t, "leak") {
			if kc, err := issuedKubeconfig(t, p, "leak", cl); err == nil {
				kubeconfigs = append(kubeconfigs, kc)
			}
		}
	}
	var out [][]byte
	add := func(v []byte) {
		if len(v) > 16 {
			out = append(out, v)
		}
	}
	for _, kc := range kubeconfigs {
		cfg, err := clientcmd.Load(kc)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range cfg.AuthInfos {
			for _, v := range [][]byte{a.ClientKeyData, a.ClientCertificateData, []byte(a.Token)} {
				add(v)
				add([]byte(base64.StdEncoding.EncodeToString(v)))
				for _, line := range bytes.Split(v, []byte("\n")) {
					if !bytes.HasPrefix(line, []byte("-----")) {
						add(line)
					}
				}
			}
		}
	}
	keys, err := os.ReadFile(stack.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(keys), "\n") {
		if _, key, ok := strings.Cut(line, " "); ok && !strings.HasPrefix(line, "#") {
			raw, _ := base64.StdEncoding.DecodeString(key)
			add([]byte(key))
			add(raw)
		}
	}
	if len(out) < 10 {
		t.Fatalf("only %d secrets collected", len(out))
	}
	return append(out, []byte("PRIVATE KEY"))
}

// projectsWithCloud lists the projects having a logical cloud named name.
func projectsWithCloud(t *testing.T, name string) []string {
	t.Helper()
	var projects []struct{ Metadata struct{ Name string } }
	(&client{}).do("GET", "/projects", nil).must(t, 200).json(t, &projects)
	var out []string
	for _, p := range projects {
		if (&client{}).do("GET", "/projects/"+p.Metadata.Name+"/logical-clouds/"+name, nil).code == 200 {
			out = append(out, p.Metadata.Name)
		}
	}
	return out
}

// workflowsSince lists the ids of workflows started after since.
func workflowsSince(t *testing.T, since time.Time) []string {
	t.Helper()
	out := temporalCLI(t, "workflow", "list", "--query", "StartTime >= '"+since.Format(time.RFC3339)+"'", "--output", "json")
	var runs []struct {
		Execution struct {
			WorkflowID string `json:"workflowId"`
		} `json:"execution"`
	}
	if err := json.Unmarshal(out, &runs); err != nil {
		t.Fatalf("workflow list: %v: %s", err, out)
	}
	seen := map[string]bool{}
	var ids []string
	for _, r := range runs {
		if !seen[r.Execution.WorkflowID] {
			seen[r.Execution.WorkflowID] = true
			ids = append(ids, r.Execution.WorkflowID)
		}
	}
	return ids
}

func temporalCLI(t *testing.T, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(binDir+"/temporal", append(args, "--address", stack.Temporal.Address())...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("temporal %s: %v: %s", strings.Join(args, " "), err, stderr.Bytes())
	}
	return out
}

// The Temporal Web UI decodes payloads in the browser by posting them to the codec
// endpoint it is configured with. This makes the same requests: the UI's settings name
// temco's codec, the history the UI serves holds encrypted payloads, and the codec — after
// the browser's CORS preflight from the UI's origin — answers them decoded.
func TestTemporalUIDecodesThroughCodec(t *testing.T) {
	d := newDeployment(t, app{name: "web", chart: webChart("web"), placement: clusterNamed("cluster1")})
	d.create()
	acc := d.operate(lifecycle.OpInstantiate)
	d.await("Instantiated", 2*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusInstantiated })
	ui := stack.Temporal.UIURL()

	var settings struct{ Codec struct{ Endpoint string } }
	getJSON(t, ui+"/api/v1/settings", &settings)
	if settings.Codec.Endpoint != stack.CodecEndpoint() {
		t.Fatalf("the UI's codec endpoint is %q, want %q", settings.Codec.Endpoint, stack.CodecEndpoint())
	}
	var history struct {
		History struct {
			Events []struct {
				Attrs struct {
					Input struct {
						Payloads []json.RawMessage `json:"payloads"`
					} `json:"input"`
				} `json:"workflowExecutionStartedEventAttributes"`
			} `json:"events"`
		} `json:"history"`
	}
	getJSON(t, ui+"/api/v1/namespaces/default/workflows/"+url.PathEscape(acc.WorkflowID)+"/history", &history)
	if len(history.History.Events) == 0 || len(history.History.Events[0].Attrs.Input.Payloads) == 0 {
		t.Fatalf("no workflow input in the UI's history of %s", acc.WorkflowID)
	}
	input := history.History.Events[0].Attrs.Input.Payloads
	body, _ := json.Marshal(map[string]any{"payloads": input})
	if !bytes.Contains(body, encryptedMarker) || bytes.Contains(body, []byte(d.project)) {
		t.Fatalf("the UI receives a readable input: %s", body)
	}

	pre, _ := http.NewRequest("OPTIONS", stack.CodecEndpoint()+"/decode", nil)
	pre.Header.Set("Origin", ui)
	pre.Header.Set("Access-Control-Request-Method", "POST")
	pre.Header.Set("Access-Control-Request-Headers", "content-type,x-namespace")
	resp, err := http.DefaultClient.Do(pre)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent || resp.Header.Get("Access-Control-Allow-Origin") != ui {
		t.Fatalf("CORS preflight from the UI: %d %v", resp.StatusCode, resp.Header)
	}
	req, _ := http.NewRequest("POST", stack.CodecEndpoint()+"/decode", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Namespace", "default")
	req.Header.Set("Origin", ui)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	decoded, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var out struct {
		Payloads []struct {
			Data []byte `json:"data"`
		} `json:"payloads"`
	}
	if resp.StatusCode != 200 || json.Unmarshal(decoded, &out) != nil || len(out.Payloads) != len(input) {
		t.Fatalf("codec decode: %d %s", resp.StatusCode, decoded)
	}
	if !bytes.Contains(out.Payloads[0].Data, []byte(d.project)) {
		t.Errorf("decoded input does not name the project %s: %s", d.project, out.Payloads[0].Data)
	}
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	if b := getOK(t, url); json.Unmarshal(b, v) != nil {
		t.Fatalf("GET %s: not the JSON expected: %.300s", url, b)
	}
}

// authAPI is a temco api with authentication on, against the shared stack.
type authAPI struct {
	iss  *authtest.Issuer
	addr string // host:port
	as   func(token string) *client
}

// startAuthAPI starts an api with authentication on (as the Helm chart starts it), with
// env added to its environment; it stops with the test.
func startAuthAPI(t *testing.T, env ...string) authAPI {
	t.Helper()
	iss, err := authtest.New("https://login.test", "temco")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "issuer.pem")
	if err := os.WriteFile(keyFile, iss.PublicKeyPEM(), 0o600); err != nil {
		t.Fatal(err)
	}
	port, err := devstack.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	env = append(append(stack.Env(), "TEMCO_API_ADDR="+addr, "TEMCO_AUTH_ISSUER=https://login.test",
		"TEMCO_AUTH_AUDIENCE=temco", "TEMCO_AUTH_PUBLIC_KEY_FILE="+keyFile), env...)
	p, err := devstack.StartProc("temco api (auth)", filepath.Join(dir, "api.log"), self, []string{"api"}, env)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Stop(5 * time.Second) })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := devstack.WaitReady(ctx, p, time.Minute, func(ctx context.Context) error {
		resp, err := http.Get("http://" + addr + "/healthz") // probes need no token
		if err == nil {
			resp.Body.Close()
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	base := "http://" + addr + "/v2"
	return authAPI{iss: iss, addr: addr, as: func(token string) *client { return &client{t: t, base: base, token: token} }}
}

// A temco api started with authentication on, against the shared stack: bad tokens are refused, tenants see and change only their projects, and
// admin-only routes, the codec included, refuse tenants.
func TestAuthenticatedAPI(t *testing.T) {
	a := startAuthAPI(t)
	as, iss, addr := a.as, a.iss, a.addr
	admin := as(iss.Token("root", []string{"admin"}, nil))

	as("").do("GET", "/projects", nil).must(t, 401)
	as(iss.Token("root", []string{"admin"}, map[string]any{"aud": "other"})).do("GET", "/projects", nil).must(t, 401)
	as(iss.Token("root", []string{"admin"}, map[string]any{"exp": time.Now().Add(-time.Minute).Unix()})).do("GET", "/projects", nil).must(t, 401)

	// Tenant A's project with an approved DIG, set up by the admin through this api.
	d := newDeployment(t, app{name: "web", chart: webChart("web"), placement: clusterNamed("cluster1")})
	d.c = admin
	d.create()
	other := d.project + "-b"
	admin.do("POST", "/projects", res(other, nil)).must(t, 201)
	alice := as(iss.Token("alice", []string{"project:" + d.project}, nil))
	bob := as(iss.Token("bob", []string{"project:" + other}, nil))

	var projects []struct{ Metadata struct{ Name string } }
	bob.do("GET", "/projects", nil).must(t, 200).json(t, &projects)
	if len(projects) != 1 || projects[0].Metadata.Name != other {
		t.Errorf("bob lists %+v, want only %s", projects, other)
	}
	before := admin.do("GET", d.dig(), nil).must(t, 200).body
	for _, r := range []struct{ method, path string }{
		{"GET", "/projects/" + d.project}, {"DELETE", "/projects/" + d.project}, {"GET", d.ca() + "/apps"},
		{"DELETE", d.ca() + "/apps/web"}, {"POST", d.dig() + "/instantiate"}, {"GET", d.dig() + "/status"},
	} {
		bob.do(r.method, r.path, nil).must(t, 403)
	}
	if after := admin.do("GET", d.dig(), nil).must(t, 200).body; !bytes.Equal(before, after) {
		t.Errorf("bob's refused requests changed the DIG:\n%s\n%s", before, after)
	}
	alice.do("GET", d.dig()+"/status", nil).must(t, 200)
	alice.do("GET", "/cluster-providers/"+provider+"/clusters", nil).must(t, 200)
	alice.do("POST", "/cluster-providers", res("mine", nil)).must(t, 403)
	alice.do("POST", "/projects/"+d.project+"/logical-clouds", res("escalate", map[string]any{"level": "0"})).must(t, 403)

	codec := func(c *client) int {
		req, _ := http.NewRequest("POST", "http://"+addr+"/codec/decode", strings.NewReader(`{"payloads":[]}`))
		req.Header.Set("Content-Type", "application/json")
		return c.send(req).code
	}
	if code := codec(alice); code != 403 {
		t.Errorf("a tenant's codec request: %d, want 403", code)
	}
	if code := codec(admin); code != 200 {
		t.Errorf("the admin's codec request: %d, want 200", code)
	}
}

// 1,000 malformed requests against the running api: none is answered with a 5xx, every
// /v2 refusal carries a JSON message, the process keeps serving, and what existed before
// is unchanged.
func TestMalformedRequestLoad(t *testing.T) {
	d := newDeployment(t, app{name: "web", chart: webChart("web"), placement: clusterNamed("cluster1")})
	d.create()
	existing := []string{"/projects/" + d.project, d.ca(), d.ca() + "/apps/web", d.ca() + "/composite-profiles/prof",
		d.dig(), d.dig() + "/generic-placement-intents/gpi", d.dig() + "/intents/intents",
		"/projects/" + d.project + "/logical-clouds/default", "/cluster-providers/" + provider + "/clusters/cluster1",
		"/cluster-providers/" + provider + "/clusters/cluster1/labels"}
	snapshot := func() string {
		var b strings.Builder
		for _, p := range existing {
			b.Write((&client{t: t}).do("GET", p, nil).must(t, 200).body)
		}
		return b.String()
	}
	before := snapshot()

	rng := rand.New(rand.NewPCG(1, 2)) // the same 1,000 requests every run
	hostile := testenv.HostileArchives("web")
	bodies := []string{"", "{", `{"metadata":`, "null", "[]", `"x"`, `{"metadata":{"name":123}}`, `{"metadata":{"name":"a/b"}}`,
		`{"metadata":{"name":"` + strings.Repeat("n", 300) + `"}}`, `{"metadata":{"name":"x"},"spec":"s"}`,
		`{"metadata":{"name":"x"}}{"again":1}`, strings.Repeat("[", 100000), "\xff\xfe\x00garbage",
		`{"metadata":{"name":"x"},"spec":{"compositeProfile":7,"logicalCloud":[]}}`, `{"revision":"latest"}`,
		`{"metadata":{"name":"web"},"spec":{"app":"web","intent":{"allOf":"everything"}}}`}
	paths := append([]string{}, existing...)
	paths = append(paths, "/projects", d.ca()+"/apps", d.dig()+"/generic-placement-intents/gpi/app-intents",
		"/cluster-providers/"+provider+"/clusters", "/projects/"+d.project+"/logical-clouds",
		"/projects/%00", "/projects/"+strings.Repeat("a", 5000), "/projects/x/../../cluster-providers", "/projects/%zz/composite-apps",
		d.dig()+"/status?type=nope", d.dig()+"/status?output=nope&instance=-1", d.dig()+"/status?app=%zz",
		"/projects/nope/composite-apps/ca/v1/deployment-intent-groups/nope/instantiate",
		"/projects/nope/composite-apps/ca/v1/deployment-intent-groups/nope/rollback")
	methods := []string{"POST", "PUT", "PUT", "POST", "DELETE", "PATCH", "GET"}
	contentTypes := []string{"application/json", "application/json", "", "application/xml", "multipart/form-data",
		"multipart/form-data; boundary=", "text/plain; charset=utf-16"}
	codes := map[int]int{}
	sent := 0
	for i := 0; sent < 1000; i++ {
		method := methods[rng.IntN(len(methods))]
		path := paths[rng.IntN(len(paths))]
		if method == "DELETE" || method == "GET" { // never a valid delete: only of names that do not exist
			path += "/no-such-" + strconv.Itoa(i)
		}
		var body []byte
		ct := contentTypes[rng.IntN(len(contentTypes))]
		switch n := rng.IntN(10); {
		case n < 6:
			body = []byte(bodies[rng.IntN(len(bodies))])
		case n < 8: // a multipart upload of a hostile archive or a broken kubeconfig
			var buf bytes.Buffer
			mw := multipart.NewWriter(&buf)
			_ = mw.WriteField("metadata", bodies[rng.IntN(len(bodies))])
			fw, _ := mw.CreateFormFile("file", "f")
			if rng.IntN(2) == 0 {
				names := []string{"bomb", "traversal", "symlink", "huge-header", "flood"}
				_, _ = fw.Write(hostile[names[rng.IntN(len(names))]])
			} else {
				_, _ = fw.Write([]byte("apiVersion: v1\nkind: Config\nusers: [{name: u, user: {exec: {command: /bin/sh}}}]\n"))
			}
			_ = mw.Close()
			body, ct = buf.Bytes(), mw.FormDataContentType()
			if rng.IntN(3) == 0 {
				body = body[:len(body)/2] // truncated
			}
		case n < 9:
			body = bytes.Repeat([]byte("x"), 3<<20) // over every body limit
		default:
			body = make([]byte, 1024)
			for j := range body {
				body[j] = byte(rng.IntN(256))
			}
		}
		req, err := http.NewRequest(method, apiURL+path, bytes.NewReader(body))
		if err != nil { // a path net/http itself refuses to send
			continue
		}
		if ct != "" {
			req.Header.Set("Content-Type", ct)
		}
		r := (&client{}).send(req)
		sent++
		codes[r.code]++
		if r.code < 400 {
			t.Errorf("%s %.120s answered %d to a malformed request", method, path, r.code)
		}
		if r.code >= 500 || r.code < 0 {
			t.Errorf("%s %.120s (%s, %d bytes) answered %d: %.300s", method, path, ct, len(body), r.code, r.body)
		} else if r.code >= 400 && !json.Valid(r.body) {
			t.Errorf("%s %.120s answered %d without a JSON message: %.200q", method, path, r.code, r.body)
		}
	}
	// Broken HTTP itself, below what a client library would send.
	for _, raw := range []string{"GARBAGE\r\n\r\n", "POST /v2/projects HTTP/1.1\r\nHost: x\r\nContent-Length: 50\r\n\r\n{\"meta",
		"GET /v2/projects HTTP/1.1\r\nHost: x\r\nX: " + strings.Repeat("h", 2<<20) + "\r\n\r\n"} {
		conn, err := net.Dial("tcp", strings.TrimPrefix(strings.TrimSuffix(apiURL, "/v2"), "http://"))
		if err != nil {
			t.Fatal(err)
		}
		_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
		_, _ = conn.Write([]byte(raw))
		if resp, err := http.ReadResponse(bufio.NewReader(conn), nil); err == nil {
			if resp.StatusCode >= 500 {
				t.Errorf("raw %.40q answered %d", raw, resp.StatusCode)
			}
			resp.Body.Close()
		}
		conn.Close()
	}
	t.Logf("%d malformed requests, answered: %v", sent, codes)
	(&client{t: t}).do("GET", "/projects", nil).must(t, 200)
	if after := snapshot(); after != before {
		t.Error("the malformed requests changed existing resources")
	}
}
