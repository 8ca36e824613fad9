package e2e

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/temco/temco/internal/lifecycle"
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
		d.c.do("POST", lc+"/user-permissions", res("rw", map[string]any{"namespace": "leak-ns", "apiGroups": []string{"", "apps"},
			"resources": []string{"configmaps", "services", "deployments"}, "verbs": []string{"get", "list", "create", "update", "patch", "delete"}})).must(t, 201)
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
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, b)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("GET %s: %v: %.300s", url, err, b)
	}
}
