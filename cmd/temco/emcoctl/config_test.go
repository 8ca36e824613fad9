package emcoctl

import (
	"strings"
	"testing"
)

func TestAPIFromConfigPrefersTheIngressThenTheOrchestrator(t *testing.T) {
	for _, tc := range []struct {
		name, config, want, err string
	}{
		{"an ingress with host and port takes everything",
			"orchestrator: {host: orch, port: 9015}\ningress: {host: gw.example, port: 443}\n", "http://gw.example:443", ""},
		{"an ingress without a port is not used",
			"ingress: {host: gw.example}\norchestrator: {host: orch, port: 9015}\n", "http://orch:9015", ""},
		{"keys in any case, a port as a string, other services ignored",
			"  Orchestrator:\n    HOST: 10.0.0.1\n    Port: \"30415\"\n    statusPort: 30416\n  clm:\n    host: 10.0.0.1\n    port: 30461\n", "http://10.0.0.1:30415", ""},
		{"an IPv6 host gets brackets",
			"orchestrator: {host: \"fd00::1\", port: 9015}\n", "http://[fd00::1]:9015", ""},
		{"no usable entry",
			"clm: {host: c, port: 9061}\norchestrator: {host: orch}\n", "", "neither ingress nor orchestrator has a host and a port"},
		{"not YAML", "orchestrator: [\n", "", "emcoctl config"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := APIFromConfig(write(t, t.TempDir(), "emco-cfg.yaml", tc.config))
			if got != tc.want || (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
				t.Errorf("got %q, %v; want %q, %q", got, err, tc.want, tc.err)
			}
		})
	}
}
