// Package artifact is the vocabulary of charts (and profile archives) that come by
// reference rather than by upload: where one comes from (Source), what it was pinned to
// (Resolved), how far its pipeline got (Status) and where its bits are kept (Store,
// content-addressed). internal/adapters/sources fetches them; activities/artifact runs
// the pipeline's steps.
package artifact

import (
	"encoding/hex"
	"fmt"
	"net/url"
	"strings"
)

// Transports, by the field of Source that names them.
const (
	TransportOCI  = "oci"      // an OCI registry: Source.OCI
	TransportHelm = "helmRepo" // a Helm chart repository (index.yaml): Source.HelmRepo
	TransportURL  = "url"      // an archive at an HTTP(S) URL: Source.URL
)

// Source is where a chart comes from: exactly one of OCI, HelmRepo and URL. temco's own
// field (an app's spec.chart); EMCO's multipart upload stays as it is.
type Source struct {
	// OCI is oci://host[:port]/repository/chart, optionally ending @sha256:<hex>.
	OCI string `json:"oci,omitempty"`
	// HelmRepo is the http(s) URL of a Helm repository (its index.yaml beside it), with Chart.
	HelmRepo string `json:"helmRepo,omitempty"`
	Chart    string `json:"chart,omitempty"`
	// URL is the http(s) URL of a chart archive (.tgz); Digest is then required.
	URL string `json:"url,omitempty"`
	// Version is the OCI tag (the chart's version, as Helm pushes it) or the Helm
	// repository's version or semver range; none: the newest.
	Version string `json:"version,omitempty"`
	// Digest ("sha256:<hex>") is what the source must resolve to: an OCI manifest's
	// digest, or the archive's sha256 for a Helm repository or a URL.
	Digest string `json:"digest,omitempty"`
	// PlainHTTP: the OCI registry speaks http, not https (Helm's --plain-http).
	PlainHTTP bool `json:"plainHTTP,omitempty"`
}

// Transport names the one of OCI, HelmRepo and URL that is set ("" for none).
func (s Source) Transport() string {
	switch {
	case s.OCI != "":
		return TransportOCI
	case s.HelmRepo != "":
		return TransportHelm
	case s.URL != "":
		return TransportURL
	}
	return ""
}

// Location is the source's address without version or digest, for messages and status.
func (s Source) Location() string {
	switch s.Transport() {
	case TransportOCI:
		return s.OCI
	case TransportHelm:
		return strings.TrimSuffix(s.HelmRepo, "/") + " " + s.Chart
	}
	return s.URL
}

// Host is the host[:port] the source is fetched from (where credentials apply).
func (s Source) Host() string {
	if u := s.Endpoint(); u != nil {
		return strings.ToLower(u.Host)
	}
	return ""
}

// Endpoint is the scheme and host the source is fetched from (nil if it does not parse).
func (s Source) Endpoint() *url.URL {
	raw := s.HelmRepo + s.URL
	if s.OCI != "" {
		scheme := "https://"
		if s.PlainHTTP {
			scheme = "http://"
		}
		raw = scheme + strings.TrimPrefix(s.OCI, "oci://")
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return nil
	}
	return &url.URL{Scheme: u.Scheme, Host: u.Host}
}

// Limits of a source's fields.
const (
	maxURL     = 2048
	maxVersion = 128
)

// Validate checks s, field naming it in messages ("spec.chart"), and normalizes its
// digest to "sha256:<hex>" (a bare hex digest, as sha256sum prints it, is accepted).
func (s *Source) Validate(field string) error {
	set := 0
	for _, v := range []string{s.OCI, s.HelmRepo, s.URL} {
		if v != "" {
			set++
		}
	}
	if set != 1 {
		return fmt.Errorf("%s: give exactly one of oci, helmRepo and url", field)
	}
	if len(s.OCI)+len(s.HelmRepo)+len(s.URL) > maxURL || len(s.Version) > maxVersion || len(s.Chart) > 253 {
		return fmt.Errorf("%s: a location is at most %d characters, a version %d", field, maxURL, maxVersion)
	}
	if s.Digest != "" {
		d, err := ParseDigest(s.Digest)
		if err != nil {
			return fmt.Errorf("%s.digest: %v", field, err)
		}
		s.Digest = d
	}
	if strings.ContainsAny(s.Version, " /@:\t\n") && s.Transport() == TransportOCI {
		return fmt.Errorf("%s.version %q: an OCI tag has no spaces, '/', '@' or ':'", field, s.Version)
	}
	switch s.Transport() {
	case TransportOCI:
		return s.validateOCI(field)
	case TransportHelm:
		if s.Chart == "" {
			return fmt.Errorf("%s.chart: the chart's name in the Helm repository is required", field)
		}
		if strings.ContainsAny(s.Chart, "/ \t\n") {
			return fmt.Errorf("%s.chart %q: a chart name has no '/' or spaces", field, s.Chart)
		}
		return checkHTTP(field+".helmRepo", s.HelmRepo)
	default:
		if s.Digest == "" {
			return fmt.Errorf("%s.digest: an archive at a URL needs its sha256 (\"sha256:<hex>\")", field)
		}
		if s.Chart != "" || s.Version != "" {
			return fmt.Errorf("%s: chart and version name a chart in a Helm repository or registry, not at a URL", field)
		}
		return checkHTTP(field+".url", s.URL)
	}
}

