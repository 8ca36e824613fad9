// Package traces proves temco's OpenTelemetry traces end to end: a stack whose processes
// export to Jaeger (devstack's Traces), one instantiate through the REST API, and its one
// trace read back from Jaeger's query API, then in the stack's trace viewer (the page
// Jaeger serves as its UI) in a headless Chromium. Its own stack, because the e2e stack's
// processes export nothing: traces are off unless an endpoint is set, and only this
// package needs the collector.
package traces

import (
	"flag"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	apiclient "github.com/temco/temco/client"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/dev/devstack"
	"github.com/temco/temco/internal/dev/testenv"
)

var (
	stack *testenv.Stack
	api   *apiclient.Client
)

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		fmt.Println("traces: skipped in -short mode")
		os.Exit(0)
	}
	s, err := testenv.StartStack("traces", devstack.Config{Clusters: 2, Traces: true,
		Namespace: "default", TaskQueue: "temco", SearchAttributes: lifecycle.SearchAttributeTypes(),
		// Spans go out every 200 ms rather than the SDK's 5 s: the test reads them sooner.
		Env: []string{"OTEL_BSP_SCHEDULE_DELAY=200"}})
	if err != nil {
		fmt.Fprintln(os.Stderr, "traces:", err)
		os.Exit(1)
	}
	stack = s
	api = &apiclient.Client{Base: strings.TrimSuffix(s.API, "/v2"), Name: "traces-test", HTTP: &http.Client{Timeout: time.Minute}}
	code := m.Run()
	s.Stop(code != 0)
	os.Exit(code)
}
