// Package testenv gives tests the real components they run against (FerretDB, and
// later Temporal and local clusters) plus archive fixtures (Helm charts, profiles).
package testenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/temco/temco/internal/dev/devstack"
)

// RepoRoot finds the repository root (the directory holding .bin and go.mod).
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "tools", "build.sh")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("repository root not found above the working directory")
		}
		dir = parent
	}
}

// BinDir is the directory of the built tools.
func BinDir() (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, ".bin"), nil
}

// StartFerretDB runs a private FerretDB on a free port with data under dir.
func StartFerretDB(dir string) (*devstack.FerretDB, error) {
	bin, err := BinDir()
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(bin, "ferretdb")); err != nil {
		return nil, fmt.Errorf("ferretdb is not built: run `make tools` (%w)", err)
	}
	port, err := devstack.FreePort()
	if err != nil {
		return nil, err
	}
	f := &devstack.FerretDB{Bin: filepath.Join(bin, "ferretdb"), Dir: dir, Port: port}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return f, f.Start(ctx)
}

// Backends are the storage backends of FerretDB that temco supports.
var Backends = []string{"sqlite", "postgresql"}

// Backend is a private FerretDB on one of its storage backends.
type Backend struct {
	Name     string // "sqlite" or "postgresql"
	Ferret   *devstack.FerretDB
	Postgres *devstack.Postgres // nil on SQLite
}

// URI is the MongoDB connection string of the backend's FerretDB.
func (b *Backend) URI() string { return b.Ferret.URI() }

// Stop ends FerretDB and, on PostgreSQL, its server.
func (b *Backend) Stop() {
	b.Ferret.Stop()
	if b.Postgres != nil {
		b.Postgres.Stop()
	}
}

// StartBackend runs a private FerretDB on backend name ("sqlite" or "postgresql") with
// its data under dir.
func StartBackend(dir, name string) (*Backend, error) {
	if name == "sqlite" {
		f, err := StartFerretDB(dir)
		return &Backend{Name: name, Ferret: f}, err
	}
	bin, err := BinDir()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil { // PostgreSQL, running as its own user, must reach its data
		return nil, err
	}
	pgPort, err := devstack.FreePort()
	if err != nil {
		return nil, err
	}
	port, err := devstack.FreePort()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pg := &devstack.Postgres{Dir: filepath.Join(dir, "postgres"), Port: pgPort}
	if err := pg.Start(ctx); err != nil {
		return nil, fmt.Errorf("start PostgreSQL: %w", err)
	}
	f := &devstack.FerretDB{Bin: filepath.Join(bin, "ferretdb"), Dir: filepath.Join(dir, "ferretdb"), Port: port, PostgresURL: pg.URL()}
	if err := f.Start(ctx); err != nil {
		pg.Stop()
		return nil, err
	}
	return &Backend{Name: name, Ferret: f, Postgres: pg}, nil
}

// MainWithBackends runs a package's tests with a private FerretDB on each of Backends,
// set into *bs in that order, and exits with their result.
func MainWithBackends(m *testing.M, bs *[]*Backend) {
	dir, err := os.MkdirTemp("", "temco-test-")
	if err == nil {
		err = os.Chmod(dir, 0o755) // PostgreSQL runs as its own user
	}
	for _, name := range Backends {
		if err != nil {
			break
		}
		var b *Backend
		if b, err = StartBackend(filepath.Join(dir, name), name); err == nil {
			*bs = append(*bs, b)
		}
	}
	code := 1
	if err != nil {
		fmt.Fprintln(os.Stderr, "start FerretDB:", err)
	} else {
		code = m.Run()
	}
	for _, b := range *bs {
		b.Stop()
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// MainWithFerretDB runs a package's tests with a private FerretDB, set into *f for them,
// and exits with their result.
func MainWithFerretDB(m *testing.M, f **devstack.FerretDB) {
	dir, err := os.MkdirTemp("", "temco-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if *f, err = StartFerretDB(dir); err != nil {
		fmt.Fprintln(os.Stderr, "start FerretDB:", err)
		os.Exit(1)
	}
	code := m.Run()
	(*f).Stop()
	os.RemoveAll(dir)
	os.Exit(code)
}

// Database connects to database name of f, dropped when the test ends.
func Database(t *testing.T, f *devstack.FerretDB, name string) *mongo.Database {
	t.Helper()
	client, err := mongo.Connect(options.Client().ApplyURI(f.URI()))
	if err != nil {
		t.Fatal(err)
	}
	db := client.Database(name)
	t.Cleanup(func() {
		_ = db.Drop(context.Background())
		_ = client.Disconnect(context.Background())
	})
	return db
}

// Race runs fns at once, released together, and returns their results in order.
func Race[T any](fns ...func() T) []T {
	out := make([]T, len(fns))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, fn := range fns {
		wg.Go(func() {
			<-start
			out[i] = fn()
		})
	}
	close(start)
	wg.Wait()
	return out
}

// WorkingChildren lists the children of pid that used CPU over the interval given: a
// sandbox's spare child waits for its request without any, a job left running uses it.
func WorkingChildren(pid int, over time.Duration) ([]int, error) {
	kids, err := Children(pid)
	if err != nil || len(kids) == 0 {
		return nil, err
	}
	before := map[int]int64{}
	for _, k := range kids {
		before[k] = cpuTicks(k)
	}
	time.Sleep(over) // the interval measured, not a wait for something to happen
	var out []int
	for _, k := range kids {
		if after := cpuTicks(k); after > before[k] {
			out = append(out, k)
		}
	}
	return out, nil
}

// ClockTick is the unit of ProcCPU's ticks (USER_HZ, 100 on Linux).
const ClockTick = 10 * time.Millisecond

// ProcCPU reads /proc/<pid>/stat: the process's name (its comm) and its user and system
// time in clock ticks; ok is false once it has ended. The benchmarks' CPU figures and
// WorkingChildren read it.
func ProcCPU(pid int) (name string, ticks int64, ok bool) {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", 0, false
	}
	s := string(stat)
	lp, rp := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')') // a comm may hold ')' itself
	if lp < 0 || rp < lp {
		return "", 0, false
	}
	f := strings.Fields(s[rp+1:]) // state is f[0]; utime, stime are fields 14, 15 of the line
	if len(f) < 13 {
		return "", 0, false
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return s[lp+1 : rp], u + st, true
}

// cpuTicks is ProcCPU's ticks, -1 once the process has ended.
func cpuTicks(pid int) int64 {
	if _, t, ok := ProcCPU(pid); ok {
		return t
	}
	return -1
}

// Children lists the processes whose parent is pid (Linux: /proc).
func Children(pid int) ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var out []int
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // ended meanwhile
		}
		// pid (comm) state ppid ...: comm may hold spaces, so read after its ')'.
		s := string(stat)
		if f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:]); len(f) > 1 && f[1] == strconv.Itoa(pid) {
			out = append(out, child)
		}
	}
	return out, nil
}
