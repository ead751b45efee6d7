-- Every call the extension makes to its own functions and operators reaches exactly its own
-- object, even when a hostile role can create objects in the extension's schema.
--
-- How this proves it: the resolution of a schema-qualified call looks only at the functions of
-- that name in that schema. A call whose arguments all have exactly the declared types of the
-- extension's function has that function as its one exact match, and an exact match is taken
-- before any other candidate is weighed, whatever else exists. A call with a loosely typed
-- argument (an unknown-typed literal, an integer constant for a bigint, a column of a domain...)
-- at position i, or one that leaves defaulted arguments out, is matched better or equally well
-- by an overload that differs from the extension's function in position i alone (having there
-- the type the argument really has, or text for an unknown literal), or that is the extension's
-- signature cut after the arguments given. So the role below plants, for every function of the
-- extension, every overload of that kind for a broad set of argument types; each raises an
-- exception when run. Then every function of the extension that makes calls of its own (the
-- PL/pgSQL functions listed below, the joins that read through SPI, and the Citus paths, run
-- here against a stand-in for Citus's catalog and its master_run_on_worker that executes each
-- command in this session) runs and gives its usual answer: a call that reached a plant would
-- have raised it, and an ambiguous one would have failed with 42725. Parsing the bodies could
-- only check the form of the calls; this shows their resolution, including the calls built as
-- text for the Citus workers.
\set SHOW_CONTEXT never
\i sql/include/sqlerr.sql


