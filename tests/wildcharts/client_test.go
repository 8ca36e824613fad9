package wildcharts

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	apiclient "github.com/temco/temco/client"
)

// client talks to the stack's temco api through the client module (as tests/e2e's
// does); with t set it fails the test on a 5xx or a transport error.
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

// request sends req through the client module, whatever the answer.
func (c *client) request(req apiclient.Request) response {
	api := &apiclient.Client{Base: strings.TrimSuffix(apiURL, "/v2"), Name: "wildcharts"}
	resp, err := api.Send(context.Background(), req)
	if err != nil {
		if c.t != nil {
			c.t.Fatalf("%s %s: %v", req.Method, req.Path, err)
		}
		return response{code: -1, body: []byte(err.Error())}
	}
	if resp.Code >= 500 && c.t != nil {
		c.t.Fatalf("%s %s answered %d: %s", req.Method, req.Path, resp.Code, resp.Body)
	}
	return response{code: resp.Code, body: resp.Body}
}

func (c *client) do(method, path string, body any) response {
	return c.request(apiclient.Request{Method: method, Path: path, Body: body})
}

// multipart sends metadata as the part "metadata" and file, unless nil, as the part
// "file".
func (c *client) multipart(method, path string, metadata any, file []byte) response {
	req := apiclient.Request{Method: method, Path: path, Body: metadata, Multipart: true}
	if file != nil {
		req.Files = []apiclient.File{{Data: file}}
	}
	return c.request(req)
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
