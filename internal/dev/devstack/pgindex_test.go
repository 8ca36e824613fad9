package devstack

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A btree FerretDB makes on a field gets a GIN twin that serves FerretDB's @> lookups,
// without a pending list (fastupdate off); one made before that was turned off is turned
// off when the mirror is installed again.
func TestFerretDBIndexesGetGINTwinsWithoutPendingLists(t *testing.T) {
	if testing.Short() {
		t.Skip("starts PostgreSQL")
	}
	dir, err := os.MkdirTemp("", "pgindex")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil { // PostgreSQL runs as its own user
		t.Fatal(err)
	}
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	p := &Postgres{Dir: dir, Port: port}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	sql := func(q string) string {
		t.Helper()
		out, err := exec.CommandContext(ctx, "psql", "-h", "127.0.0.1", "-p", strconv.Itoa(port), "-U", "postgres", "-d", "ferretdb",
			"-v", "ON_ERROR_STOP=1", "-qtAc", q).CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v: %s", q, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	// As FerretDB 1.x lays out a collection and an index on "parent"; and a GIN twin of an
	// index on "kind" as an earlier mirror made it, with a pending list.
	sql(`CREATE SCHEMA temco; CREATE TABLE temco.resources_1 (_jsonb jsonb);
		CREATE INDEX resources_1_kind ON temco.resources_1 ((_jsonb -> 'kind'))`)
	kindTwin := sql(`SELECT c.relname FROM pg_class c JOIN pg_am am ON am.oid = c.relam WHERE am.amname = 'gin' AND c.relname LIKE 'resources_1%'`)
	sql(`ALTER INDEX temco.` + kindTwin + ` SET (fastupdate = on)`)
	sql(`CREATE INDEX resources_1_parent ON temco.resources_1 ((_jsonb -> 'parent'))`)
	if err := p.mirrorIndexes(ctx); err != nil {
		t.Fatal(err)
	}

	twins := sql(`SELECT pg_get_indexdef(c.oid) || ' ' || coalesce(array_to_string(c.reloptions, ','), '') FROM pg_class c
		JOIN pg_am am ON am.oid = c.relam WHERE am.amname = 'gin' AND c.relname LIKE 'resources_1%' ORDER BY 1`)
	lines := strings.Split(twins, "\n")
	if len(lines) != 2 {
		t.Fatalf("GIN twins:\n%s\nwant one for kind and one for parent", twins)
	}
	for _, l := range lines {
		if !strings.Contains(l, "jsonb_path_ops") || !strings.HasSuffix(l, "fastupdate=off") {
			t.Errorf("GIN twin %q: want jsonb_path_ops without fastupdate", l)
		}
	}
	plan := sql(`SET enable_seqscan = off; EXPLAIN SELECT _jsonb FROM temco.resources_1 WHERE _jsonb -> 'parent' @> '"/projects/p"'`)
	if !strings.Contains(plan, "Bitmap Index Scan") {
		t.Errorf("a lookup by parent:\n%s\nwant it served by the GIN twin", plan)
	}
}
