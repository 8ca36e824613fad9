package api_test

// The routes of features/inventory, served by the api (export_features_test.go).

import (
	"bytes"
	"context"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/temco/temco/api"
	"github.com/temco/temco/features/inventory"
	"github.com/temco/temco/features/inventory/flow"
)

// inventories records what the API asks of the inventories' workflows.
type inventories struct{ wakes []string }

func (i *inventories) WakeInventory(_ context.Context, in flow.InventoryInput, start bool) error {
	i.wakes = append(i.wakes, map[bool]string{true: "start", false: "wake"}[start]+" "+in.WorkflowID())
	return nil
}

func TestClusterInventoryResource(t *testing.T) {
	inv := &inventories{}
	c := api.NewFeatureClient(t, inventory.Extension(inv)) // its tree has cluster provider cp1
	coll := "/cluster-providers/cp1/cluster-inventories"
	spec := map[string]any{"namespace": "fleet", "syncInterval": "10s"}

	for _, tc := range []struct {
		spec map[string]any
		file []byte
		want string
	}{
		{map[string]any{"namespace": "Fleet!"}, []byte(api.Kubeconfig), `spec.namespace "Fleet!"`},
		{map[string]any{"namespace": "fleet", "syncInterval": "1s"}, []byte(api.Kubeconfig), "spec.syncInterval: 1s is outside 5s to 1h"},
		{map[string]any{"namespace": "fleet", "clusterManager": "not a label"}, []byte(api.Kubeconfig), `spec.clusterManager "not a label"`},
		{spec, nil, `multipart part "file" is missing`},
		{spec, []byte("not: a kubeconfig\n"), "invalid kubeconfig"},
	} {
		if m := c.Multipart("POST", coll, res("hub", tc.spec), tc.file).Must(t, http.StatusBadRequest).Message(t); !strings.Contains(m, tc.want) {
			t.Errorf("message %q, want %q", m, tc.want)
		}
	}
	if len(inv.wakes) != 0 {
		t.Errorf("refused requests woke %v", inv.wakes)
	}
	c.Multipart("POST", coll, res("hub", spec), []byte(api.Kubeconfig)).Must(t, http.StatusCreated)
	if m := c.Multipart("POST", coll, res("other", spec), []byte(api.Kubeconfig)).Must(t, http.StatusConflict).Message(t); !strings.Contains(m, "one cluster inventory at most") {
		t.Errorf("a second inventory: %q", m)
	}
	// The hub's kubeconfig is sealed, never answered.
	if r := c.Do("GET", coll+"/hub", nil).Must(t, http.StatusOK); strings.Contains(string(r.Body()), "certificate-authority-data") {
		t.Errorf("GET answers the kubeconfig: %s", r.Body())
	}
	if r := c.Do("GET", coll+"/hub/status", nil).Must(t, http.StatusOK); strings.TrimSpace(string(r.Body())) !=
		`{"name":"hub","synced":"0001-01-01T00:00:00Z","profiles":[],"decisions":[]}` {
		t.Errorf("status before any sync: %s", r.Body())
	}
	c.Do("DELETE", coll+"/hub", nil).Must(t, http.StatusNoContent)
	want := []string{"start inventory/cp1/hub", "wake inventory/cp1/hub"}
	if !slices.Equal(inv.wakes, want) {
		t.Errorf("wakes %v, want %v", inv.wakes, want)
	}
}

// Switched off, a cluster inventory is refused before its checks (503); what is stored is
// still read and deleted.
func TestClusterInventoryOff(t *testing.T) {
	c := api.NewFeatureClient(t, inventory.Extension(nil))
	coll := "/cluster-providers/cp1/cluster-inventories"
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	_ = mw.WriteField("metadata", `{"metadata":{"name":"hub"},"spec":{"namespace":"Fleet!"}}`)
	_ = mw.Close()
	req := httptest.NewRequest("POST", "/v2"+coll, &buf)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	want := "this temco runs no cluster inventories: feature inventory is switched off (--disable-features)"
	if rec := c.Serve(req); rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), want) {
		t.Errorf("create: %d %s, want 503 saying %q", rec.Code, rec.Body, want)
	}
	c.Do("GET", coll, nil).Must(t, http.StatusOK)
	c.Do("GET", coll+"/hub/status", nil).Must(t, http.StatusNotFound)
}
