package devstack

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync/atomic"
	"time"

	"go.temporal.io/sdk/client"
)

// Temporal is the Temporal dev server (frontend, history, matching, Web UI) persisting to SQLite.
type Temporal struct {
	Bin              string            // path of the temporal CLI
	Dir              string            // holds temporal.db and the log
	Port             int               // frontend gRPC
	UIPort           int               // Web UI
	Namespace        string            // created at start ("default" always exists)
	SearchAttributes map[string]string // name -> type, registered at start
	CodecEndpoint    string            // optional remote codec for the UI
	// Production, when set, runs temporal-server on PostgreSQL instead of the dev server
	// (temporalserver.go); it has no Web UI.
	Production *productionServer
	proc       atomic.Pointer[Proc] // replaced by a restart while others read it
}

// Address is the frontend host:port for SDK clients.
func (t *Temporal) Address() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(t.Port)) }

// UIURL is the Web UI address.
func (t *Temporal) UIURL() string { return fmt.Sprintf("http://127.0.0.1:%d", t.UIPort) }

// Start runs the dev server and waits until the frontend is healthy and the UI answers
// (or the production server, until it serves the namespace with its search attributes).
func (t *Temporal) Start(ctx context.Context) error {
	if err := os.MkdirAll(t.Dir, 0o755); err != nil {
		return err
	}
	if t.Production != nil {
		return t.startProduction(ctx)
	}
	args := []string{"server", "start-dev", "--ip", "127.0.0.1",
		"--port", strconv.Itoa(t.Port), "--ui-port", strconv.Itoa(t.UIPort),
		"--db-filename", filepath.Join(t.Dir, "temporal.db"), "--log-format", "json",
		// On the single-shard dev server this cuts each activity hop from ~45 ms to ~8 ms.
		"--dynamic-config-value", "history.transferProcessorMaxPollRPS=1000",
		// An activity scheduled by a workflow task goes back to the worker in the reply to
		// that task instead of through matching: one hop less per activity (off by default).
		"--dynamic-config-value", "system.enableActivityEagerExecution=true",
		// WAL without a sync per commit: a killed server loses nothing (only a machine
		// crash could), and every workflow step stops waiting on the disk.
		"--sqlite-pragma", "journal_mode=wal", "--sqlite-pragma", "synchronous=normal",
	}
	if t.Namespace != "" && t.Namespace != "default" {
		args = append(args, "--namespace", t.Namespace)
	}
	names := make([]string, 0, len(t.SearchAttributes))
	for n := range t.SearchAttributes {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		args = append(args, "--search-attribute", n+"="+t.SearchAttributes[n])
	}
	if t.CodecEndpoint != "" {
		args = append(args, "--ui-codec-endpoint", t.CodecEndpoint)
	}
	p, err := StartProc("temporal", filepath.Join(t.Dir, "temporal.log"), t.Bin, args, nil)
	if err != nil {
		return err
	}
	t.proc.Store(p)
	ns := t.namespace()
	err = WaitReady(ctx, p, 120*time.Second, func(ctx context.Context) error {
		c, err := client.DialContext(ctx, client.Options{HostPort: t.Address(), Namespace: ns, Logger: quietLogger{}})
		if err != nil {
			return err
		}
		defer c.Close()
		if _, err := c.CheckHealth(ctx, &client.CheckHealthRequest{}); err != nil {
			return err
		}
		return dialable(ctx, net.JoinHostPort("127.0.0.1", strconv.Itoa(t.UIPort)))
	})
	if err != nil {
		p.Stop(10 * time.Second)
	}
	return err
}

func (t *Temporal) namespace() string {
	if t.Namespace == "" {
		return "default"
	}
	return t.Namespace
}

// Proc is the running server process.
func (t *Temporal) Proc() *Proc { return t.proc.Load() }

// Stop ends the server.
func (t *Temporal) Stop() { t.proc.Load().Stop(15 * time.Second) }

// quietLogger drops the SDK's own logs during readiness polling.
type quietLogger struct{}

func (quietLogger) Debug(string, ...any) {}
func (quietLogger) Info(string, ...any)  {}
func (quietLogger) Warn(string, ...any)  {}
func (quietLogger) Error(string, ...any) {}
