package devstack

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// FerretDB is a MongoDB-wire server backed by SQLite files in Dir, or by PostgreSQL
// when PostgresURL is set.
type FerretDB struct {
	Bin         string // path of the ferretdb binary
	Dir         string // data directory (SQLite files, state, log)
	Port        int
	PostgresURL string
	proc        atomic.Pointer[Proc] // replaced by a restart while others read it
}

// URI is the MongoDB connection string of the server.
func (f *FerretDB) URI() string { return fmt.Sprintf("mongodb://127.0.0.1:%d/", f.Port) }

// Start runs FerretDB and waits until it answers a ping.
func (f *FerretDB) Start(ctx context.Context) error {
	data := filepath.Join(f.Dir, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		return err
	}
	backend := []string{"--handler=sqlite", "--sqlite-url=file:" + data + "/"}
	if f.PostgresURL != "" {
		backend = []string{"--handler=postgresql", "--postgresql-url=" + f.PostgresURL}
	}
	p, err := StartProc("ferretdb", filepath.Join(f.Dir, "ferretdb.log"), f.Bin, append(backend,
		"--state-dir="+f.Dir, fmt.Sprintf("--listen-addr=127.0.0.1:%d", f.Port),
		// TEMCO_FERRETDB_DEBUG_ADDR serves FerretDB's pprof there (a benchmark's profile).
		"--debug-addr="+cmp.Or(os.Getenv("TEMCO_FERRETDB_DEBUG_ADDR"), "-"),
		"--telemetry=disable", "--log-level=WARN"), []string{
		// FerretDB builds and drops a tree of values for every document it passes: at
		// Go's default (100) its collector took 14 % of its CPU. At 400 FerretDB takes 13 %
		// less CPU per API request (BENCHMARKS.md, 2026-12-07 evening); the limit keeps
		// a large answer's garbage from growing the heap past 2 GiB.
		"GOGC=400", "GOMEMLIMIT=2GiB",
	})
	if err != nil {
		return err
	}
	f.proc.Store(p)
	client, err := mongo.Connect(options.Client().ApplyURI(f.URI()).SetServerSelectionTimeout(time.Second))
	if err != nil {
		p.Stop(5 * time.Second)
		return err
	}
	defer client.Disconnect(context.Background())
	if err := WaitReady(ctx, p, 60*time.Second, func(ctx context.Context) error { return client.Ping(ctx, nil) }); err != nil {
		p.Stop(5 * time.Second)
		return err
	}
	return nil
}

// Proc is the running server process.
func (f *FerretDB) Proc() *Proc { return f.proc.Load() }

// Stop ends the server.
func (f *FerretDB) Stop() { f.proc.Load().Stop(10 * time.Second) }
