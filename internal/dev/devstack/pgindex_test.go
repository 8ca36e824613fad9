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

// A btree FerretDB makes on fields gets a GIN twin of each that serves FerretDB's @>
// lookups, without a pending list (fastupdate off); one made before that was turned off
// is turned off when the mirror is installed again. A non-unique btree is made hollow,
// whether it was made before the mirror was installed or after.
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
	// As FerretDB 1.x lays out a collection, its _id and an index on "kind"; the GIN twin
	// of "kind" as an earlier mirror made it, with a pending list; and an index on parent,
	// kind and name made while no mirror was installed.
	sql(`CREATE SCHEMA temco; CREATE TABLE temco.resources_1 (_jsonb jsonb);
		CREATE UNIQUE INDEX resources_1_id ON temco.resources_1 ((_jsonb -> '_id'));
		CREATE INDEX resources_1_kind ON temco.resources_1 ((_jsonb -> 'kind'))`)
	kindTwin := sql(`SELECT temco_gin_twin('resources_1', '((_jsonb -> ''kind''::text))')`)
	sql(`ALTER INDEX temco.` + kindTwin + ` SET (fastupdate = on)`)
	sql(`DROP EVENT TRIGGER temco_gin_mirror;
		CREATE INDEX resources_1_pkn ON temco.resources_1 ((_jsonb -> 'parent'), (_jsonb -> 'kind'), (_jsonb -> 'name'))`)
	if err := p.mirrorIndexes(ctx); err != nil {
		t.Fatal(err)
	}

	twins := sql(`SELECT pg_get_indexdef(c.oid) || ' ' || coalesce(array_to_string(c.reloptions, ','), '') FROM pg_class c
		JOIN pg_am am ON am.oid = c.relam WHERE am.amname = 'gin' AND c.relname LIKE 'resources_1%' ORDER BY 1`)
	lines := strings.Split(twins, "\n")
	if len(lines) != 4 || !strings.Contains(twins, "'_id'") || !strings.Contains(twins, "'kind'") ||
		!strings.Contains(twins, "'parent'") || !strings.Contains(twins, "'name'") {
		t.Fatalf("GIN twins:\n%s\nwant one each for _id, kind, parent and name", twins)
	}
	for _, l := range lines {
		if !strings.Contains(l, "jsonb_path_ops") || !strings.HasSuffix(l, "fastupdate=off") {
			t.Errorf("GIN twin %q: want jsonb_path_ops without fastupdate", l)
		}
	}
	btrees := func() string {
		return sql(`SELECT c.relname || ' ' || coalesce(pg_get_expr(i.indpred, i.indrelid), 'full') FROM pg_index i
			JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am am ON am.oid = c.relam
			WHERE am.amname = 'btree' AND c.relname LIKE 'resources_1%' ORDER BY 1`)
	}
	want := "resources_1_id full\nresources_1_kind false\nresources_1_pkn false"
	if got := btrees(); got != want {
		t.Errorf("btrees:\n%s\nwant the unique one full, the others hollow:\n%s", got, want)
	}
	// An index made later (FerretDB makes them lazily) is mirrored and hollowed as it is
	// made, and FerretDB can still drop a hollow one by its name.
	sql(`CREATE INDEX resources_1_scope ON temco.resources_1 ((_jsonb -> 'scope'), (_jsonb -> 'kind'))`)
	sql(`DROP INDEX temco.resources_1_kind`)
	want = "resources_1_id full\nresources_1_pkn false\nresources_1_scope false"
	if got := btrees(); got != want {
		t.Errorf("btrees after one made and one dropped:\n%s\nwant:\n%s", got, want)
	}
	sql(`INSERT INTO temco.resources_1 SELECT jsonb_build_object('_id', g::text, 'parent', '/projects/p', 'kind', 'app', 'scope', 's')
		FROM generate_series(1, 1000) g; ANALYZE temco.resources_1`)
	if size := sql(`SELECT pg_relation_size('temco.resources_1_pkn') + pg_relation_size('temco.resources_1_scope')`); size != "16384" {
		t.Errorf("the hollow btrees take %s bytes after 1,000 rows, want two metapages (16384)", size)
	}
	for _, field := range []string{"_id", "parent", "kind", "name", "scope"} {
		plan := sql(`SET enable_seqscan = off; EXPLAIN SELECT _jsonb FROM temco.resources_1 WHERE _jsonb -> '` + field + `' @> '"x"'`)
		if !strings.Contains(plan, "Bitmap Index Scan on resources_1_") || !strings.Contains(plan, "_gin") {
			t.Errorf("a lookup by %s:\n%s\nwant it served by the GIN twin", field, plan)
		}
	}
}
