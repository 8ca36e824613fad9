package devstack

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/types/known/durationpb"
)

// productionServer runs Temporal as a production deployment does: temporal-server (all
// four services in one process) persisting to PostgreSQL, with several history shards and
// SQL visibility, rather than the CLI's single-shard dev server on SQLite. Its schema is
// set up (or brought up to date) with temporal-sql-tool at every start.
type productionServer struct {
	Server, SQLTool string    // paths of temporal-server and temporal-sql-tool
	Postgres        *Postgres // holds the temporal and temporal_visibility databases
	Shards          int       // history shards (fixed for a cluster's life)
	// ports are the last start's (services and membership), taken again by a restart as a
	// restarted container keeps its address: under new ones the server would take its dead
	// predecessor, still in the membership table, for a peer and wait for it (ringpop's
	// join: 45 s, BENCHMARKS.md "2026-11-30, tenth session").
	ports []int
}

// DefaultShards is the production server's number of history shards here: more than one
// (what a real cluster has), few enough for two cores.
const DefaultShards = 4

// freePorts are the last start's ports if they are all free still, else new ones.
func (p *productionServer) freePorts() ([]int, error) {
	if len(p.ports) > 0 {
		named := map[string]int{}
		for i, port := range p.ports {
			named[strconv.Itoa(i)] = port
		}
		if CheckPortsFree(named) == nil {
			return p.ports, nil
		}
	}
	ports := make([]int, 8)
	for i := range ports {
		var err error
		if ports[i], err = FreePort(); err != nil {
			return nil, err
		}
	}
	p.ports = ports
	return ports, nil
}

// startProduction sets up the schema, writes the configuration and starts the server,
// then creates the namespace and search attributes the dev server takes as flags.
func (t *Temporal) startProduction(ctx context.Context) error {
	p := t.Production
	for _, db := range []struct{ name, schema string }{{"temporal", "postgresql/v12/temporal"}, {"temporal_visibility", "postgresql/v12/visibility"}} {
		if err := p.schema(ctx, db.name, db.schema); err != nil {
			return err
		}
	}
	// Frontend HTTP, matching, history, worker (gRPC), then the four membership ports,
	// which Temporal stores as smallint (below 32768).
	ports, err := p.freePorts()
	if err != nil {
		return err
	}
	confDir := filepath.Join(t.Dir, "config")
	if err := os.MkdirAll(confDir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(confDir, "production.yaml"), []byte(p.config(t.Port, ports, confDir)), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(confDir, "dynamicconfig.yaml"), []byte(productionDynamicConfig), 0o644); err != nil {
		return err
	}
	proc, err := StartProc("temporal-server", filepath.Join(t.Dir, "temporal.log"), p.Server,
		[]string{"--root", t.Dir, "--config", "config", "--env", "production", "--allow-no-auth", "start"}, nil)
	if err != nil {
		return err
	}
	t.proc.Store(proc)
	ns := t.namespace()
	err = WaitReady(ctx, proc, 120*time.Second, func(ctx context.Context) error {
		c, err := client.DialContext(ctx, client.Options{HostPort: t.Address(), Logger: quietLogger{}})
		if err != nil {
			return err
		}
		defer c.Close()
		if _, err := c.CheckHealth(ctx, &client.CheckHealthRequest{}); err != nil {
			return err
		}
		return t.ensureNamespace(ctx, c, ns)
	})
	if err != nil {
		proc.Stop(10 * time.Second)
	}
	return err
}

// ensureNamespace registers ns and the search attributes (once), and succeeds once the
// namespace answers with every attribute in place.
func (t *Temporal) ensureNamespace(ctx context.Context, c client.Client, ns string) error {
	svc := c.WorkflowService()
	if _, err := svc.DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: ns}); err != nil {
		_, err := svc.RegisterNamespace(ctx, &workflowservice.RegisterNamespaceRequest{Namespace: ns,
			WorkflowExecutionRetentionPeriod: durationpb.New(72 * time.Hour)})
		if err != nil && !strings.Contains(err.Error(), "already") {
			return err
		}
		return errNotReady
	}
	have, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: ns})
	if err != nil {
		return err
	}
	missing := map[string]enumspb.IndexedValueType{}
	names := make([]string, 0, len(t.SearchAttributes))
	for n := range t.SearchAttributes {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if _, ok := have.GetCustomAttributes()[n]; ok {
			continue
		}
		typ, ok := enumspb.IndexedValueType_shorthandValue[t.SearchAttributes[n]]
		if !ok {
			return fmt.Errorf("search attribute %s: unknown type %q", n, t.SearchAttributes[n])
		}
		missing[n] = enumspb.IndexedValueType(typ)
	}
	if len(missing) == 0 {
		return nil
	}
	if _, err := c.OperatorService().AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{
		Namespace: ns, SearchAttributes: missing}); err != nil {
		return err
	}
	return errNotReady // check again that they are in place
}

