package artifact

import (
	"net"
	"strings"
	"testing"
)

func TestSourcesAreValidatedAndDigestsNormalized(t *testing.T) {
	hex := strings.Repeat("ab", 32)
	ok := []struct {
		src       Source
		transport string
		digest    string
	}{
		{Source{OCI: "oci://reg.example.com:5000/charts/web", Version: "1.2.0"}, TransportOCI, ""},
		{Source{OCI: "oci://reg.example.com/charts/web@sha256:" + hex}, TransportOCI, "sha256:" + hex},
		{Source{HelmRepo: "https://charts.example.com/stable/", Chart: "web", Version: "~1.2"}, TransportHelm, ""},
		{Source{URL: "https://example.com/web-1.2.0.tgz", Digest: strings.ToUpper(hex)}, TransportURL, "sha256:" + hex},
	}
	for _, c := range ok {
		s := c.src
		if err := s.Validate("spec.chart"); err != nil || s.Transport() != c.transport || s.Digest != c.digest {
			t.Errorf("%+v: %v, transport %q digest %q", c.src, err, s.Transport(), s.Digest)
		}
	}
	bad := map[string]Source{
		"exactly one of":           {OCI: "oci://r/x", URL: "https://e/x.tgz"},
		"needs its sha256":         {URL: "https://example.com/web.tgz"},
		"begins oci://":            {OCI: "https://reg/charts/web", Version: "1"},
		"needs a version":          {OCI: "oci://reg/charts/web"},
		"tag goes in version":      {OCI: "oci://reg/charts/web:1.0", Version: "1"},
		"chart's name":             {HelmRepo: "https://charts.example.com"},
		"http or https":            {HelmRepo: "file:///etc", Chart: "x"},
		"no user":                  {URL: "https://me:pw@example.com/x.tgz", Digest: hex},
		"64 hex":                   {URL: "https://example.com/x.tgz", Digest: "sha256:abc"},
		"oci names digest sha256:": {OCI: "oci://reg/charts/web@sha256:" + hex, Digest: "sha256:" + strings.Repeat("cd", 32)},
	}
	for want, s := range bad {
		if err := s.Validate("spec.chart"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%+v: %v, want an error saying %q", s, err, want)
		}
	}
}

// checkHostPort says what net.SplitHostPort says of a host:port.
func TestCheckHostPortIsSplitHostPorts(t *testing.T) {
	for _, hp := range []string{"h:1", "h", "h:", ":1", "a:b:c", "[::1]:5000", "[::1]", "[::1]x", "[::1]:5:6", "[::1", "h]:1", "[h]:[1", "x[y]:1"} {
		_, _, want := net.SplitHostPort(hp)
		got := checkHostPort(hp)
		if (want == nil) != (got == nil) || (want != nil && want.Error() != got.Error()) {
			t.Errorf("%q: %v, net says %v", hp, got, want)
		}
	}
}
