package api

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"

	temco "github.com/temco/temco/client"
)

// A page the operator has open may send requests to the api from the browser: "simple"
// ones (a form's POST, a no-cors fetch, an image) go to any address without asking, and a
// name the page's author points at the api's address (DNS rebinding) makes the page the
// api's own origin to the browser. Three rules keep such pages out (docs/security.md):
// checkHost refuses Host names the api does not serve, checkOrigin refuses requests
// browsers say came from another origin, and bodyRules (body.go) wants on every request
// that changes something what no cross-site form or no-cors fetch can send: a JSON
// Content-Type, or ClientHeader.

// ClientHeader marks a request as a client's own (the dashboard, temco's CLI, a script):
// a bodiless POST or a DELETE carries it, or Content-Type: application/json. A page of
// another origin can send neither without a CORS preflight, which the api grants only to
// the Temporal UI, on /codec.
const ClientHeader = temco.HeaderClient

// AnyHost in Server.Hosts serves every Host: for an api behind a proxy that checks them.
const AnyHost = "*"

// checkHost refuses a request whose Host is neither an IP address, localhost, nor a name
// of Server.Hosts: to a page whose name was pointed at the api's address the browser
// sends that name, so the rebound page reads and changes nothing.
func (s *Server) checkHost() echo.MiddlewareFunc {
	anyHost := slices.Contains(s.Hosts, AnyHost)
	names := map[string]bool{}
	for _, h := range s.Hosts {
		names[canonicalHost(h)] = true
	}
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			host := c.Request().Host
			if anyHost || servedHost(host, names) {
				return next(c)
			}
			return httpErr(http.StatusMisdirectedRequest,
				"host %s is not one this api serves: call it by an IP address, localhost or a name of TEMCO_API_HOSTS (--hosts)", clipQuote(host))
		}
	}
}

// servedHost: the Host header (host[:port]) names an IP address, localhost or one of
// names. A request without Host (HTTP/1.0) comes from no browser.
func servedHost(hostport string, names map[string]bool) bool {
	if hostport == "" {
		return true
	}
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = canonicalHost(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"))
	if _, err := netip.ParseAddr(host); err == nil {
		return true // DNS rebinding needs a name: an address is the api's own
	}
	return host == "localhost" || names[host]
}

// canonicalHost is a host name in lower case without the root's trailing dot.
func canonicalHost(h string) string {
	return strings.TrimSuffix(strings.ToLower(h), ".")
}

// checkOrigin refuses a request a browser sent for a page of another origin, reads
// included: a read may start work (a live read of every cluster spends the caller's
// budget) and a rebound or allowed-by-mistake page should learn nothing. The api's own
// origin (the dashboard), Server.AllowedOrigins and, on /codec, Server.CodecOrigins pass;
// so does a link followed to a page of the api (a top-level navigation reading it).
// Requests from no browser (no Origin, no Sec-Fetch-Site) pass.
func (s *Server) checkOrigin() echo.MiddlewareFunc {
	allowed, codec := originSet(s.AllowedOrigins), originSet(s.CodecOrigins)
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			r := c.Request()
			site := r.Header.Get("Sec-Fetch-Site")
			if site == "same-origin" || site == "none" { // none: typed or bookmarked by the user
				return next(c)
			}
			if origin := r.Header.Get(echo.HeaderOrigin); origin != "" {
				o, err := canonicalOrigin(origin)
				if err == nil && (ownOrigin(o, r.Host) || allowed[o] || codec[o] && strings.HasPrefix(r.URL.Path, codecPrefix+"/")) {
					return next(c)
				}
				return httpErr(http.StatusForbidden,
					"requests from pages of %s are refused: the api takes those of its own origin and of TEMCO_API_ALLOWED_ORIGINS (--allowed-origins)", clipQuote(origin))
			}
			if site == "" || topLevelRead(r) {
				return next(c)
			}
			return httpErr(http.StatusForbidden,
				"a request from another site's page (Sec-Fetch-Site: %s) is refused: only the api's own pages and TEMCO_API_ALLOWED_ORIGINS (--allowed-origins) may call it", clipQuote(site))
		}
	}
}

// topLevelRead: the browser loads an api page into its window, e.g. a link followed from
// elsewhere to the dashboard. The page that linked reads none of it.
func topLevelRead(r *http.Request) bool {
	return (r.Method == http.MethodGet || r.Method == http.MethodHead) &&
		r.Header.Get("Sec-Fetch-Mode") == "navigate" && r.Header.Get("Sec-Fetch-Dest") == "document"
}

// ownOrigin: origin (canonical) names the host and port the request was sent to, the
// port defaulting to the origin's scheme's. The scheme is not compared: behind a proxy
// that ends TLS the api cannot know it.
func ownOrigin(origin, hostport string) bool {
	u, err := url.Parse(origin)
	if err != nil {
		return false
	}
	host, port := hostport, ""
	if h, p, err := net.SplitHostPort(hostport); err == nil {
		host, port = h, p
	}
	if port == "" || port == defaultPort(u.Scheme) {
		port = ""
	}
	want := canonicalHost(host)
	if port != "" {
		want = net.JoinHostPort(strings.Trim(want, "[]"), port)
	}
	return u.Host == want
}

func defaultPort(scheme string) string {
	if scheme == "https" {
		return "443"
	}
	return "80"
}

// canonicalOrigin is an origin as browsers send it: scheme://host[:port] in lower case,
// without the scheme's default port. Anything else (a path, a wildcard, "null") is an
// error.
func canonicalOrigin(s string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || strings.Contains(u.Host, "*") {
		return "", fmt.Errorf("%s is not an origin: write scheme://host[:port], e.g. https://ui.example.com", clipQuote(s))
	}
	host := canonicalHost(u.Hostname())
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if p := u.Port(); p != "" && p != defaultPort(u.Scheme) {
		host += ":" + p
	}
	return u.Scheme + "://" + host, nil
}

// ParseOrigins checks and canonicalises a setting's browser origins.
func ParseOrigins(origins []string) ([]string, error) {
	var out []string
	for _, o := range origins {
		if strings.TrimSpace(o) == "" {
			continue
		}
		c, err := canonicalOrigin(o)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// ParseHosts checks a setting's host names: names without a port or scheme, or AnyHost
// (IP addresses pass too; they are always served).
func ParseHosts(hosts []string) ([]string, error) {
	var out []string
	for _, h := range hosts {
		h = strings.TrimSpace(h)
		_, ipErr := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(h, "["), "]"))
		switch {
		case h == "":
			continue
		case h != AnyHost && ipErr != nil && (strings.ContainsAny(h, ":/*@ ") || strings.Trim(h, ".") == ""):
			return nil, fmt.Errorf("%s is not a host name: write the name alone (temco.example.com), or %s for any", clipQuote(h), AnyHost)
		}
		out = append(out, canonicalHost(h))
	}
	return out, nil
}

// originSet is origins (canonical ones; others never match) as a set.
func originSet(origins []string) map[string]bool {
	set := map[string]bool{}
	for _, o := range origins {
		if c, err := canonicalOrigin(o); err == nil {
			set[c] = true
		}
	}
	return set
}

// clipQuote quotes a value a caller sent, cut to 100 bytes, for a message.
func clipQuote(s string) string {
	if len(s) > 100 {
		s = s[:100] + "…"
	}
	return fmt.Sprintf("%q", s)
}
