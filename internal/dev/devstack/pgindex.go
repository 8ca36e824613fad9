package devstack

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
)

// ginMirror makes the indexes temco asks FerretDB for usable by FerretDB's queries, and
// spares the writes the btrees those queries never use.
//
// FerretDB 1.x with PostgreSQL stores each document as one jsonb column and turns an
// index on "field" into a btree on (_jsonb -> 'field'), but pushes an equality filter
// down as (_jsonb -> 'field') @> 'value', which a btree cannot serve: every lookup,
// even by _id, is a sequential scan (12–15 ms at 10,000 documents, growing with the
// collection). For every such btree this adds a GIN jsonb_path_ops index on each of its
// expressions, which serves @> (1.3–2 ms, flat). Each one, not only the leading one:
// placement's lookup of a label filters by scope, kind and name, and the scope (the
// provider) holds every cluster and label, so the scope's twin alone would read them all
// to find the few with that label. Without fastupdate: with it, new entries wait in a
// pending list (up to 4 MB) that every lookup reads through, and temco's writes fill it
// between two vacuums (a lookup 0.05 ms with the list empty, 1.2–1.5 ms with 33,000
// entries in it, measured).
//
// The btree itself then serves nothing: FerretDB sorts only by record id and updates and
// deletes by _id, whose unique btree stays. A non-unique one is made hollow (the same
// name and columns, WHERE false): PostgreSQL keeps nothing in it, so a write no longer
// updates it, and FerretDB, which knows it by name, can still drop it.
//
// An event trigger covers indexes created later (FerretDB creates tables and indexes
// lazily); the final SELECT covers existing ones. It needs plan_cache_mode=
// force_custom_plan on the server: FerretDB passes the field name as a parameter, and only
// a custom plan folds it into the indexed expression.
const ginMirror = `
CREATE OR REPLACE FUNCTION temco_gin_mirror(idx oid) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  tbl regclass;
  rel name;
  nsp name;
  cols int;
  uniq bool;
  hollow bool;
  def text;
  expr text;
BEGIN
  SELECT i.indrelid::regclass, t.relname, n.nspname, i.indnatts, i.indisunique, i.indpred IS NOT NULL
    INTO tbl, rel, nsp, cols, uniq, hollow
    FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am am ON am.oid = c.relam
    JOIN pg_class t ON t.oid = i.indrelid JOIN pg_namespace n ON n.oid = t.relnamespace
    WHERE i.indexrelid = idx AND am.amname = 'btree';
  IF tbl IS NULL THEN
    RETURN;
  END IF;
  FOR col IN 1..cols LOOP
    expr := pg_get_indexdef(idx, col, false);
    CONTINUE WHEN expr NOT LIKE '((\_jsonb %'; -- (_jsonb -> 'field') or (_jsonb #> '{a,b}')
    EXECUTE format('CREATE INDEX IF NOT EXISTS %I ON %s USING gin (%s jsonb_path_ops) WITH (fastupdate = off)',
      temco_gin_twin(rel, expr), tbl, expr);
    -- One made before fastupdate was turned off: turned off, its pending list emptied.
    EXECUTE format('ALTER INDEX %I.%I SET (fastupdate = off)', nsp, temco_gin_twin(rel, expr));
    PERFORM gin_clean_pending_list(format('%I.%I', nsp, temco_gin_twin(rel, expr))::regclass);
  END LOOP;
  IF NOT uniq AND NOT hollow AND pg_get_indexdef(idx, 1, false) LIKE '((\_jsonb %' THEN
    def := pg_get_indexdef(idx);
    EXECUTE format('DROP INDEX %I.%I', nsp, (SELECT relname FROM pg_class WHERE oid = idx));
    EXECUTE def || ' WHERE false';
  END IF;
END $$;

CREATE OR REPLACE FUNCTION temco_gin_twin(rel name, expr text) RETURNS text LANGUAGE sql IMMUTABLE AS $$
  SELECT left(rel, 40) || '_' || left(md5(expr), 8) || '_gin'
$$;

CREATE OR REPLACE FUNCTION temco_gin_mirror_new() RETURNS event_trigger LANGUAGE plpgsql AS $$
DECLARE
  obj record;
BEGIN
  FOR obj IN SELECT objid FROM pg_event_trigger_ddl_commands() WHERE object_type = 'index' LOOP
    PERFORM temco_gin_mirror(obj.objid);
  END LOOP;
END $$;

DROP EVENT TRIGGER IF EXISTS temco_gin_mirror;
CREATE EVENT TRIGGER temco_gin_mirror ON ddl_command_end WHEN TAG IN ('CREATE INDEX')
  EXECUTE FUNCTION temco_gin_mirror_new();

SELECT count(temco_gin_mirror(i.indexrelid)) FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid
  JOIN pg_namespace n ON n.oid = c.relnamespace
  WHERE n.nspname NOT IN ('pg_catalog', 'information_schema', 'pg_toast');
`

// mirrorIndexes installs ginMirror into the ferretdb database.
func (p *Postgres) mirrorIndexes(ctx context.Context) error {
	out, err := exec.CommandContext(ctx, "psql", "-h", "127.0.0.1", "-p", strconv.Itoa(p.Port), "-U", "postgres",
		"-d", "ferretdb", "-v", "ON_ERROR_STOP=1", "-qtAc", ginMirror).CombinedOutput()
	if err != nil {
		return fmt.Errorf("index mirroring: %v: %s", err, out)
	}
	return nil
}
