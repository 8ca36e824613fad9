package wildcharts

import (
	"bytes"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"testing"
)

// client talks to the stack's temco api over HTTP (as tests/e2e's does); with t set it
// fails the test on a 5xx or a transport error.
type client struct{ t *testing.T }

type response struct {
	code int
	body []byte
}

func (r response) decode(v any) error { return json.Unmarshal(r.body, v) }

func (r response) must(t *testing.T, code int) response {
	t.Helper()
	if r.code != code {
		t.Fatalf("status %d, want %d: %s", r.code, code, r.body)
	}
	return r
}

func (c *client) send(req *http.Request) response {
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		if c.t != nil {
			c.t.Fatalf("%s %s: %v", req.Method, req.URL, err)
		}
		return response{code: -1, body: []byte(err.Error())}
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 500 && c.t != nil {
		c.t.Fatalf("%s %s answered %d: %s", req.Method, req.URL, resp.StatusCode, body)
	}
	return response{code: resp.StatusCode, body: body}
}

func (c *client) do(method, path string, body any) response {
	var rd io.Reader
	if body != nil {
		data, _ := json.Marshal(body)
		rd = bytes.NewReader(data)
	}
	req, _ := http.NewRequest(method, apiURL+path, rd)
	req.Header.Set("X-Temco-Client", "wildcharts") // as temco's clients: the api takes no bodiless change without it
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return c.send(req)
}

func (c *client) multipart(method, path string, metadata any, file []byte) response {
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	md, _ := json.Marshal(metadata)
	_ = mw.WriteField("metadata", string(md))
	if file != nil {
		fw, _ := mw.CreateFormFile("file", "file")
		_, _ = fw.Write(file)
	}
	_ = mw.Close()
	req, _ := http.NewRequest(method, apiURL+path, &buf)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	return c.send(req)
}

func res(name string, spec any) map[string]any {
	if spec == nil {
		spec = map[string]any{}
	}
	return map[string]any{"metadata": map[string]any{"name": name}, "spec": spec}
}

// status is the part of a status answer (status=deployed) the tests read.
type status struct {
	States struct {
		Actions []struct {
			State string `json:"state"`
		} `json:"actions"`
	} `json:"states"`
	DeployedStatus string         `json:"deployedStatus"`
	DeployedCounts map[string]int `json:"deployedCounts"`
	Error          string         `json:"error"`
	Apps           []struct {
		Name     string `json:"name"`
		Clusters []struct {
			Cluster   string     `json:"cluster"`
			Resources []resource `json:"resources"`
		} `json:"clusters"`
	} `json:"apps"`
}

type resource struct {
	GVK struct {
		Group, Version, Kind string
	} `json:"GVK"`
	Name           string `json:"name"`
	Namespace      string `json:"namespace"`
	DeployedStatus string `json:"deployedStatus"`
	Attempts       int    `json:"attempts"`
	Error          string `json:"error"`
	Warning        string `json:"warning"`
}

func (r resource) String() string {
	s := r.GVK.Kind + "/" + r.Name
	if r.Namespace != "" {
		s = r.Namespace + "/" + s
	}
	return s
}

// state is the DIG's current state (its last action).
func (s status) state() string {
	if len(s.States.Actions) == 0 {
		return ""
	}
	return s.States.Actions[len(s.States.Actions)-1].State
}

// resources lists every object of the answer, of every app and cluster.
func (s status) resources() []resource {
	var out []resource
	for _, a := range s.Apps {
		for _, c := range a.Clusters {
			out = append(out, c.Resources...)
		}
	}
	return out
}
