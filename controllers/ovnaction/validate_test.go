package ovnaction

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestValidateWorkloadIntent(t *testing.T) {
	ok := WorkloadIntentSpec{App: "web", WorkloadResource: "r1-web", Type: "Deployment"}
	with := func(f func(*WorkloadIntentSpec)) WorkloadIntentSpec { sp := ok; f(&sp); return sp }
	for _, tc := range []struct {
		name string
		spec WorkloadIntentSpec
		want string // "" when valid
	}{
		{"valid", ok, ""},
		{"EMCO's names allow underscores", with(func(s *WorkloadIntentSpec) { s.App, s.WorkloadResource = "my_app", "my_web" }), ""},
		{"a long workload name", with(func(s *WorkloadIntentSpec) { s.WorkloadResource = strings.Repeat("w", 254) }), ""},
		{"no app", with(func(s *WorkloadIntentSpec) { s.App = "" }), "spec.app is required"},
		{"a bad app", with(func(s *WorkloadIntentSpec) { s.App = "-web" }), `spec.app "-web" is invalid`},
		{"no workload", with(func(s *WorkloadIntentSpec) { s.WorkloadResource = "" }), "spec.workloadResource is required"},
		{"a too long workload name", with(func(s *WorkloadIntentSpec) { s.WorkloadResource = strings.Repeat("w", 255) }), "longer than 254 characters"},
		{"a workload name with a slash", with(func(s *WorkloadIntentSpec) { s.WorkloadResource = "a/b" }), `spec.workloadResource "a/b" is invalid`},
		{"no type", with(func(s *WorkloadIntentSpec) { s.Type = "" }), "spec.type is required: the workload's kind"},
		{"a type with a space", with(func(s *WorkloadIntentSpec) { s.Type = "Stateful Set" }), `spec.type "Stateful Set" is invalid`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := validateWorkloadIntent(tc.spec)
			if tc.want == "" {
				assert.NoError(t, err)
				return
			}
			assert.ErrorContains(t, err, tc.want)
		})
	}
}

func TestValidateInterface(t *testing.T) {
	ok := InterfaceSpec{Interface: "eth1", Network: "net1", DefaultGateway: "false"}
	with := func(f func(*InterfaceSpec)) InterfaceSpec { sp := ok; f(&sp); return sp }
	for _, tc := range []struct {
		name string
		spec InterfaceSpec
		want string // "" when valid
	}{
		{"valid", ok, ""},
		{"an IPv4 address", with(func(s *InterfaceSpec) { s.IPAddress = "172.16.33.5" }), ""},
		{"an IPv6 address", with(func(s *InterfaceSpec) { s.IPAddress = "fd00::5" }), ""},
		{"a MAC address", with(func(s *InterfaceSpec) { s.MACAddress = "0A-58-AC-10-21-05" }), ""},
		{"an EUI-64 address", with(func(s *InterfaceSpec) { s.MACAddress = "02:00:5e:10:00:00:00:01" }), ""},
		{"no interface", with(func(s *InterfaceSpec) { s.Interface = "" }), "spec.interface is required"},
		{"no network", with(func(s *InterfaceSpec) { s.Network = "" }), "spec.name is required: the network"},
		{"a network name longer than a label value", with(func(s *InterfaceSpec) { s.Network = strings.Repeat("n", 64) }), "spec.name"},
		{"an interface name with a slash", with(func(s *InterfaceSpec) { s.Interface = "eth/1" }), `spec.interface "eth/1" is invalid`},
		{"defaultGateway not a name", with(func(s *InterfaceSpec) { s.DefaultGateway = "yes!" }), `spec.defaultGateway "yes!" is invalid`},
		{"an IP address with a prefix", with(func(s *InterfaceSpec) { s.IPAddress = "172.16.33.5/24" }), `spec.ipAddress "172.16.33.5/24" is not an IP address`},
		{"an IP address out of range", with(func(s *InterfaceSpec) { s.IPAddress = "172.16.33.256" }), "is not an IP address"},
		{"a MAC address too short", with(func(s *InterfaceSpec) { s.MACAddress = "0a:58:ac:10:21" }), `spec.macAddress "0a:58:ac:10:21" is not a MAC address`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := validateInterface(tc.spec)
			if tc.want == "" {
				assert.NoError(t, err)
				return
			}
			assert.ErrorContains(t, err, tc.want)
		})
	}
}
