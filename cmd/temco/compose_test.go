package main

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	enumspb "go.temporal.io/api/enums/v1"

	"github.com/temco/temco/internal/core/seal"
	"github.com/temco/temco/internal/dev/devstack"
	"github.com/temco/temco/internal/dev/testenv"
	"github.com/temco/temco/internal/dev/testenv/poll"
)

// apiConfigOf is the configuration `temco api args...` runs with.
func apiConfigOf(t *testing.T, args ...string) apiConfig {
	t.Helper()
	var cfg apiConfig
	cmd := &cobra.Command{Use: "api"}
	cfg.bind(cmd)
	if err := cmd.ParseFlags(args); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// workerConfigOf is the configuration `temco worker args...` runs with.
func workerConfigOf(t *testing.T, args ...string) workerConfig {
	t.Helper()
	var cfg workerConfig
	cmd := &cobra.Command{Use: "worker"}
	cfg.bind(cmd)
	if err := cmd.ParseFlags(args); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// A setting that cannot work stops the api before it connects to anything, naming the
// setting.
func TestAPIConfigCheckNamesTheSetting(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--key-file="}, "--key-file (TEMCO_KEY_FILE) is required"},
		{[]string{"--workflow-hosts-allow", "http://temporal.example.com/"}, "--workflow-hosts-allow: "},
		{[]string{"--policy-engine-allow", "http://opa.example.com/"}, "--policy-engine-allow: "},
		{[]string{"--artifact-hosts-allow", "http://charts.example.com/"}, "--artifact-hosts-allow: "},
		{[]string{"--workflow-task-queues", "no-project"}, "--workflow-task-queues: "},
		{[]string{"--live-reads-per-minute", "-1"}, "--live-reads-per-minute -1: use 0 (no limit) or more"},
		{[]string{"--max-store-requests", "-2"}, "--max-store-requests -2: use 0 (4 per core), -1 (no bound) or a number of requests"},
		{[]string{"--hosts", "temco.example.com:443"}, "--hosts (TEMCO_API_HOSTS): "},
		{[]string{"--auth-jwks-url", "https://idp.example.com/keys"}, "--auth-issuer (TEMCO_AUTH_ISSUER) is required"},
	} {
		cfg := apiConfigOf(t, append([]string{"--key-file", "keys"}, tc.args...)...)
		if _, err := cfg.check(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want one with %q", tc.args, err, tc.want)
		}
	}
	cfg := apiConfigOf(t, "--key-file", "keys", "--hosts", "Temco.Example.com", "--workflow-task-queues", "p1=shared")
	lists, err := cfg.check()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(lists.browser.hosts, ",") != "temco.example.com" || strings.Join(lists.taskQueueGrants["p1"], ",") != "shared" {
		t.Errorf("hosts %q, grants %v", lists.browser.hosts, lists.taskQueueGrants)
	}
}

// A setting that cannot work stops the worker before it connects to anything, naming the
// setting.
func TestWorkerConfigCheckNamesTheSetting(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--key-file="}, "--key-file (TEMCO_KEY_FILE) is required"},
		{[]string{"--render-memory", "255"}, "--render-memory: 255 MiB is too little"},
		{[]string{"--gac-url-allow", "http://kv.example.com/"}, "--gac-url-allow: "},
		{[]string{"--policy-engine-allow", "http://opa.example.com/"}, "--policy-engine-allow: "},
		{[]string{"--artifact-hosts-allow", "http://charts.example.com/"}, "--artifact-hosts-allow: "},
		{[]string{"--workflow-task-queues", "no-project"}, "--workflow-task-queues: "},
		{[]string{"--chart-keyring", filepath.Join(t.TempDir(), "none.gpg")}, "--chart-keyring: "},
	} {
		cfg := workerConfigOf(t, append([]string{"--key-file", "keys"}, tc.args...)...)
		if _, err := cfg.check(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want one with %q", tc.args, err, tc.want)
		}
	}
	cfg := workerConfigOf(t, "--key-file", "keys")
	if _, err := cfg.check(); err != nil {
		t.Errorf("the defaults: %v", err)
	}
}

// The composition root builds a working api and worker from their flags, on a store and
// a Temporal server of the test's own, and closes what it opened.
func TestAPIAndWorkerBuildFromTheirConfiguration(t *testing.T) {
	if testing.Short() {
		t.Skip("runs FerretDB and a Temporal dev server")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ferret, err := testenv.StartFerretDB(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer ferret.Stop()
	mongo, temporal := ferret.URI(), startTemporal(t, ctx).Address()
	keyFile := filepath.Join(t.TempDir(), "keys")
	if err := seal.WriteNewKeyFile(keyFile, "k1"); err != nil {
		t.Fatal(err)
	}
	common := []string{"--mongo-uri", mongo, "--mongo-db", "compose", "--key-file", keyFile, "--temporal-address", temporal, "--task-queue", "compose"}
	log := slog.New(slog.DiscardHandler)

	t.Setenv("TEMCO_DISABLE_FEATURES", "policy") // both take it
	a, err := newAPI(ctx, log, apiConfigOf(t, append(common, "--cluster-probe-interval", "0")...))
	if err != nil {
		t.Fatal(err)
	}
	defer a.close()
	for _, path := range []string{"/readyz", "/v2/projects"} {
		rec := httptest.NewRecorder()
		a.http.Handler.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://127.0.0.1"+path, nil))
		if rec.Code != http.StatusOK {
			t.Errorf("GET %s: %d %s", path, rec.Code, rec.Body)
		}
	}
	// A feature switched off answers that it is.
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/v2/policy/agents/a1", strings.NewReader(`{"addr":"10.0.0.9:9090"}`))
	req.Header.Set("Content-Type", "application/json")
	a.http.Handler.ServeHTTP(rec, req)
	if want := "feature policy is switched off"; rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), want) {
		t.Errorf("POST /v2/policy/agents/a1 with policy off: %d %s, want 503 with %q", rec.Code, rec.Body, want)
	}

	t.Setenv("TMPDIR", t.TempDir()) // the worker's slot and git cache
	metricsPort, err := devstack.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	w, err := newWorker(ctx, log, workerConfigOf(t, append(common, "--metrics-addr", "127.0.0.1:"+strconv.Itoa(metricsPort))...))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.worker.Start(); err != nil {
		w.close()
		t.Fatal(err)
	}
	poll.Until(t, "the worker polling its task queue", time.Minute, func(ctx context.Context) error {
		d, err := w.temporal.DescribeTaskQueue(ctx, "compose", enumspb.TASK_QUEUE_TYPE_WORKFLOW)
		if err == nil && len(d.GetPollers()) == 0 {
			return errors.New("no poller")
		}
		return err
	})
	if err := devstack.HTTPOK(ctx, "http://127.0.0.1:"+strconv.Itoa(metricsPort)+"/readyz"); err != nil {
		t.Errorf("the worker's /readyz: %v", err)
	}
	w.worker.Stop()
	w.close()
	if left, _ := filepath.Glob(filepath.Join(os.Getenv("TMPDIR"), "temco-git-*")); len(left) > 0 {
		t.Errorf("the worker's temporary git cache is left after close: %v", left)
	}
}