// schema creates database db when missing and brings its schema to the newest version
// the server embeds (name).
func (p *productionServer) schema(ctx context.Context, db, name string) error {
	tool := func(args ...string) error {
		base := []string{"--plugin", "postgres12", "--ep", "127.0.0.1", "-p", strconv.Itoa(p.Postgres.Port), "-u", "postgres", "--db", db}
		out, err := exec.CommandContext(ctx, p.SQLTool, append(base, args...)...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("temporal-sql-tool %s on %s: %v: %s", args[0], db, err, out)
		}
		return nil
	}
	out, err := exec.CommandContext(ctx, "psql", "-h", "127.0.0.1", "-p", strconv.Itoa(p.Postgres.Port), "-U", "postgres", "-tAc",
		"SELECT 1 FROM pg_database WHERE datname = '"+db+"'").Output()
	if err != nil {
		return fmt.Errorf("psql: %w", err)
	}
	if strings.TrimSpace(string(out)) != "1" {
		if err := tool("create-database"); err != nil {
			return err
		}
		if err := tool("setup-schema", "-v", "0.0"); err != nil {
			return err
		}
	}
	return tool("update-schema", "--schema-name", name)
}

// config is the server's configuration: PostgreSQL for both stores, the frontend on
// port, the other services on ports.
func (p *productionServer) config(port int, ports []int, confDir string) string {
	shards := p.Shards
	if shards <= 0 {
		shards = DefaultShards
	}
	store := func(db string, conns int) string {
		return fmt.Sprintf(`      sql:
        pluginName: postgres12
        databaseName: %s
        connectAddr: 127.0.0.1:%d
        connectProtocol: tcp
        user: postgres
        maxConns: %d
        maxIdleConns: %d
        maxConnLifetime: 1h
`, db, p.Postgres.Port, conns, conns)
	}
	service := func(name string, grpc, membership int, extra string) string {
		return fmt.Sprintf("  %s:\n    rpc:\n      grpcPort: %d\n      membershipPort: %d\n      bindOnLocalHost: true\n%s", name, grpc, membership, extra)
	}
	return "log:\n  stdout: true\n  level: warn\n" +
		"persistence:\n  defaultStore: default\n  visibilityStore: visibility\n" +
		fmt.Sprintf("  numHistoryShards: %d\n  datastores:\n    default:\n", shards) + store("temporal", 40) +
		"    visibility:\n" + store("temporal_visibility", 10) +
		"global:\n  membership:\n    maxJoinDuration: 30s\n    broadcastAddress: 127.0.0.1\n" +
		"services:\n" +
		service("frontend", port, ports[4], fmt.Sprintf("      httpPort: %d\n", ports[0])) +
		service("matching", ports[1], ports[5], "") +
		service("history", ports[2], ports[6], "") +
		service("worker", ports[3], ports[7], "") +
		"clusterMetadata:\n  enableGlobalNamespace: false\n  failoverVersionIncrement: 10\n  masterClusterName: active\n" +
		"  currentClusterName: active\n  clusterInformation:\n    active:\n      enabled: true\n      initialFailoverVersion: 1\n" +
		fmt.Sprintf("      rpcName: frontend\n      rpcAddress: 127.0.0.1:%d\n", port) +
		"dcRedirectionPolicy:\n  policy: noop\n" +
		fmt.Sprintf("dynamicConfigClient:\n  filepath: %s\n  pollInterval: 10s\n", filepath.Join(confDir, "dynamicconfig.yaml"))
}

// productionDynamicConfig: as the dev server's flags (stack.go), eager activities and a
// transfer queue that is not rate limited below what a fan-out needs.
const productionDynamicConfig = `system.enableActivityEagerExecution:
  - value: true
history.transferProcessorMaxPollRPS:
  - value: 1000
frontend.namespaceRPS:
  - value: 20000
frontend.namespaceCount:
  - value: 20000
`