-- The attack: a role that can create in the extension's schema plants an overload that an
-- internal call with unknown-typed literals would resolve to, and waits for a superuser.
CREATE ROLE spotsigs_ic_other LOGIN;
GRANT CREATE ON SCHEMA public TO spotsigs_ic_other;
SET ROLE spotsigs_ic_other;
CREATE FUNCTION public.spotsigs_join_rs(text, text, text, regclass, name, name, double precision)
RETURNS TABLE(r_id bigint, s_id bigint, similarity double precision) LANGUAGE plpgsql AS $$
BEGIN IF (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
  EXECUTE 'ALTER ROLE spotsigs_ic_other SUPERUSER'; END IF; END $$;
RESET ROLE;
CREATE TABLE ic_fb (id int PRIMARY KEY, sig spotsig, dup int, sim float8);
INSERT INTO ic_fb VALUES (1, '{1,2,3}'), (2, '{1,2,3}');
SELECT spotsigs_flag_batch('ic_fb'::regclass, 'id'::name, 'sig'::name, 'dup'::name, 'sim'::name, 0.5::float8, 1::bigint);
SELECT rolsuper FROM pg_roles WHERE rolname = 'spotsigs_ic_other';
SELECT * FROM ic_fb ORDER BY id;
-- What such a role can still do: an overload that equals the extension's signature followed by a
-- defaulted argument ties with it, and the call fails with 42725 (not unique). The plant never runs.
SET ROLE spotsigs_ic_other;
CREATE FUNCTION public.spotsigs_join_rs(regclass, name, name, regclass, name, name, double precision, integer, text,
                                        text, integer DEFAULT 0)
RETURNS TABLE(r_id bigint, s_id bigint, similarity double precision) LANGUAGE plpgsql AS $$
BEGIN EXECUTE 'ALTER ROLE spotsigs_ic_other SUPERUSER'; END $$;
RESET ROLE;
SELECT sqlerr($$SELECT spotsigs_flag_batch('ic_fb'::regclass, 'id'::name, 'sig'::name, 'dup'::name, 'sim'::name, 0.5::float8, 1::bigint)$$);
SELECT rolsuper FROM pg_roles WHERE rolname = 'spotsigs_ic_other';
DROP FUNCTION public.spotsigs_join_rs(regclass, name, name, regclass, name, name, double precision, integer, text, text, integer);
DROP TABLE ic_fb;
DROP FUNCTION public.spotsigs_join_rs(text, text, text, regclass, name, name, double precision);
REVOKE CREATE ON SCHEMA public FROM spotsigs_ic_other;
DROP ROLE spotsigs_ic_other;

-- The extension's functions that are not C: the ones whose SQL calls other objects. A new one
-- must be run below (this list changes when one is added).
SELECT p.proname, l.lanname
  FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang
  JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e'
  JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'spotsigs'
 WHERE l.lanname <> 'c' AND p.prokind = 'f'
 ORDER BY 1;

BEGIN;
-- A stand-in for Citus: its catalog tables, shard_name, citus_table_size, a master_run_on_worker
-- and a run_command_on_shards that run each command in this session, intermediate results kept
-- in a table (a pushed-down query of the joins then runs here too), and an extension row named citus
-- (what the joins look for). Table ic_ct is "distributed" over two nodes with a shard each
-- (tables that inherit from it, as the shell table of a Citus table reads its shards); ic_cd
-- likewise, with one shard per node; ic_cb is an ordinary table.
SET LOCAL allow_system_table_mods = on;
CREATE TABLE ic_cmds (cmd text);
GRANT ALL ON ic_cmds TO PUBLIC;
CREATE TABLE pg_catalog.pg_dist_partition (logicalrelid regclass, partmethod "char", partkey text);
CREATE TABLE pg_catalog.pg_dist_shard (logicalrelid regclass, shardid bigint);
CREATE TABLE pg_catalog.pg_dist_placement (placementid bigint, shardid bigint, shardstate integer, groupid integer);
CREATE TABLE pg_catalog.pg_dist_node (nodename text, nodeport integer, groupid integer, noderole text);
CREATE FUNCTION pg_catalog.shard_name(rel regclass, shardid bigint, quoted boolean) RETURNS text
  LANGUAGE sql SET search_path = pg_catalog AS $$
  SELECT format('%I.%I', n.nspname, c.relname || '_' || shardid)
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = rel $$;
CREATE FUNCTION pg_catalog.citus_table_size(rel regclass) RETURNS bigint
  LANGUAGE sql SET search_path = pg_catalog AS $$
  SELECT sum(pg_relation_size(shard_name(s.logicalrelid, s.shardid, true)::regclass))::bigint
    FROM pg_dist_shard s WHERE s.logicalrelid = rel $$;
CREATE FUNCTION pg_catalog.master_run_on_worker(worker_name text[], port integer[], command text[], parallel boolean,
    OUT node_name text, OUT node_port integer, OUT success boolean, OUT result text) RETURNS SETOF record
  LANGUAGE plpgsql SET search_path = pg_catalog AS $$
BEGIN
  FOR i IN 1 .. cardinality(command) LOOP
    node_name := worker_name[i];
    node_port := port[i];
    INSERT INTO public.ic_cmds VALUES (substring(command[i] from '^SELECT [a-z_.]+'));
    BEGIN
      EXECUTE command[i] INTO result;
      success := true;
    EXCEPTION WHEN OTHERS THEN
      success := false;
      result := SQLERRM;
    END;
    RETURN NEXT;
  END LOOP;
END $$;
CREATE FUNCTION pg_catalog.column_to_column_name(rel regclass, partkey text) RETURNS text
  LANGUAGE sql AS $$ SELECT partkey $$;
CREATE FUNCTION pg_catalog.run_command_on_shards(rel regclass, command text,
    OUT shardid bigint, OUT success boolean, OUT result text) RETURNS SETOF record
  LANGUAGE plpgsql SET search_path = pg_catalog AS $$
BEGIN
  INSERT INTO public.ic_cmds VALUES ('run_command_on_shards');
  FOR shardid IN SELECT s.shardid FROM pg_dist_shard s WHERE s.logicalrelid = rel ORDER BY 1 LOOP
    EXECUTE format(command, shard_name(rel, shardid, false)) INTO result;
    success := true;
    RETURN NEXT;
  END LOOP;
END $$;
-- intermediate results: rows kept in a table of this session, by result id
CREATE TABLE ic_results (rid text, id bigint, sig spotsig);
GRANT ALL ON ic_results TO PUBLIC;
CREATE FUNCTION pg_catalog.create_intermediate_result(result_id text, query text) RETURNS bigint
  LANGUAGE plpgsql SET search_path = pg_catalog AS $$
DECLARE n bigint;
BEGIN
  INSERT INTO public.ic_cmds VALUES ('create_intermediate_result');
  EXECUTE format('INSERT INTO public.ic_results SELECT %L, q.* FROM (%s) q', result_id, query);
  GET DIAGNOSTICS n = ROW_COUNT;
  RETURN n;
EXCEPTION WHEN datatype_mismatch THEN  -- one signature (a template)
  EXECUTE format('INSERT INTO public.ic_results (rid, sig) SELECT %L, q.* FROM (%s) q', result_id, query);
  RETURN 1;
END $$;
CREATE FUNCTION pg_catalog.broadcast_intermediate_result(result_id text, query text) RETURNS bigint
  LANGUAGE plpgsql SET search_path = pg_catalog AS $$
DECLARE n bigint;
BEGIN
  INSERT INTO public.ic_cmds VALUES ('broadcast_intermediate_result');
  EXECUTE format('INSERT INTO public.ic_results SELECT %L, q.* FROM (%s) q', result_id, query);
  GET DIAGNOSTICS n = ROW_COUNT;
  RETURN n;
EXCEPTION WHEN datatype_mismatch THEN  -- one signature (a template)
  EXECUTE format('INSERT INTO public.ic_results (rid, sig) SELECT %L, q.* FROM (%s) q', result_id, query);
  RETURN 1;
END $$;
CREATE FUNCTION pg_catalog.fetch_intermediate_results(result_ids text[], node_name text, node_port integer) RETURNS bigint
  LANGUAGE plpgsql SET search_path = pg_catalog AS $$
BEGIN
  INSERT INTO public.ic_cmds VALUES ('fetch_intermediate_results');
  RETURN (SELECT count(*) FROM public.ic_results WHERE rid = ANY(result_ids));
END $$;
CREATE FUNCTION pg_catalog.read_intermediate_result(result_id text, format text) RETURNS SETOF record
  LANGUAGE plpgsql SET search_path = pg_catalog AS $$
BEGIN
  RETURN QUERY SELECT r.sig FROM public.ic_results r WHERE r.rid = result_id;
END $$;
CREATE FUNCTION pg_catalog.read_intermediate_results(result_ids text[], format text) RETURNS SETOF record
  LANGUAGE plpgsql SET search_path = pg_catalog AS $$
BEGIN
  RETURN QUERY SELECT r.id, r.sig FROM public.ic_results r WHERE r.rid = ANY(result_ids);
END $$;
INSERT INTO pg_catalog.pg_extension (oid, extname, extowner, extnamespace, extrelocatable, extversion)
VALUES ((SELECT max(oid::bigint) + 1 FROM pg_catalog.pg_extension)::oid, 'citus', 10, 11, false, '0');
INSERT INTO pg_catalog.pg_dist_node VALUES ('w1', 1, 1, 'primary'), ('w2', 2, 2, 'primary');

CREATE TABLE ic_src AS
SELECT i AS id, ('{' || string_agg(to_hex((i % 8) * 1000 + k + CASE WHEN (k + i) % 9 = 0 THEN 500 ELSE 0 END), ',') || '}')::spotsig AS sig
FROM generate_series(1, 60) i, generate_series(1, 20 + i % 7) k GROUP BY i;
CREATE TABLE ic_ct (id int, sig spotsig, dup int, sim float8);
CREATE TABLE ic_ct_1 () INHERITS (ic_ct);
CREATE TABLE ic_ct_2 () INHERITS (ic_ct);
INSERT INTO ic_ct_1 (id, sig) SELECT id, sig FROM ic_src WHERE id <= 40 AND id % 2 = 0;
INSERT INTO ic_ct_2 (id, sig) SELECT id, sig FROM ic_src WHERE id <= 40 AND id % 2 = 1;
CREATE TABLE ic_cd (id int, sig spotsig);
CREATE TABLE ic_cd_3 () INHERITS (ic_cd);
CREATE TABLE ic_cd_4 () INHERITS (ic_cd);
INSERT INTO ic_cd_3 SELECT id, sig FROM ic_src WHERE id > 40 AND id % 2 = 0;
INSERT INTO ic_cd_4 SELECT id, sig FROM ic_src WHERE id > 40 AND id % 2 = 1;
CREATE TABLE ic_cb AS SELECT id, sig FROM ic_src WHERE id > 40;
CREATE TABLE ic_fb (id int PRIMARY KEY, sig spotsig, dup int, sim float8);
INSERT INTO ic_fb (id, sig) SELECT id, sig FROM ic_src;
INSERT INTO pg_catalog.pg_dist_partition VALUES ('ic_ct', 'h', 'id'), ('ic_cd', 'h', 'id');
INSERT INTO pg_catalog.pg_dist_shard VALUES ('ic_ct', 1), ('ic_ct', 2), ('ic_cd', 3), ('ic_cd', 4);
INSERT INTO pg_catalog.pg_dist_placement VALUES (1, 1, 1, 1), (2, 2, 1, 2), (3, 3, 1, 1), (4, 4, 1, 2);

-- The answers without Citus and without the plants, to compare with.
CREATE TEMP TABLE ic_self AS
SELECT * FROM spotsigs_join('ic_src'::regclass, 'id'::name, 'sig'::name, 0.5::float8) WHERE id2 <= 40;
CREATE TEMP TABLE ic_rs AS
SELECT j.* FROM spotsigs_join_rs('ic_src'::regclass, 'id'::name, 'sig'::name, 'ic_src'::regclass, 'id'::name, 'sig'::name, 0.5::float8) j
 WHERE j.r_id > 40 AND j.s_id <= 40;
CREATE TEMP TABLE ic_lsh AS
SELECT * FROM spotsigs_lsh_pairs('ic_src'::regclass, 'id'::name, 'sig'::name, 0.5::float8, 2, 16, 0::bigint);
CREATE TABLE ic_ct_copy AS SELECT id, sig FROM ic_src WHERE id <= 40;
CREATE TEMP TABLE ic_content AS
SELECT * FROM spotsigs_join('ic_ct_copy'::regclass, 'id'::name, 'sig'::name);
SELECT (SELECT count(*) FROM ic_self) AS self_pairs, (SELECT count(*) FROM ic_rs) AS rs_pairs,
       (SELECT count(*) FROM ic_lsh) AS lsh_pairs, (SELECT count(*) FROM ic_content) AS content_pairs;

CREATE ROLE spotsigs_ic_planter;
GRANT CREATE ON SCHEMA public TO spotsigs_ic_planter;
SET ROLE spotsigs_ic_planter;
DO $plant$
DECLARE
    loose regtype[] := ARRAY['text', 'name', 'varchar', 'bpchar', '"char"', 'regclass', 'oid', 'smallint', 'integer',
                             'bigint', 'numeric', 'real', 'double precision', 'boolean', 'json', 'jsonb', 'bytea',
                             'text[]', 'name[]', 'integer[]', 'bigint[]', 'cstring', 'spotsig', 'spotsigs_query',
                             'anyelement', 'anycompatible']::regtype[];
    f record;
    k integer;
    i integer;
    a regtype;
    args regtype[];
    o record;
    side integer;
BEGIN
    FOR f IN SELECT p.oid, p.proname, p.pronargs, p.pronargdefaults, pg_get_function_result(p.oid) AS result,
                    coalesce((SELECT array_agg(t::regtype ORDER BY n) FROM unnest(p.proargtypes::oid[]) WITH ORDINALITY u(t, n)),
                             '{}') AS types
               FROM pg_proc p
               JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e'
               JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'spotsigs'
              ORDER BY p.oid LOOP
        FOR k IN f.pronargs - f.pronargdefaults .. f.pronargs LOOP
            -- the signature cut after k arguments (a call relying on defaults ties with it)
            IF k < f.pronargs THEN
                args := f.types[1:k];
                IF to_regprocedure(format('public.%I(%s)', f.proname, array_to_string(args, ','))) IS NULL THEN
                    BEGIN
                        EXECUTE format('CREATE FUNCTION public.%I(%s) RETURNS %s LANGUAGE plpgsql AS %L', f.proname,
                                       array_to_string(args, ','), f.result,
                                       format('BEGIN RAISE EXCEPTION ''planted %s(%s) ran''; END', f.proname, array_to_string(args, ',')));
                    EXCEPTION WHEN OTHERS THEN NULL;  -- a type PL/pgSQL cannot take
                    END;
                END IF;
            END IF;
            -- one argument of another type
            FOR i IN 1 .. k LOOP
                FOREACH a IN ARRAY loose LOOP
                    CONTINUE WHEN a = f.types[i];
                    args := f.types[1:k];
                    args[i] := a;
                    CONTINUE WHEN to_regprocedure(format('public.%I(%s)', f.proname, array_to_string(args, ','))) IS NOT NULL;
                    BEGIN
                        BEGIN
                            EXECUTE format('CREATE FUNCTION public.%I(%s) RETURNS %s LANGUAGE plpgsql AS %L', f.proname,
                                           array_to_string(args, ','), f.result,
                                           format('BEGIN RAISE EXCEPTION ''planted %s(%s) ran''; END', f.proname, array_to_string(args, ',')));
                        EXCEPTION WHEN OTHERS THEN
                            -- a result type PL/pgSQL cannot return: the plant need not fit its caller to be caught
                            EXECUTE format('CREATE FUNCTION public.%I(%s) RETURNS void LANGUAGE plpgsql AS %L', f.proname,
                                           array_to_string(args, ','),
                                           format('BEGIN RAISE EXCEPTION ''planted %s(%s) ran''; END', f.proname, array_to_string(args, ',')));
                        END;
                    EXCEPTION WHEN OTHERS THEN NULL;  -- e.g. internal or cstring arguments
                    END;
                END LOOP;
            END LOOP;
        END LOOP;
    END LOOP;
    -- the operators: one operand of another type
    FOR o IN SELECT op.oprname, op.oprleft::regtype AS l, op.oprright::regtype AS r
               FROM pg_operator op
               JOIN pg_depend d ON d.classid = 'pg_operator'::regclass AND d.objid = op.oid AND d.deptype = 'e'
               JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'spotsigs' LOOP
        FOR side IN 1 .. 2 LOOP
            FOREACH a IN ARRAY loose LOOP
                CONTINUE WHEN a = CASE side WHEN 1 THEN o.l ELSE o.r END OR a::text IN ('anyelement', 'anycompatible', 'cstring');
                args := CASE side WHEN 1 THEN ARRAY[a, o.r] ELSE ARRAY[o.l, a] END;
                CONTINUE WHEN to_regoperator(format('public.%s(%s)', o.oprname, array_to_string(args, ','))) IS NOT NULL;
                IF to_regprocedure(format('public.spotsigs_ic_op(%s)', array_to_string(args, ','))) IS NULL THEN
                    EXECUTE format('CREATE FUNCTION public.spotsigs_ic_op(%s, %s) RETURNS boolean LANGUAGE plpgsql AS %L',
                                   args[1], args[2], format('BEGIN RAISE EXCEPTION ''planted operator on (%s) ran''; END',
                                                            array_to_string(args, ',')));
                END IF;
                EXECUTE format('CREATE OPERATOR public.%s (LEFTARG = %s, RIGHTARG = %s, FUNCTION = public.spotsigs_ic_op)',
                               o.oprname, args[1], args[2]);
            END LOOP;
        END LOOP;
    END LOOP;
END
$plant$;
RESET ROLE;
-- every function of the extension that takes arguments has plants beside it, but the operators'
-- selectivity estimators: the planner calls them by OID, never by name, and every signature
-- beside theirs still takes internal, which PL/pgSQL cannot
SELECT count(*) AS functions_without_plants
  FROM pg_proc f
  JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = f.oid AND d.deptype = 'e'
  JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'spotsigs'
 WHERE f.pronargs > 0
   AND f.oid NOT IN (SELECT oprrest FROM pg_operator UNION SELECT oprjoin FROM pg_operator)
   AND NOT EXISTS (SELECT 1 FROM pg_proc p WHERE p.proname = f.proname AND p.proowner = 'spotsigs_ic_planter'::regrole);


-- Sanity: a loosely typed call (unknown literals, a numeric constant, defaults left out) does
-- reach a plant.
SAVEPOINT loose;
SELECT * FROM public.spotsigs_join_rs('ic_src', 'id', 'sig', 'ic_src', 'id', 'sig', 0.5);
ROLLBACK TO loose;

-- With every plant in place, each function runs its internal calls and answers as before. The
-- calls below are exactly typed themselves (in this search_path the plants would catch any
-- other). Through the Citus stand-in: spotsigs_join -> spotsigs_citus_distributed,
-- spotsigs_citus_join_tasks -> spotsigs_citus_nodes, spotsigs_citus_ranges (with 2 nodes no
-- histogram of lengths: the pair split), spotsigs_citus_export_all -> spotsigs_citus_on_nodes
-- -> spotsigs_citus_export on each node; then spotsigs_citus_on_nodes -> spotsigs_citus_task on
-- each node -> spotsigs_citus_match, spotsigs_join_candidates.
SELECT count(*) AS pairs, count(*) FILTER (WHERE (j.id1, j.id2, j.similarity) NOT IN (SELECT * FROM ic_self)) AS wrong
  FROM spotsigs_join('ic_ct'::regclass, 'id'::name, 'sig'::name, 0.5::float8, NULL::integer, NULL::text, NULL::text) j;
SELECT cmd AS commands_run_on_nodes, count(*) FROM ic_cmds GROUP BY 1 ORDER BY 1;
TRUNCATE ic_cmds;
SELECT count(DISTINCT cluster) AS clusters, count(*) AS rows
  FROM spotsigs_clusters('ic_ct'::regclass, 'id'::name, 'sig'::name, 0.5::float8, NULL::integer, NULL::text, NULL::text);
SELECT cmd AS commands_run_on_nodes, count(*) FROM ic_cmds GROUP BY 1 ORDER BY 1;
TRUNCATE ic_cmds;
-- the content measure (no threshold): the template of every row, sent to the tasks, which join
-- the rows without it (spotsig_remove); the pairs of one node's default call
SELECT count(*) AS pairs, count(*) FILTER (WHERE (j.id1, j.id2, j.similarity) NOT IN (SELECT * FROM ic_content)) AS wrong,
       (SELECT count(*) FROM ic_content) AS one_node
  FROM spotsigs_join('ic_ct'::regclass, 'id'::name, 'sig'::name, NULL::float8, NULL::integer, NULL::text, NULL::text) j;
SELECT cmd AS commands_run_on_nodes, count(*) FROM ic_cmds GROUP BY 1 ORDER BY 1;
TRUNCATE ic_cmds;
-- a batch that is not distributed (spotsigs_citus_join_rs_tasks broadcasts it), on either side
SELECT count(*) AS pairs, count(*) FILTER (WHERE (j.r_id, j.s_id, j.similarity) NOT IN (SELECT * FROM ic_rs)) AS wrong
  FROM spotsigs_join_rs('ic_cb'::regclass, 'id'::name, 'sig'::name, 'ic_ct'::regclass, 'id'::name, 'sig'::name,
                        0.5::float8, NULL::integer, NULL::text, NULL::text) j;
SELECT cmd AS commands_run_on_nodes, count(*) FROM ic_cmds GROUP BY 1 ORDER BY 1;
TRUNCATE ic_cmds;
SELECT count(*) AS pairs, count(*) FILTER (WHERE (j.s_id, j.r_id, j.similarity) NOT IN (SELECT * FROM ic_rs)) AS wrong
  FROM spotsigs_join_rs('ic_ct'::regclass, 'id'::name, 'sig'::name, 'ic_cb'::regclass, 'id'::name, 'sig'::name,
                        0.5::float8, NULL::integer, NULL::text, NULL::text) j;
SELECT cmd AS commands_run_on_nodes, count(*) FROM ic_cmds GROUP BY 1 ORDER BY 1;
TRUNCATE ic_cmds;
-- both distributed: each node fetches the other table's shards
SELECT count(*) AS pairs, count(*) FILTER (WHERE (j.r_id, j.s_id, j.similarity) NOT IN (SELECT * FROM ic_rs)) AS wrong
  FROM spotsigs_join_rs('ic_cd'::regclass, 'id'::name, 'sig'::name, 'ic_ct'::regclass, 'id'::name, 'sig'::name,
                        0.5::float8, NULL::integer, NULL::text, NULL::text) j;
SELECT cmd AS commands_run_on_nodes, count(*) FROM ic_cmds GROUP BY 1 ORDER BY 1;
TRUNCATE ic_cmds;
-- spotsigs_flag_batch on a distributed table and on an ordinary one
SELECT spotsigs_flag_batch('ic_ct'::regclass, 'id'::name, 'sig'::name, 'dup'::name, 'sim'::name, 0.5::float8, 1::bigint);
SELECT cmd AS commands_run_on_nodes, count(*) FROM ic_cmds GROUP BY 1 ORDER BY 1;
TRUNCATE ic_cmds;
SELECT spotsigs_flag_batch('ic_fb'::regclass, 'id'::name, 'sig'::name, 'dup'::name, 'sim'::name, 0.5::float8, 1::bigint);
SELECT count(*) AS differences FROM ic_ct c JOIN ic_fb f USING (id)
 WHERE c.dup IS DISTINCT FROM f.dup OR c.sim IS DISTINCT FROM f.sim;
SELECT count(*) AS pairs, count(*) FILTER (WHERE (l.id1, l.id2, l.similarity) NOT IN (SELECT * FROM ic_lsh)) AS wrong
  FROM spotsigs_lsh_pairs('ic_src'::regclass, 'id'::name, 'sig'::name, 0.5::float8, 2, 16, 0::bigint) l;
SELECT spotsigs_template('ic_src'::regclass, 'id'::name, 'sig'::name) IS NOT NULL AS template;
SELECT (spotsig_content_query('{1,2,3}'::spotsig, 'ic_src'::regclass, 'sig'::name)).threshold AS content_query;
ROLLBACK;
