package ovnaction

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
)

// Multus' annotation in either form becomes a JSON list, as EMCO writes it; entries
// already JSON are kept as written.
func TestParseNetworks(t *testing.T) {
	for _, tc := range []struct {
		in, want, err string
	}{
		{"", `[]`, ""},
		{"  ", `[]`, ""},
		{"macvlan", `[{"name":"macvlan"}]`, ""},
		{"ns1/macvlan@net1, sriov", `[{"name":"macvlan","namespace":"ns1","interface":"net1"},{"name":"sriov"}]`, ""},
		{`[{"name":"sriov","interface":"net9","ips":["10.0.0.2/24"]}]`, `[{"name":"sriov","interface":"net9","ips":["10.0.0.2/24"]}]`, ""},
		{`[ {"namespace": "x", "name": "a"} ]`, `[{"namespace":"x","name":"a"}]`, ""},
		{"a/b/c", "", "more than one '/'"},
		{"a@b@c", "", "more than one '@'"},
		{"Macvlan", "", `"Macvlan" in "Macvlan" is not a lower-case DNS label`},
		{"a,,b", "", "names no network"},
		{`{"name":"a"}`, "", "not a JSON list"},
		{`["a"]`, "", `entry 0, "a", is not an object`},
		{`[null]`, "", "entry 0, null, is not an object"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := parseNetworks(tc.in)
			if tc.err != "" {
				assert.ErrorContains(t, err, tc.err)
				return
			}
			if assert.NoError(t, err) {
				js, _ := json.Marshal(got)
				assert.Equal(t, tc.want, string(js))
			}
		})
	}
}

// EMCO's merge: by network and interface name, values replaced in place, new ones
// appended, the CNI type set to ovn4nfv whatever it was.
func TestAddInterfaces(t *testing.T) {
	p := &podAnnotations{nfn: nfnAnnotation{Type: "other", Interface: []InterfaceSpec{
		{Interface: "eth1", Network: "net1", DefaultGateway: "false", IPAddress: "10.0.0.9"},
		{Interface: "eth1", Network: "net2", DefaultGateway: "false"},
	}}}
	p.addInterfaces([]InterfaceSpec{{Interface: "eth2", Network: "net1", DefaultGateway: "false"},
		{Interface: "eth1", Network: "net1", DefaultGateway: "true"}})
	assert.Equal(t, nfnAnnotation{Type: cniOVN4NFV, Interface: []InterfaceSpec{
		{Interface: "eth1", Network: "net1", DefaultGateway: "true"},
		{Interface: "eth1", Network: "net2", DefaultGateway: "false"},
		{Interface: "eth2", Network: "net1", DefaultGateway: "false"},
	}}, p.nfn)

	// ovn-networkobj is added once, whatever namespace an existing entry gives it.
	p.own = `[{"name":"ovn-networkobj","namespace":"kube-system"}]`
	assert.NoError(t, p.attachMultus())
	assert.NoError(t, p.attachMultus())
	js, _ := json.Marshal(p.networks)
	assert.Equal(t, `[{"name":"ovn-networkobj","namespace":"kube-system"}]`, string(js))
}
