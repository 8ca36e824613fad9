package egress

import (
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	a, err := Parse(" Config.Example.com, 10.0.0.5:8080,,[FD00::1]:80, fd00::2 ,[fd00::3]")
	if err != nil {
		t.Fatal(err)
	}
	for u, want := range map[string]bool{
		"http://config.example.com:1234/x": true, "https://CONFIG.example.com/x": true, "http://10.0.0.5:8080/": true,
		"http://10.0.0.5/": false, "http://[fd00::1]/": true, "https://[fd00::1]/": false, "http://[fd00::2]:9/": true,
		"http://[fd00::3]/": true, "http://example.com/": false, "http://config.example.com.evil/": false,
	} {
		pu, _ := url.Parse(u)
		if got := a.AllowsURL(pu); got != want {
			t.Errorf("%s: %v, want %v", u, got, want)
		}
	}
	if !a.AllowsAddr("10.0.0.5:8080") || a.AllowsAddr("10.0.0.5:8081") || a.AllowsAddr("config.example.com") {
		t.Error("AllowsAddr")
	}
	for _, bad := range []string{"http://h", "h/x", "h:0", "h:x", "h:", ":80", "u@h"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	var none *Allow
	if !none.Empty() || none.AllowsAddr("h:1") || !MustParse("").Empty() {
		t.Error("an empty list allows something")
	}
}

// The client sends nothing to a host off the list, follows no redirect, and says of an
// allowed host that did not answer no more than that.
func TestHTTPClient(t *testing.T) {
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { t.Error("the redirect was followed") }))
	defer other.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL, http.StatusFound)
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	c := MustParse(host).HTTPClient(5 * time.Second)
	resp, err := c.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		t.Errorf("status %d, want the redirect itself", resp.StatusCode)
	}
	var refused *Refused
	if _, err := c.Get(other.URL); !errors.As(err, &refused) {
		t.Errorf("a host off the list: %v", err)
	}
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	closed := l.Addr().String()
	l.Close()
	var down *Unreachable
	_, err = MustParse(closed).HTTPClient(5 * time.Second).Get("http://" + closed)
	if !errors.As(err, &down) || down.Error() != closed+" did not answer" {
		t.Errorf("a closed port: %v", err)
	}
}
