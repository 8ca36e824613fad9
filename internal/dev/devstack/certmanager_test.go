package devstack

import (
	"bytes"
	"strings"
	"testing"
)

// cert-manager's port is its cluster's, in the cluster's range of ten, apart from the
// cluster's own; the summary names it.
func TestCertManagerPortAndSummary(t *testing.T) {
	c := &Cluster{Name: "cluster1", Dir: "/data/clusters/cluster1", BasePort: 20000}
	m := &CertManager{Cluster: c}
	taken := map[int]string{}
	for what, p := range c.Ports() {
		taken[p] = what
	}
	for what, p := range m.ports() {
		if p < c.BasePort || p >= c.BasePort+10 || taken[p] != "" {
			t.Errorf("%s on %d: outside cluster1's range or taken by %s", what, p, taken[p])
		}
	}
	var out bytes.Buffer
	m.summary(&out)
	if !strings.Contains(out.String(), "controller on cluster1, metrics http://127.0.0.1:20003/metrics, log /data/clusters/cluster1/cert-manager-controller.log") {
		t.Errorf("summary %q", out.String())
	}
}
