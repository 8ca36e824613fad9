package devstack

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"
)

// Postgres is a private PostgreSQL server under Dir, the faster backend for FerretDB.
// It is for local use only: fsync is off (a machine crash may lose data; a killed
// process loses nothing).
type Postgres struct {
	Dir  string
	Port int
	proc atomic.Pointer[Proc] // replaced by a restart while others read it
}

// URL is the connection URL of the database FerretDB stores into. FerretDB 1.x stops
// answering when more requests are in flight than its pool has connections (50 by
// default: seen with two workers of 100 MongoDB connections each, every request waiting
// minutes), so its pool is made larger than what temco's processes open (100 each).
func (p *Postgres) URL() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/ferretdb?pool_max_conns=%d", p.Port, ferretPoolConns)
}

// ferretPoolConns is FerretDB's pool: above 4 temco processes' 100 connections each.
const ferretPoolConns = 450

// asPostgres runs a PostgreSQL program as the "postgres" user when we are root: the
// server refuses to run as root.
func asPostgres(name string, args ...string) (string, []string) {
	if os.Geteuid() != 0 {
		return name, args
	}
	return "runuser", append([]string{"-u", "postgres", "--", name}, args...)
}

// Start initialises the data directory on first use, starts the server and creates the
// ferretdb database.
func (p *Postgres) Start(ctx context.Context) error {
	data := filepath.Join(p.Dir, "data")
	if _, err := os.Stat(filepath.Join(data, "PG_VERSION")); errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(data, 0o700); err != nil {
			return err
		}
		if err := chownToPostgres(p.Dir); err != nil {
			return err
		}
		bin, args := asPostgres("initdb", "-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C.UTF-8", "--no-sync")
		if out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput(); err != nil {
			return fmt.Errorf("initdb: %v: %s", err, out)
		}
	}
	bin, args := asPostgres("postgres", "-D", data, "-p", strconv.Itoa(p.Port), "-h", "127.0.0.1", "-k", p.Dir,
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off", "-c", "max_connections=600", // FerretDB's pool (ferretPoolConns) and the production Temporal's
		"-c", "plan_cache_mode=force_custom_plan", // see ginMirror
		// Vacuums sooner than PostgreSQL's defaults (a minute apart, a fifth of a table
		// changed): claims are inserted and deleted around every write, and lookups read
		// their dead rows until a vacuum (CPU per API request 2.6-2.7 → 2.3 ms, BENCHMARKS.md).
		"-c", "autovacuum_naptime=5s", "-c", "autovacuum_vacuum_scale_factor=0.02", "-c", "autovacuum_vacuum_insert_scale_factor=0.02")
	proc, err := StartProc("postgres", filepath.Join(p.Dir, "postgres.log"), bin, args, nil)
	if err != nil {
		return err
	}
	p.proc.Store(proc)
	err = WaitReady(ctx, proc, 60*time.Second, func(ctx context.Context) error {
		out, err := exec.CommandContext(ctx, "psql", "-h", "127.0.0.1", "-p", strconv.Itoa(p.Port), "-U", "postgres", "-tAc",
			"SELECT 1 FROM pg_database WHERE datname = 'ferretdb'").Output()
		if err != nil {
			return err
		}
		if string(out) == "1\n" {
			return nil
		}
		if out, err := exec.CommandContext(ctx, "createdb", "-h", "127.0.0.1", "-p", strconv.Itoa(p.Port), "-U", "postgres", "ferretdb").CombinedOutput(); err != nil {
			return fmt.Errorf("createdb: %v: %s", err, out)
		}
		return errNotReady // check again
	})
	if err == nil {
		err = p.mirrorIndexes(ctx)
	}
	if err != nil {
		proc.Stop(10 * time.Second)
	}
	return err
}

func chownToPostgres(dir string) error {
	if os.Geteuid() != 0 {
		return nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return fmt.Errorf("the postgres user is needed to run PostgreSQL as root: %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return filepath.Walk(dir, func(path string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Chown(path, uid, gid)
	})
}

// Proc is the running server process.
func (p *Postgres) Proc() *Proc { return p.proc.Load() }

// Stop ends the server (SIGTERM: PostgreSQL's smart shutdown).
func (p *Postgres) Stop() { p.proc.Load().Stop(15 * time.Second) }