func (s *Source) validateOCI(field string) error {
	if s.Chart != "" {
		return fmt.Errorf("%s.chart: an OCI reference names its chart in its path (oci://host/repository/chart)", field)
	}
	rest, ok := strings.CutPrefix(s.OCI, "oci://")
	if !ok {
		return fmt.Errorf("%s.oci %q: an OCI reference begins oci://", field, s.OCI)
	}
	if repo, digest, found := strings.Cut(rest, "@"); found {
		d, err := ParseDigest(digest)
		if err != nil {
			return fmt.Errorf("%s.oci: %v", field, err)
		}
		if s.Digest != "" && s.Digest != d {
			return fmt.Errorf("%s: oci names digest %s, digest %s", field, d, s.Digest)
		}
		s.OCI, s.Digest, rest = "oci://"+repo, d, repo
	}
	host, path, _ := strings.Cut(rest, "/")
	if host == "" || path == "" || strings.HasSuffix(path, "/") {
		return fmt.Errorf("%s.oci %q: give oci://host/repository/chart", field, s.OCI)
	}
	if err := checkHostPort(host); err != nil && strings.Contains(host, ":") {
		return fmt.Errorf("%s.oci: host %q: %v", field, host, err)
	}
	if path != strings.ToLower(path) || strings.ContainsAny(path, ":@ \t\n") {
		return fmt.Errorf("%s.oci %q: a repository path is lower case, without ':', '@' or spaces (the tag goes in version)", field, s.OCI)
	}
	if s.Version == "" && s.Digest == "" {
		return fmt.Errorf("%s.version: an OCI chart needs a version (its tag) or a digest", field)
	}
	return nil
}

func checkHTTP(field, raw string) error {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return fmt.Errorf("%s: %v", field, err)
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("%s %q: an http or https URL", field, raw)
	case u.Host == "" || u.User != nil:
		return fmt.Errorf("%s %q: a URL with a host and no user (credentials go in artifact-credentials)", field, raw)
	}
	return nil
}

// ParseDigest reads "sha256:<64 hex>" or a bare 64-hex sha256, returning the former.
func ParseDigest(d string) (string, error) {
	hexPart := strings.TrimPrefix(d, "sha256:")
	if len(hexPart) != 64 {
		return "", fmt.Errorf("digest %q: give sha256:<64 hex digits>", d)
	}
	if _, err := hex.DecodeString(hexPart); err != nil {
		return "", fmt.Errorf("digest %q: give sha256:<64 hex digits>", d)
	}
	return "sha256:" + strings.ToLower(hexPart), nil
}

// checkHostPort is net.SplitHostPort's check of host:port, with its errors, in the
// vocabulary that workflow code uses (which builds on no network package).
func checkHostPort(hostport string) error {
	bad := func(why string) error { return fmt.Errorf("address %s: %s", hostport, why) }
	i := strings.LastIndexByte(hostport, ':')
	if i < 0 {
		return bad("missing port in address")
	}
	j, k := 0, 0
	if hostport[0] == '[' {
		end := strings.IndexByte(hostport, ']')
		switch {
		case end < 0:
			return bad("missing ']' in address")
		case end+1 == len(hostport):
			return bad("missing port in address")
		case end+1 != i && hostport[end+1] == ':':
			return bad("too many colons in address")
		case end+1 != i:
			return bad("missing port in address")
		}
		j, k = 1, end+1
	} else if strings.IndexByte(hostport[:i], ':') >= 0 {
		return bad("too many colons in address")
	}
	if strings.IndexByte(hostport[j:], '[') >= 0 {
		return bad("unexpected '[' in address")
	}
	if strings.IndexByte(hostport[k:], ']') >= 0 {
		return bad("unexpected ']' in address")
	}
	return nil
}
