-- Companion GIN indexes for FerretDB v1's PostgreSQL backend (loaded into the `ferretdb`
-- database by test/kit/infra/postgres.sh; idempotent).
--
-- FerretDB pushes an equality filter down as `_jsonb->'field' @> '<value>'`, but creates each
-- MongoDB index as a btree on `(_jsonb->'field')`, and a btree cannot serve `@>`: every pushed-down
-- query, `_id` lookups included, is a sequential scan (load/README.md has the figures). This
-- event trigger gives every btree index FerretDB creates a GIN index per key expression, which
-- serves `@>`, so the same queries become index scans. Nothing else changes: FerretDB keeps
-- enforcing uniqueness with its own btree indexes.
CREATE OR REPLACE FUNCTION agentfleet_ferretdb_gin() RETURNS event_trigger
LANGUAGE plpgsql AS $$
DECLARE
  cmd record;
  ix pg_index;
  expr text;
  i int;
BEGIN
  FOR cmd IN SELECT * FROM pg_event_trigger_ddl_commands() WHERE command_tag = 'CREATE INDEX' LOOP
    SELECT * INTO ix FROM pg_index WHERE indexrelid = cmd.objid;
    CONTINUE WHEN NOT FOUND;
    CONTINUE WHEN (SELECT a.amname FROM pg_class c JOIN pg_am a ON a.oid = c.relam
                   WHERE c.oid = cmd.objid) <> 'btree';
    FOR i IN 1..ix.indnkeyatts LOOP
      expr := pg_get_indexdef(cmd.objid, i, false);
      CONTINUE WHEN expr NOT LIKE '%_jsonb%->%';
      EXECUTE format('CREATE INDEX IF NOT EXISTS %I ON %s USING gin ((%s))',
        left((SELECT relname FROM pg_class WHERE oid = cmd.objid), 54) || '_gin' || i,
        ix.indrelid::regclass, expr);
    END LOOP;
  END LOOP;
END
$$;
DROP EVENT TRIGGER IF EXISTS agentfleet_ferretdb_gin;
CREATE EVENT TRIGGER agentfleet_ferretdb_gin ON ddl_command_end
  WHEN TAG IN ('CREATE INDEX') EXECUTE FUNCTION agentfleet_ferretdb_gin();
