package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/spf13/cobra"
)

// commonFlags are the flags every client verb takes, so that a script may pass the same
// ones to apply, update, delete and get.
var commonFlags = []string{"api", "config", "filename", "help", "stop", "timeout", "token", "values", "wait", "waitTime"}

func clientCmd(t *testing.T, verb string) *cobra.Command {
	t.Helper()
	for _, c := range clientCmds() {
		if c.Name() == verb {
			return c
		}
	}
	t.Fatalf("no client command %q", verb)
	return nil
}

// Every verb runs with the whole set of common flags (those that wait on nothing accept
// --timeout and --wait), sends the token, and prints its line.
func TestClientVerbsTakeTheCommonFlags(t *testing.T) {
	var mu sync.Mutex
	var tokens []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		tokens = append(tokens, r.Header.Get("Authorization"))
		mu.Unlock()
		switch r.Method {
		case http.MethodPost:
			w.WriteHeader(http.StatusCreated)
		case http.MethodDelete:
			w.WriteHeader(http.StatusNoContent)
		default:
			_, _ = w.Write([]byte(`{}`))
		}
	}))
	defer srv.Close()
	dir := t.TempDir()
	file, values := filepath.Join(dir, "project.yaml"), filepath.Join(dir, "values.yaml")
	for name, data := range map[string]string{
		file:   "version: emco/v2\nresourceContext:\n  anchor: projects\nmetadata:\n  name: {{.Project}}\n",
		values: "Project: p1\n",
	} {
		if err := os.WriteFile(name, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for verb, line := range map[string]string{
		"apply":  "1 projects: POST /v2/projects 201",
		"update": "1 projects: PUT /v2/projects/p1 200",
		"delete": "1 projects: DELETE /v2/projects/p1 204",
		"get":    "1 projects: GET /v2/projects/p1 200",
	} {
		t.Run(verb, func(t *testing.T) {
			cmd := clientCmd(t, verb)
			var out bytes.Buffer
			cmd.SetOut(&out)
			cmd.SetErr(&out)
			cmd.SetArgs([]string{"-f", file, "-v", values, "--api", srv.URL, "--config", filepath.Join(dir, "unused.yaml"),
				"-t", "secret", "-s", "-w", "0", "--timeout", "30s", "--wait"})
			if err := cmd.Execute(); err != nil {
				t.Fatalf("temco %s with the common flags: %v\n%s", verb, err, &out)
			}
			if !strings.HasPrefix(out.String(), line+"\n") {
				t.Errorf("temco %s printed %q, want %q first", verb, out.String(), line)
			}
		})
	}
	for _, tok := range tokens {
		if tok != "Bearer secret" {
			t.Errorf("a request carried Authorization %q, want the --token", tok)
		}
	}
}

// Each verb's help lists the same flags: the common ones.
func TestClientVerbsHelpListsTheCommonFlags(t *testing.T) {
	flag := regexp.MustCompile(`(?m)^\s+(?:-\w, )?--(\w+)`)
	for _, verb := range []string{"apply", "update", "delete", "get"} {
		cmd := clientCmd(t, verb)
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetArgs([]string{"--help"})
		if err := cmd.Execute(); err != nil {
			t.Fatal(err)
		}
		var listed []string
		for _, m := range flag.FindAllStringSubmatch(out.String(), -1) {
			listed = append(listed, m[1])
		}
		slices.Sort(listed)
		if !slices.Equal(listed, commonFlags) {
			t.Errorf("temco %s --help lists %v, want %v", verb, listed, commonFlags)
		}
	}
}
