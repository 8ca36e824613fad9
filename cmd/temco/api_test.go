package main

import (
	"bytes"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/temco/temco/api"
	"github.com/temco/temco/internal/adapters/auth"
)

func TestAPIListensOnLoopbackUnlessTold(t *testing.T) {
	t.Setenv("TEMCO_API_ADDR", "") // restored after the test
	os.Unsetenv("TEMCO_API_ADDR")
	if got := apiCmd().Flags().Lookup("addr").DefValue; got != "127.0.0.1:9015" {
		t.Errorf("default --addr %q, want 127.0.0.1:9015", got)
	}
	t.Setenv("TEMCO_API_ADDR", ":9015")
	if got := apiCmd().Flags().Lookup("addr").DefValue; got != ":9015" {
		t.Errorf("--addr with TEMCO_API_ADDR=:9015 is %q", got)
	}
}

func TestAPIServerHasEveryTimeout(t *testing.T) {
	srv := newHTTPServer("127.0.0.1:0", http.NotFoundHandler())
	for name, d := range map[string]time.Duration{"ReadHeaderTimeout": srv.ReadHeaderTimeout, "ReadTimeout": srv.ReadTimeout,
		"WriteTimeout": srv.WriteTimeout, "IdleTimeout": srv.IdleTimeout} {
		if d <= 0 {
			t.Errorf("%s is not set: a stalled client would hold its connection for ever", name)
		}
	}
}

func TestAPIWarnsOnceWithoutAuthentication(t *testing.T) {
	for _, tc := range []struct {
		name  string
		auth  *auth.Authenticator
		warns int
	}{{"off", nil, 1}, {"on", &auth.Authenticator{}, 0}} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			warnUnauthenticated(slog.New(slog.NewTextHandler(&buf, nil)), &api.Server{Auth: tc.auth}, ":9015")
			if got := strings.Count(buf.String(), "level=WARN"); got != tc.warns {
				t.Fatalf("%d warnings, want %d: %s", got, tc.warns, buf.String())
			}
			if tc.warns > 0 && !strings.Contains(buf.String(), "every caller is an admin") {
				t.Errorf("the warning does not say every caller is an admin: %s", buf.String())
			}
		})
	}
}

// The browser settings are checked at start: a mistyped one stops the api, naming the
// setting, rather than refusing every request later.
func TestAPIBrowserSettings(t *testing.T) {
	r, err := parseBrowserRules([]string{"temco-api", "Temco.Example.com"}, []string{"https://ui.example.com:443"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(r.hosts, ",") != "temco-api,temco.example.com" || strings.Join(r.allowedOrigins, ",") != "https://ui.example.com" || r.codecOrigins != nil {
		t.Errorf("hosts %q, origins %q, codec origins %q", r.hosts, r.allowedOrigins, r.codecOrigins)
	}
	for _, tc := range []struct {
		hosts, origins, codec []string
		want                  string
	}{
		{hosts: []string{"temco.example.com:443"}, want: "--hosts (TEMCO_API_HOSTS)"},
		{origins: []string{"*"}, want: "--allowed-origins (TEMCO_API_ALLOWED_ORIGINS)"},
		{codec: []string{"ui.example.com"}, want: "--codec-cors-origins (TEMCO_CODEC_CORS_ORIGINS)"},
	} {
		if _, err := parseBrowserRules(tc.hosts, tc.origins, tc.codec); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want one naming %s", tc, err, tc.want)
		}
	}
}
