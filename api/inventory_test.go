package api

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/temco/temco/features/inventory/flow"
)

// inventories records what the API asks of the inventories' workflows.
type inventories struct{ wakes []string }

func (i *inventories) WakeInventory(_ context.Context, in flow.InventoryInput, start bool) error {
	i.wakes = append(i.wakes, map[bool]string{true: "start", false: "wake"}[start]+" "+in.WorkflowID())
	return nil
}

func TestClusterInventoryResource(t *testing.T) {
	var srv *Server
	c := newClient(t, func(s *Server) { srv = s })
	inv := &inventories{}
	srv.Inventories = inv
	c.do("POST", "/cluster-providers", res("cp1", nil)).must(t, http.StatusCreated)
	coll := "/cluster-providers/cp1/cluster-inventories"
	spec := map[string]any{"namespace": "fleet", "syncInterval": "10s"}

	for _, tc := range []struct {
		spec map[string]any
		file []byte
		want string
	}{
		{map[string]any{"namespace": "Fleet!"}, []byte(testKubeconfig), `spec.namespace "Fleet!"`},
		{map[string]any{"namespace": "fleet", "syncInterval": "1s"}, []byte(testKubeconfig), "spec.syncInterval: 1s is outside 5s to 1h"},
		{map[string]any{"namespace": "fleet", "clusterManager": "not a label"}, []byte(testKubeconfig), `spec.clusterManager "not a label"`},
		{spec, nil, `multipart part "file" is missing`},
		{spec, []byte("not: a kubeconfig\n"), "invalid kubeconfig"},
	} {
		if m := c.multipart("POST", coll, res("hub", tc.spec), tc.file).must(t, http.StatusBadRequest).message(t); !strings.Contains(m, tc.want) {
			t.Errorf("message %q, want %q", m, tc.want)
		}
	}
	if len(inv.wakes) != 0 {
		t.Errorf("refused requests woke %v", inv.wakes)
	}
	c.multipart("POST", coll, res("hub", spec), []byte(testKubeconfig)).must(t, http.StatusCreated)
	if m := c.multipart("POST", coll, res("other", spec), []byte(testKubeconfig)).must(t, http.StatusConflict).message(t); !strings.Contains(m, "one cluster inventory at most") {
		t.Errorf("a second inventory: %q", m)
	}
	// The hub's kubeconfig is sealed, never answered.
	if r := c.do("GET", coll+"/hub", nil).must(t, http.StatusOK); strings.Contains(string(r.body), "certificate-authority-data") {
		t.Errorf("GET answers the kubeconfig: %s", r.body)
	}
	if r := c.do("GET", coll+"/hub/status", nil).must(t, http.StatusOK); strings.TrimSpace(string(r.body)) !=
		`{"name":"hub","synced":"0001-01-01T00:00:00Z","profiles":[],"decisions":[]}` {
		t.Errorf("status before any sync: %s", r.body)
	}
	c.do("DELETE", coll+"/hub", nil).must(t, http.StatusNoContent)
	want := []string{"start inventory/cp1/hub", "wake inventory/cp1/hub"}
	if !slices.Equal(inv.wakes, want) {
		t.Errorf("wakes %v, want %v", inv.wakes, want)
	}
}
