-- Citus: the similarity joins of a hash-distributed table run on the nodes that hold its shards.
-- spotsigs_join, spotsigs_clusters and spotsigs_join_rs call these when Citus is installed and
-- the relation is distributed; nothing here needs Citus when the extension is created (PL/pgSQL
-- looks up Citus's catalogs and functions only when it runs).
--
-- The split of a self-join by the plain measure: by signature length (spotsigs_citus_ranges,
-- below), each node one task of one length range, when that moves fewer rows than the pair split
-- (with 3 nodes or fewer: from tau 0.8 up); otherwise (the content measure, or borders so wide at
-- a small threshold that the ranges would hold (W - 1) / 2 times the table or more) the pair
-- split. The rows of the length split leave each node in one pass, cut into length pieces by
-- Citus's repartitioning (spotsigs_citus_export_pieces).
-- The pair split: node v joins the rows of its own shards with each other, and with the rows of the
-- nodes v+1, ..., v+floor((W-1)/2) (mod W; for even W, node v < W/2 also takes v+W/2), fetched
-- from those nodes. Every pair of rows then lies in exactly one task: on one node (v's self-join)
-- or on two nodes v and w, of which exactly one takes the other. Only the fetched rows and the
-- pairs cross the network. Rows move the way Citus moves them between nodes: each node writes its
-- shards' (id, signature) rows to intermediate results (Citus's binary COPY format, the signatures
-- in their binary send form) and the tasks fetch them (fetch_intermediate_results), all inside the
-- coordinator's distributed transaction (spotsigs_citus_on_nodes); a local batch is broadcast.
-- The functions that plan a join (spotsigs_citus_join_tasks, spotsigs_citus_join_rs_tasks) export
-- or broadcast the rows and return the tasks; the coordinator's C++ side runs them at once through
-- spotsigs_citus_on_nodes and decodes their pairs.

-- The rows of rel with an id and a signature, read as the caller and packed in one text value
-- (the signatures in their binary form, base64): rows for a caller to carry through a text
-- channel of its own; the joins do not use it. spotsigs_citus_unpack reads them back.
CREATE FUNCTION spotsigs_citus_pack(rel regclass, id_column name, sig_column name) RETURNS text
    AS 'MODULE_PATHNAME', 'spotsigs_citus_pack' LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;
COMMENT ON FUNCTION spotsigs_citus_pack(regclass, name, name) IS
    'internal: the rows of a table packed for another node (signatures in binary form)';

-- The template a distributed join broadcasts, handed to the query that broadcasts it: the
-- coordinator holds a copy for its transaction (NULL lets it go) and the query reads it back, so
-- that no text form of it is formatted or parsed.
CREATE FUNCTION spotsigs_citus_hold_value(sig spotsig) RETURNS void
    AS 'MODULE_PATHNAME', 'spotsigs_citus_hold_value' LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION spotsigs_citus_hold_value(spotsig) IS
    'internal: holds a value for spotsigs_citus_held_value until the transaction ends (NULL: lets it go)';
CREATE FUNCTION spotsigs_citus_held_value() RETURNS spotsig
    AS 'MODULE_PATHNAME', 'spotsigs_citus_held_value' LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION spotsigs_citus_held_value() IS 'internal: the value spotsigs_citus_hold_value holds (an error without one)';

CREATE FUNCTION spotsigs_citus_unpack(data text) RETURNS TABLE(id bigint, sig spotsig)
    AS 'MODULE_PATHNAME', 'spotsigs_citus_unpack' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION spotsigs_citus_unpack(text) IS 'internal: the rows spotsigs_citus_pack packed';

-- The candidate pairs (pairs left by the join's filters and verified) of the joins this session
-- ran on this node: a task's difference across its joins is its share of the matching work.
CREATE FUNCTION spotsigs_join_candidates() RETURNS bigint
    AS 'MODULE_PATHNAME', 'spotsigs_join_candidates' LANGUAGE C VOLATILE PARALLEL RESTRICTED;
COMMENT ON FUNCTION spotsigs_join_candidates() IS
    'the candidate pairs the similarity joins of this session verified so far (diagnostics)';

-- The pairs of a task on their way to the coordinator (src/pg/citus/pairs.cpp): packed into base64
-- text by the aggregate on the task's node (each similarity's 64 bits as they are), decoded by the
-- coordinator's C++ side into the call's result (src/pg/join/citus.cpp). spotsigs_citus_pairs is
-- the same decoder as a set-returning function, with the smaller id first when ordered.
CREATE FUNCTION spotsigs_citus_pairs_add(internal, bigint, bigint, double precision) RETURNS internal
    AS 'MODULE_PATHNAME', 'spotsigs_citus_pairs_add' LANGUAGE C IMMUTABLE CALLED ON NULL INPUT PARALLEL SAFE;
CREATE FUNCTION spotsigs_citus_pairs_final(internal) RETURNS text
    AS 'MODULE_PATHNAME', 'spotsigs_citus_pairs_final' LANGUAGE C IMMUTABLE CALLED ON NULL INPUT PARALLEL SAFE;
CREATE AGGREGATE spotsigs_citus_pairs_agg(bigint, bigint, double precision) (
    SFUNC = spotsigs_citus_pairs_add, STYPE = internal, FINALFUNC = spotsigs_citus_pairs_final,
    PARALLEL = SAFE);
COMMENT ON AGGREGATE spotsigs_citus_pairs_agg(bigint, bigint, double precision) IS
    'internal: the pairs of a distributed join''s task, packed for the coordinator';
CREATE FUNCTION spotsigs_citus_pairs(data text, ordered boolean)
    RETURNS TABLE(id1 bigint, id2 bigint, similarity double precision)
    AS 'MODULE_PATHNAME', 'spotsigs_citus_pairs' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE ROWS 1000;
COMMENT ON FUNCTION spotsigs_citus_pairs(text, boolean) IS 'internal: the pairs spotsigs_citus_pairs_agg packed';

-- The matching of a distributed join's task on its node (spotsigs_citus_task): local rows, those
-- of the shards local_shards (each checked as any join input, read as the caller), and other
-- rows, those of the intermediate results other_results of this transaction ((id, signature)
-- rows in Citus's binary COPY format, each signature checked by the type's receive function).
-- pairs: 'local' the local rows' pairs; 'local+cross' the pairs with a local row among both;
-- 'cross' the pairs of a local and an other row (these three with id1 < id2, from one self-join
-- of the rows together: their ids must be unique); 'rs' the same pairs as (local id, other id)
-- from an R-S join (ids may repeat across the sides). With a template, by the content measure
-- against it, as one node's join with that template stored. The join's reader streams the rows.
CREATE FUNCTION spotsigs_citus_match(local_shards regclass[], id_column name, sig_column name,
                                     other_results text[], threshold double precision, threads integer,
                                     method text, template spotsig, pairs text)
    RETURNS TABLE(id1 bigint, id2 bigint, similarity double precision)
    AS 'MODULE_PATHNAME', 'spotsigs_citus_match' LANGUAGE C VOLATILE PARALLEL RESTRICTED ROWS 1000;
COMMENT ON FUNCTION spotsigs_citus_match(regclass[], name, name, text[], double precision, integer, text, spotsig, text) IS
    'internal: the matching of a distributed join''s task on its node (spotsigs_citus_task)';

-- One node's share of a distributed join, run on that node inside the coordinator's distributed
-- transaction (spotsigs_citus_on_nodes). local_shards: the shards here; remotes: [{"host": h,
-- "port": p, "results": [id, ...], "rows": n}, ...], intermediate results of this transaction on
-- other nodes (spotsigs_citus_export) and the rows they hold, fetched in Citus's binary COPY
-- format (fetch_intermediate_results) and paired with the local rows; batch: the id of an
-- intermediate result already on this node (the coordinator's broadcast), paired with the local
-- rows like fetched ones; self_join: whether to pair the local rows with each other too;
-- template: the content measure's template signatures (the coordinator's: stored, or computed
-- from every row of the table), NULL for the plain measure: the joins (spotsigs_citus_match) use
-- it as one node's join uses its stored template. Returns text: a line of JSON with the counts
-- {"rows", "fetched", "bytes", "candidates", "pairs"}, then a line per matching, 'S' and its own
-- pairs (id1, id2, similarity) or 'C' and cross pairs (local id, other id, similarity), packed
-- by spotsigs_citus_pairs_agg (no JSON to lex per pair, and no jsonb size limit); and logs the
-- counts and times at LOG on this node.
CREATE FUNCTION spotsigs_citus_task(local_shards text[], id_column name, sig_column name,
                                    threshold double precision, threads integer, method text,
                                    remotes jsonb, self_join boolean, batch text DEFAULT NULL,
                                    template spotsig DEFAULT NULL)
    RETURNS text LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
    SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
    shards regclass[] := local_shards::regclass[];
    nrows bigint := 0;
    n bigint;
    fetched bigint := 0;
    nbytes bigint := 0;
    nresults integer := 0;
    group_rows bigint;
    node jsonb;
    results text[];
    lines text := '';
    packed text;
    npairs bigint := 0;
    n_here bigint;
    result text;
    candidates bigint := @extschema@.spotsigs_join_candidates();
    started timestamptz := clock_timestamp();
    phase timestamptz;
    fetch_s float8 := 0;
    match_s float8 := 0;
    own_done boolean := false;
BEGIN
    FOR i IN 1 .. coalesce(cardinality(shards), 0) LOOP
        EXECUTE format('SELECT count(*) FROM %s WHERE %I IS NOT NULL AND %I IS NOT NULL',
                       shards[i], id_column, sig_column) INTO n;
        nrows := nrows + n;
    END LOOP;
    -- The other rows, one group at a time (the batch, then each remote node's results), so that a
    -- task holds its own rows and one other node's at most; each group joined with the local rows:
    -- for a self-join, together with them in one self-join (the first group's also gives the
    -- local rows' own pairs); for an R-S join, by the R-S join.
    FOR node IN SELECT jsonb_array_elements(CASE WHEN batch IS NULL THEN '[]' ELSE '[{"batch": true}]' END::jsonb
                                            || remotes) LOOP
        phase := clock_timestamp();
        IF node ? 'batch' THEN
            results := ARRAY[batch];
        ELSE
            results := ARRAY(SELECT jsonb_array_elements_text(node -> 'results'));
            nbytes := nbytes + pg_catalog.fetch_intermediate_results(results, node ->> 'host', (node ->> 'port')::pg_catalog.int4);
            nresults := nresults + cardinality(results);
        END IF;
        -- a node's rows were counted when it exported them (spotsigs_citus_export_all)
        group_rows := (node ->> 'rows')::pg_catalog.int8;
        IF group_rows IS NULL THEN
            SELECT count(*) INTO group_rows
              FROM pg_catalog.read_intermediate_results(results, 'binary') AS u(id pg_catalog.int8, sig @extschema@.spotsig);
        END IF;
        fetched := fetched + group_rows;
        fetch_s := fetch_s + extract(epoch FROM clock_timestamp() - phase);
        IF group_rows > 0 AND nrows > 0 THEN
            phase := clock_timestamp();
            SELECT @extschema@.spotsigs_citus_pairs_agg(j.id1, j.id2, j.similarity), count(*) INTO packed, n_here
              FROM @extschema@.spotsigs_citus_match(shards, id_column, sig_column, results, threshold, threads, method,
                                                    template, CASE WHEN NOT self_join THEN 'rs'
                                                                   WHEN own_done THEN 'cross' ELSE 'local+cross' END) j;
            npairs := npairs + n_here;
            lines := lines || E'\n' || CASE WHEN self_join THEN 'S' ELSE 'C' END || packed;
            own_done := own_done OR self_join;
            match_s := match_s + extract(epoch FROM clock_timestamp() - phase);
        END IF;
    END LOOP;
    IF self_join AND NOT own_done AND nrows > 0 THEN
        phase := clock_timestamp();
        SELECT @extschema@.spotsigs_citus_pairs_agg(j.id1, j.id2, j.similarity), count(*) INTO packed, n_here
          FROM @extschema@.spotsigs_citus_match(shards, id_column, sig_column, NULL::pg_catalog.text[],
                                                threshold, threads, method, template, 'local') j;
        npairs := npairs + n_here;
        lines := lines || E'\nS' || packed;
        match_s := match_s + extract(epoch FROM clock_timestamp() - phase);
    END IF;
    candidates := @extschema@.spotsigs_join_candidates() - candidates;
    result := json_build_object('rows', nrows, 'fetched', fetched, 'bytes', nbytes, 'candidates', candidates,
                                'pairs', npairs)::text || lines;
    RAISE LOG 'spotsigs_citus_task: % local rows in % shards, % rows (% bytes) fetched from % remote shards, % candidates, % pairs (% bytes returned); % s, % s of them fetching, % s matching',
        nrows, cardinality(local_shards), fetched, nbytes, nresults, candidates, npairs, octet_length(result),
        round(extract(epoch FROM clock_timestamp() - started)::numeric, 2), round(fetch_s::numeric, 2),
        round(match_s::numeric, 2);
    RETURN result;
END
$fn$;
COMMENT ON FUNCTION spotsigs_citus_task(text[], name, name, double precision, integer, text, jsonb, boolean, text, spotsig) IS
    'internal: one node''s share of a distributed spotsigs_join or spotsigs_join_rs (called by the coordinator)';

-- Whether rel is a hash-distributed Citus table (false without Citus).
CREATE FUNCTION spotsigs_citus_distributed(rel regclass) RETURNS boolean
    LANGUAGE plpgsql STABLE PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp AS $fn$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus') THEN
        RETURN false;
    END IF;
    RETURN EXISTS (SELECT 1 FROM pg_catalog.pg_dist_partition WHERE logicalrelid = rel AND partmethod = 'h');
END
$fn$;
COMMENT ON FUNCTION spotsigs_citus_distributed(regclass) IS 'whether a relation is a hash-distributed Citus table';

-- The nodes holding shards of the hash-distributed rel, each with its shards' qualified names
-- (one placement per shard: the first healthy one), ordered by host and port.
CREATE FUNCTION spotsigs_citus_nodes(rel regclass, OUT host text, OUT port integer, OUT shards jsonb)
    RETURNS SETOF record LANGUAGE plpgsql STABLE PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp AS $fn$
BEGIN
    RETURN QUERY
    SELECT n.nodename::text, n.nodeport,
           jsonb_agg(pg_catalog.shard_name(rel, s.shardid, false) ORDER BY s.shardid)
      FROM pg_catalog.pg_dist_shard s
      CROSS JOIN LATERAL (SELECT p.groupid FROM pg_catalog.pg_dist_placement p
                          WHERE p.shardid = s.shardid AND p.shardstate = 1
                          ORDER BY p.placementid LIMIT 1) p
      JOIN pg_catalog.pg_dist_node n ON n.groupid = p.groupid AND n.noderole = 'primary'
     WHERE s.logicalrelid = rel
     GROUP BY n.nodename, n.nodeport
     ORDER BY n.nodename, n.nodeport;
END
$fn$;
COMMENT ON FUNCTION spotsigs_citus_nodes(regclass) IS 'internal: the nodes holding shards of a distributed table, with their shards';

-- Writes the (id, signature) rows of each shard in shards, read as the caller, to the
-- intermediate result of the same place in results (Citus's binary COPY format, in this node's
-- directory of the coordinator's distributed transaction), for tasks on other nodes to fetch.
-- Returns the number of rows written.
CREATE FUNCTION spotsigs_citus_export(shards text[], results text[], id_column name, sig_column name)
    RETURNS bigint LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
    SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
    n bigint := 0;
BEGIN
    IF cardinality(shards) IS DISTINCT FROM cardinality(results) THEN
        RAISE EXCEPTION 'spotsigs_citus_export: one result per shard' USING ERRCODE = '22023';
    END IF;
    FOR i IN 1 .. coalesce(cardinality(shards), 0) LOOP
        n := n + pg_catalog.create_intermediate_result(results[i],
            format('SELECT %I::pg_catalog.int8 AS id, %I AS sig FROM %s WHERE %I IS NOT NULL AND %I IS NOT NULL',
                   id_column, sig_column, shards[i]::regclass, id_column, sig_column));
    END LOOP;
    RETURN n;
END
$fn$;
COMMENT ON FUNCTION spotsigs_citus_export(text[], text[], name, name) IS
    'internal: the rows of shards written to intermediate results of the distributed transaction, for other nodes to fetch';

-- Evaluates, inside this transaction, each expression of exprs ({"host:port": expression}, text
-- of SQL returning one value) on its node, all nodes at once, and returns each node's value as
-- text. It runs them as one query of Citus's own executor on rel (a hash-distributed table with
-- shards on those nodes): grouped by the distribution column and restricted to one value of it
-- stored on each node, so that Citus pushes the whole query down and each node evaluates its
-- expression once, in the coordinator's distributed transaction. That transaction is what lets
-- an intermediate result created on one node by one call be fetched by another node in a later
-- call (Citus keeps them until the transaction ends). A node on which the caller sees no row of
-- rel evaluates nothing and is left out of the result; a row that was the value of a node and
-- disappeared before the query read it fails the call with 40001 rather than leave that node out.
CREATE FUNCTION spotsigs_citus_on_nodes(rel regclass, exprs jsonb)
    RETURNS TABLE(node text, value text)
    LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
    SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
    distcol name;
    coltype text;
    vals text[];
    cases text;
    nodes_of jsonb;
    r record;
    expected integer;
    got integer := 0;
BEGIN
    SELECT pg_catalog.column_to_column_name(p.logicalrelid, p.partkey) INTO distcol
      FROM pg_catalog.pg_dist_partition p WHERE p.logicalrelid = rel AND p.partmethod = 'h';
    SELECT pg_catalog.format_type(a.atttypid, a.atttypmod) INTO coltype
      FROM pg_catalog.pg_attribute a WHERE a.attrelid = rel AND a.attname = distcol AND NOT a.attisdropped;
    IF coltype IS NULL THEN
        RAISE EXCEPTION 'spotsigs: % is not a hash-distributed table', rel USING ERRCODE = '0A000';
    END IF;
    -- A value of the distribution column stored on each node (read as the caller: a row it sees).
    SELECT array_agg(v.val), jsonb_object_agg(v.val, v.node), count(*)
      INTO vals, nodes_of, expected
      FROM (SELECT DISTINCT ON (n.nodename, n.nodeport) n.nodename || ':' || n.nodeport AS node, substr(s.result, 2) AS val
              FROM pg_catalog.run_command_on_shards(rel, format('SELECT ''v'' || %I::pg_catalog.text FROM %%s LIMIT 1', distcol)) s
              JOIN pg_catalog.pg_dist_placement p ON p.shardid = s.shardid AND p.shardstate = 1
              JOIN pg_catalog.pg_dist_node n ON n.groupid = p.groupid AND n.noderole = 'primary'
             WHERE s.success AND s.result LIKE 'v%' AND exprs ? (n.nodename || ':' || n.nodeport)
             ORDER BY n.nodename, n.nodeport, s.shardid) v;
    IF expected = 0 THEN
        RETURN;
    END IF;
    IF EXISTS (SELECT 1 FROM pg_catalog.run_command_on_shards(rel, 'SELECT 1 FROM %s LIMIT 0') s WHERE NOT s.success) THEN
        RAISE EXCEPTION 'spotsigs: a shard of % could not be read', rel USING ERRCODE = 'XX000';
    END IF;
    SELECT string_agg(format('WHEN %L THEN (%s)::pg_catalog.text', e.key, exprs ->> (nodes_of ->> e.key)), ' ')
      INTO cases FROM jsonb_each_text(nodes_of) e;
    -- Citus runs the pushed-down query in this transaction only once the transaction is a
    -- coordinated one; creating an (empty) intermediate result makes it one.
    PERFORM pg_catalog.create_intermediate_result('spotsigs_start_' || md5(random()::text || clock_timestamp()::text),
                                                  'SELECT 1 WHERE false');
    FOR r IN EXECUTE format('SELECT %I::pg_catalog.text AS val, CASE %I::pg_catalog.text %s END AS value FROM %s WHERE %I = ANY(%L::%s[]) GROUP BY %I',
                            distcol, distcol, cases, rel, distcol, vals, coltype, distcol) LOOP
        node := nodes_of ->> r.val;
        value := r.value;
        got := got + 1;
        RETURN NEXT;
    END LOOP;
    IF got <> expected THEN
        RAISE EXCEPTION 'spotsigs: rows of % were deleted while a distributed join started', rel
            USING ERRCODE = '40001', HINT = 'Run it again.';
    END IF;
END
$fn$;
COMMENT ON FUNCTION spotsigs_citus_on_nodes(regclass, jsonb) IS
    'internal: evaluates one expression on each node holding shards of a distributed table, in the distributed transaction';

-- Exports the rows of every shard of rel (spotsigs_citus_export, on the nodes holding them, at
-- once) to intermediate results named prefix_<node>_<shard> (positions in spotsigs_citus_nodes)
-- and returns, per node whose rows the caller sees, {"host", "port", "results": [...], "rows": n}:
-- what a task's remotes name, and how many rows they hold. A node left out has no row to give.
CREATE FUNCTION spotsigs_citus_export_all(rel regclass, id_column name, sig_column name, prefix text)
    RETURNS SETOF jsonb LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
    SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
    plan jsonb;
    exprs jsonb;
BEGIN
    SELECT jsonb_object_agg(n.host || ':' || n.port,
                            jsonb_build_object('host', n.host, 'port', n.port,
                                               'shards', n.shards,
                                               'results', (SELECT jsonb_agg(format('%s_%s_%s', prefix, n.i, k) ORDER BY k)
                                                             FROM generate_series(1, jsonb_array_length(n.shards)) k)))
      INTO plan
      FROM (SELECT x.*, row_number() OVER () AS i FROM @extschema@.spotsigs_citus_nodes(rel) x) n;
    IF plan IS NULL THEN
        RETURN;
    END IF;
    SELECT jsonb_object_agg(e.key, format('@extschema@.spotsigs_citus_export(%L::pg_catalog.text[], %L::pg_catalog.text[], %L::pg_catalog.name, %L::pg_catalog.name)',
                                          ARRAY(SELECT jsonb_array_elements_text(e.value -> 'shards')),
                                          ARRAY(SELECT jsonb_array_elements_text(e.value -> 'results')), id_column, sig_column))
      INTO exprs FROM jsonb_each(plan) e;
    RETURN QUERY SELECT (plan -> t.node) - 'shards' || jsonb_build_object('rows', t.value::pg_catalog.int8)
                   FROM @extschema@.spotsigs_citus_on_nodes(rel, exprs) t;
END
$fn$;
COMMENT ON FUNCTION spotsigs_citus_export_all(regclass, name, name, text) IS
    'internal: the rows of every shard of a distributed table written to intermediate results on their nodes';

-- The template argument of the task calls on the nodes of rel: NULL, or a subquery reading the
-- template from an intermediate result broadcast to the workers now (and kept on the coordinator
-- too when it holds shards of rel), so that the template travels once per node in binary form
-- rather than inside the text of the query that runs the tasks. The broadcast query reads it
-- from the coordinator's memory (spotsigs_citus_held_value), not from its own text.
CREATE FUNCTION spotsigs_citus_template_arg(rel regclass, template spotsig) RETURNS text
    LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
    SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
    id text := 'spotsigs_template_' || md5(random()::text || clock_timestamp()::text);
    q text;
BEGIN
    IF template IS NULL THEN
        RETURN 'NULL::@extschema@.spotsig';
    END IF;
    -- Both calls run q in this backend (Citus executes the query locally and sends its rows).
    PERFORM @extschema@.spotsigs_citus_hold_value(template);
    q := 'SELECT @extschema@.spotsigs_citus_held_value()';
    PERFORM pg_catalog.broadcast_intermediate_result(id, q);
    IF EXISTS (SELECT 1 FROM @extschema@.spotsigs_citus_nodes(rel) x
                 JOIN pg_catalog.pg_dist_node d ON d.nodename = x.host AND d.nodeport = x.port
                WHERE d.groupid = 0) THEN
        PERFORM pg_catalog.create_intermediate_result(id, q);
    END IF;
    PERFORM @extschema@.spotsigs_citus_hold_value(NULL::@extschema@.spotsig);
    RETURN format('(SELECT r.t FROM pg_catalog.read_intermediate_result(%L, ''binary'') AS r(t @extschema@.spotsig))', id);
END
$fn$;
COMMENT ON FUNCTION spotsigs_citus_template_arg(regclass, spotsig) IS
    'internal: the template of a distributed join broadcast to the nodes, as the argument of their tasks';

-- The length-range split of a self-join by the plain measure (spotsigs_citus_join). A pair whose
-- similarity is at least tau has min(|A|, |B|) >= tau * max(|A|, |B|) (|A| = length(A), the
-- multiset size: the intersection is at most the smaller, the union at least the larger). The
-- length axis is cut at lo_1 = 0 < lo_2 < ... < lo_R into ranges [lo_r, lo_(r+1)) of about equal
-- work; task r receives from every node the rows whose length lies in its range and those below
-- it down to its border floor(tau * lo_r) - 1, and keeps the pairs with a row of its range
-- (spotsigs_citus_match, pairs 'owned:lo_r'). The longer row of a pair lies in exactly one
-- range, and the shorter one then lies within that range's border, so each pair is found once.

-- Writes the (id, signature, length) rows of shards, read as the caller, in one pass over them,
-- split by length into the pieces [cuts[k], cuts[k + 1]) (the last without an upper end;
-- cuts ascending from 0): the intermediate result prefix_(k - 1) holds piece k, written by Citus's
-- repartitioning (worker_partition_query_result, binary COPY format; an empty piece gives an empty
-- result). The ranges of the split and their borders are unions of pieces (the cuts are every lo
-- and every border), so that a row is read once however many tasks fetch it. Returns the rows
-- written per piece, as a jsonb array.
CREATE FUNCTION spotsigs_citus_export_pieces(shards text[], prefix text, id_column name, sig_column name,
                                             cuts integer[])
    RETURNS jsonb LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
    SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
    q text;
    written jsonb;
BEGIN
    IF coalesce(cardinality(cuts), 0) = 0 OR cuts[1] <> 0
       OR EXISTS (SELECT 1 FROM generate_subscripts(cuts, 1) k WHERE k > 1 AND cuts[k] <= cuts[k - 1]) THEN
        RAISE EXCEPTION 'spotsigs_citus_export_pieces: the cuts must ascend from 0' USING ERRCODE = '22023';
    END IF;
    SELECT string_agg(format('SELECT %I::pg_catalog.int8 AS id, %I AS sig, @extschema@.length(%I)::pg_catalog.int4 AS len'
                             ' FROM %s WHERE %I IS NOT NULL AND %I IS NOT NULL',
                             id_column, sig_column, sig_column, s::regclass, id_column, sig_column),
                      ' UNION ALL ')
      INTO q FROM unnest(shards) s;
    q := coalesce(q, 'SELECT NULL::pg_catalog.int8 AS id, NULL::@extschema@.spotsig AS sig, NULL::pg_catalog.int4 AS len WHERE false');
    SELECT jsonb_object_agg(w.partition_index, w.rows_written) INTO written
      FROM pg_catalog.worker_partition_query_result(
               prefix, q, 2, 'range'::citus.distribution_type, cuts::text[],
               ARRAY(SELECT CASE WHEN k < cardinality(cuts) THEN (cuts[k + 1] - 1)::text ELSE '2147483647' END
                       FROM generate_subscripts(cuts, 1) k ORDER BY k),
               true, false, true) w;
    RETURN (SELECT jsonb_agg(coalesce((written ->> (k - 1)::text)::pg_catalog.int8, 0) ORDER BY k)
              FROM generate_subscripts(cuts, 1) k);
END
$fn$;
COMMENT ON FUNCTION spotsigs_citus_export_pieces(text[], text, name, name, integer[]) IS
    'internal: the rows of shards written in one pass to one intermediate result per length piece of a distributed join';

-- A task of the length-range split on its node: fetches the rows of its range from the nodes in
-- remotes ([{"host", "port", "results": [id], "rows": n, "here": bool}, ...]; those "here" are
-- already on this node) and returns, in spotsigs_citus_task's form, the pairs among them with a
-- row of length >= lo. Logs its counts and times at LOG as spotsigs_citus_task does.
CREATE FUNCTION spotsigs_citus_range_task(remotes jsonb, lo integer, threshold double precision, threads integer,
                                          method text)
    RETURNS text LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
    SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
    node jsonb;
    results text[] := '{}';
    nrows bigint := 0;
    fetched bigint := 0;
    nbytes bigint := 0;
    nresults integer := 0;
    packed text;
    npairs bigint;
    result text;
    candidates bigint := @extschema@.spotsigs_join_candidates();
    started timestamptz := clock_timestamp();
    fetch_s float8;
    match_s float8;
BEGIN
    FOR node IN SELECT jsonb_array_elements(remotes) LOOP
        results := results || ARRAY(SELECT jsonb_array_elements_text(node -> 'results'));
        IF (node ->> 'here')::boolean THEN
            nrows := nrows + (node ->> 'rows')::pg_catalog.int8;
        ELSE
            nbytes := nbytes + pg_catalog.fetch_intermediate_results(ARRAY(SELECT jsonb_array_elements_text(node -> 'results')),
                                                                     node ->> 'host', (node ->> 'port')::pg_catalog.int4);
            fetched := fetched + (node ->> 'rows')::pg_catalog.int8;
            nresults := nresults + jsonb_array_length(node -> 'results');
        END IF;
    END LOOP;
    fetch_s := extract(epoch FROM clock_timestamp() - started);
    SELECT @extschema@.spotsigs_citus_pairs_agg(j.id1, j.id2, j.similarity), count(*) INTO packed, npairs
      FROM @extschema@.spotsigs_citus_match('{}'::pg_catalog.regclass[], 'id', 'sig', results, threshold, threads,
                                            method, NULL::@extschema@.spotsig, 'owned:' || lo) j;
    match_s := extract(epoch FROM clock_timestamp() - started) - fetch_s;
    candidates := @extschema@.spotsigs_join_candidates() - candidates;
    result := json_build_object('rows', nrows, 'fetched', fetched, 'bytes', nbytes, 'candidates', candidates,
                                'pairs', npairs)::text || E'\nS' || packed;
    RAISE LOG 'spotsigs_citus_task: % local rows in % shards, % rows (% bytes) fetched from % remote shards, % candidates, % pairs (% bytes returned); % s, % s of them fetching, % s matching',
        nrows, 0, fetched, nbytes, nresults, candidates, npairs, octet_length(result),
        round(extract(epoch FROM clock_timestamp() - started)::numeric, 2), round(fetch_s::numeric, 2),
        round(match_s::numeric, 2);
    RETURN result;
END
$fn$;
COMMENT ON FUNCTION spotsigs_citus_range_task(jsonb, integer, double precision, integer, text) IS
    'internal: one task of the length-range split of a distributed spotsigs_join (called by the coordinator)';

-- The length ranges of the split for a self-join of rel at tau over w tasks: {"los": [...],
-- "borders": [...]}, or NULL when the split does not apply (fewer than two ranges; with more than
-- 3 tasks, the rows handled over all ranges, each row's own plus its borders', would be at least
-- the pair split's (w + 1) / 2 tables less one, that is (w - 1) / 2 times the table; with 3 or
-- fewer, tau below 0.8; unless spotsigs.citus_split = length). From each shard's histogram of lengths; the work of
-- a length L is its rows' signature entries (rows times L: what a task reads, indexes and
-- verifies grows with them), cut into w equal parts.
CREATE FUNCTION spotsigs_citus_ranges(rel regclass, id_column name, sig_column name, tau double precision,
                                      w integer)
    RETURNS jsonb LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
    SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
    hist jsonb;
    los integer[];
    borders integer[];
    total numeric;
    handled numeric;
BEGIN
    IF w < 2 OR tau <= 0 THEN
        RETURN NULL;
    END IF;
    -- With 3 tasks or fewer every row lies in its own range, so the rows handled are at least the
    -- table and the cost check below would refuse whatever the histogram. There the threshold
    -- decides instead: from 0.8 up the borders are narrow (a tenth of a range's lower end at 0.9)
    -- and each task reads its own range and little more once, against the pair split's two
    -- tables; below, the range of the longest rows (whose prefixes, and borders, widen as tau
    -- falls) can take most of the work. Below 0.8 the histogram is not read.
    IF w <= 3 AND tau < 0.8 AND current_setting('spotsigs.citus_split', true) IS DISTINCT FROM 'length' THEN
        RETURN NULL;
    END IF;
    SELECT coalesce(jsonb_object_agg(h.len, h.n), '{}') INTO hist
      FROM (SELECT (e.key)::integer AS len, sum((e.value)::bigint) AS n
              FROM pg_catalog.run_command_on_shards(rel, format(
                       'SELECT coalesce(pg_catalog.jsonb_object_agg(l, n), ''{}'') FROM (SELECT @extschema@.length(%I) l, pg_catalog.count(*) n FROM %%s WHERE %I IS NOT NULL AND %I IS NOT NULL GROUP BY 1) x',
                       sig_column, id_column, sig_column)) s,
                   jsonb_each_text(s.result::jsonb) e
             WHERE s.success
             GROUP BY 1) h;
    WITH l AS (SELECT (e.key)::integer AS len, (e.value)::numeric AS n FROM jsonb_each_text(hist) e),
         c AS (SELECT l.len, l.n * greatest(l.len, 1) AS work FROM l),
         cum AS (SELECT len, sum(work) OVER (ORDER BY len) - work AS before FROM c),
         a AS (SELECT sum(work) AS all_work FROM c)
    SELECT array_agg(DISTINCT lo ORDER BY lo) INTO los
      FROM (SELECT 0 AS lo
            UNION ALL
            SELECT (SELECT min(cum.len) FROM cum WHERE cum.before >= a.all_work * k / w)
              FROM a, generate_series(1, w - 1) k) x
     WHERE lo IS NOT NULL;
    IF coalesce(cardinality(los), 0) < 2 THEN
        RETURN NULL;
    END IF;
    borders := ARRAY(SELECT greatest(0, floor(tau * u.lo)::integer - 1) FROM unnest(los) WITH ORDINALITY u(lo, k) ORDER BY u.k);
    SELECT sum((e.value)::numeric) INTO total FROM jsonb_each_text(hist) e;
    SELECT sum((e.value)::numeric) INTO handled
      FROM jsonb_each_text(hist) e, generate_subscripts(los, 1) r
     WHERE (e.key)::integer >= borders[r] AND (r = cardinality(los) OR (e.key)::integer < los[r + 1]);
    -- spotsigs.citus_split = length (superuser, for tests and benchmarks) skips this cost check.
    IF w > 3 AND handled >= total * (w - 1) / 2 AND current_setting('spotsigs.citus_split', true) IS DISTINCT FROM 'length' THEN
        RETURN NULL;
    END IF;
    RETURN jsonb_build_object('los', los, 'borders', borders);
END
$fn$;
COMMENT ON FUNCTION spotsigs_citus_ranges(regclass, name, name, double precision, integer) IS
    'internal: the length ranges of a distributed self-join''s tasks, or NULL when the split does not apply';

-- The tasks of a self-join of the hash-distributed rel: {"rel": rel's oid, "tasks": {"host:port":
-- call}}, or NULL when no node holds a row the caller sees. Run at once by spotsigs_citus_on_nodes
-- on rel, they find each pair once
-- (the split is described at the top of this file); with a template, by the content measure
-- against it (spotsigs_citus_task). Before it returns, the rows the tasks fetch are exported. The
-- coordinator reads the tasks' pairs itself, straight into the call's result (the smaller id
-- first: src/pg/join/citus.cpp).
CREATE FUNCTION spotsigs_citus_join_tasks(rel regclass, id_column name, sig_column name,
                                          threshold double precision, threads integer, method text,
                                          template spotsig DEFAULT NULL)
    RETURNS jsonb
    LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
    SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
    keys text[];
    shards jsonb[];
    exported jsonb := '{}';
    tasks jsonb := '{}';
    w integer;
    remotes jsonb;
    template_arg text;
    ranges jsonb;
    los integer[];
    borders integer[];
    cuts integer[];
    prefix text;
    hosts text[];
    ports integer[];
    started timestamptz := clock_timestamp();
BEGIN
    SELECT array_agg(n.host || ':' || n.port), array_agg(n.shards), array_agg(n.host), array_agg(n.port)
      INTO keys, shards, hosts, ports
      FROM @extschema@.spotsigs_citus_nodes(rel) n;
    IF keys IS NULL THEN
        RETURN NULL;
    END IF;
    w := cardinality(keys);
    -- The plain measure: the length-range split when it applies (spotsigs_citus_ranges), unless
    -- spotsigs.citus_split = pairs (superuser, for tests and benchmarks: both splits give the same
    -- pairs).
    IF template IS NULL AND threshold IS NOT NULL
       AND current_setting('spotsigs.citus_split', true) IS DISTINCT FROM 'pairs' THEN
        ranges := @extschema@.spotsigs_citus_ranges(rel, id_column, sig_column, threshold, w);
    END IF;
    IF ranges IS NOT NULL THEN
        los := ARRAY(SELECT jsonb_array_elements_text(ranges -> 'los'))::integer[];
        borders := ARRAY(SELECT jsonb_array_elements_text(ranges -> 'borders'))::integer[];
        cuts := ARRAY(SELECT DISTINCT c FROM unnest(los || borders) c ORDER BY c);
        prefix := 'spotsigs_' || left(md5(random()::text || clock_timestamp()::text), 16);
        SELECT jsonb_object_agg(k, format('@extschema@.spotsigs_citus_export_pieces(%L::pg_catalog.text[], %L::pg_catalog.text, %L::pg_catalog.name, %L::pg_catalog.name, %L::pg_catalog.int4[])',
                                          ARRAY(SELECT jsonb_array_elements_text(shards[i])), prefix || '_' || i,
                                          id_column, sig_column, cuts))
          INTO exported FROM unnest(keys) WITH ORDINALITY u(k, i);
        SELECT coalesce(jsonb_object_agg(t.node, t.value::jsonb), '{}') INTO exported
          FROM @extschema@.spotsigs_citus_on_nodes(rel, exported) t;
        -- A node on which the caller sees no row runs no task: then the pair split below.
        IF (SELECT count(*) FROM jsonb_object_keys(exported)) < w THEN
            ranges := NULL;
            exported := '{}';
        END IF;
    END IF;
    IF ranges IS NOT NULL THEN
        RAISE LOG 'spotsigs_citus_join: length ranges from % (borders %), the rows of % nodes exported in % s',
            ranges -> 'los', ranges -> 'borders', w, round(extract(epoch FROM clock_timestamp() - started)::numeric, 2);
        FOR r IN 1 .. cardinality(los) LOOP
            -- Task r reads the pieces from its border up to the next range (node i's piece k is
            -- its intermediate result prefix_i_(k - 1)); it runs on node r, where its own pieces are.
            SELECT coalesce(jsonb_agg(jsonb_build_object('host', hosts[u.i], 'port', ports[u.i],
                                                         'results', p.results, 'rows', p.nrows, 'here', u.i = r) ORDER BY u.i), '[]')
              INTO remotes
              FROM unnest(keys) WITH ORDINALITY u(k, i)
              CROSS JOIN LATERAL (SELECT jsonb_agg(format('%s_%s_%s', prefix, u.i, k - 1) ORDER BY k) AS results,
                                         sum((exported -> u.k ->> (k - 1))::pg_catalog.int8) AS nrows
                                    FROM generate_subscripts(cuts, 1) k
                                   WHERE cuts[k] >= borders[r] AND (r = cardinality(los) OR cuts[k] < los[r + 1])) p
             WHERE exported ? u.k;
            tasks := tasks || jsonb_build_object(keys[r], format(
                '@extschema@.spotsigs_citus_range_task(%L::pg_catalog.jsonb, %s::pg_catalog.int4, %L::pg_catalog.float8, %L::pg_catalog.int4, %L::pg_catalog.text)',
                remotes, los[r], threshold, threads, method));
        END LOOP;
        RETURN jsonb_build_object('rel', rel::pg_catalog.oid, 'tasks', tasks);
    END IF;
    template_arg := @extschema@.spotsigs_citus_template_arg(rel, template);
    IF w > 1 THEN
        SELECT coalesce(jsonb_object_agg(e ->> 'host' || ':' || (e ->> 'port'), e), '{}') INTO exported
          FROM @extschema@.spotsigs_citus_export_all(rel, id_column, sig_column,
                                                     'spotsigs_' || left(md5(random()::text || clock_timestamp()::text), 16)) e;
    END IF;
    RAISE LOG 'spotsigs_citus_join: the template and the rows of % nodes exported in % s', w,
        round(extract(epoch FROM clock_timestamp() - started)::numeric, 2);
    FOR v IN 0 .. w - 1 LOOP
        SELECT coalesce(jsonb_agg(exported -> keys[1 + (v + k) % w] ORDER BY k), '[]')
          INTO remotes
          FROM generate_series(1, w / 2) k
         WHERE (k <= (w - 1) / 2 OR v < w / 2) AND exported ? keys[1 + (v + k) % w];
        tasks := tasks || jsonb_build_object(keys[v + 1], format(
            '@extschema@.spotsigs_citus_task(%L::pg_catalog.text[], %L::pg_catalog.name, %L::pg_catalog.name, '
            '%L::pg_catalog.float8, %L::pg_catalog.int4, %L::pg_catalog.text, %L::pg_catalog.jsonb, '
            'true::pg_catalog.bool, NULL::pg_catalog.text, %s)',
            ARRAY(SELECT jsonb_array_elements_text(shards[v + 1])), id_column, sig_column,
            threshold, threads, method, remotes, template_arg));
    END LOOP;
    RETURN jsonb_build_object('rel', rel::pg_catalog.oid, 'tasks', tasks);
END
$fn$;
COMMENT ON FUNCTION spotsigs_citus_join_tasks(regclass, name, name, double precision, integer, text, spotsig) IS
    'internal: the tasks of spotsigs_join on a hash-distributed table, for the nodes holding its shards';

-- The tasks of spotsigs_join_rs for a hash-distributed archive: {"rel": the oid of the relation
-- whose nodes run them, "tasks": {"host:port": call}, "swapped": bool}, or NULL when there is
-- nothing to join. Each
-- node holding shards of the archive pairs its own archive rows with the batch's: a batch that is
-- not distributed is read here once and broadcast to the workers as an intermediate result
-- (broadcast_intermediate_result); a distributed one is exported by the nodes holding its shards
-- and fetched by each node from each of them (its own included), one node's at a time. When
-- both are distributed, the smaller (citus_table_size) is the one that travels. With a
-- template, the content measure against it (spotsigs_citus_task). A task sends its pairs as
-- (its archive row's id, the batch row's id); "swapped" says the roles were swapped, so that
-- those are (batch id, archive id) of this call. The coordinator reads them (src/pg/join/citus.cpp).
CREATE FUNCTION spotsigs_citus_join_rs_tasks(batch regclass, batch_id name, batch_sig name,
                                             archive regclass, archive_id name, archive_sig name,
                                             threshold double precision, threads integer, method text,
                                             template spotsig DEFAULT NULL)
    RETURNS jsonb
    LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
    SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
    tasks jsonb;
    batch_result text;
    remotes jsonb := '[]';
    tag text := 'spotsigs_' || left(md5(random()::text || clock_timestamp()::text), 16);
    batch_q text;
    n bigint;
    template_arg text;
BEGIN
    IF @extschema@.spotsigs_citus_distributed(batch) THEN
        IF pg_catalog.citus_table_size(batch) > pg_catalog.citus_table_size(archive) THEN
            -- the roles swapped: the other side is the smaller (equal sizes do not swap again)
            RETURN @extschema@.spotsigs_citus_join_rs_tasks(archive, archive_id, archive_sig,
                                                            batch, batch_id, batch_sig, threshold, threads, method,
                                                            template) || '{"swapped": true}'::jsonb;
        END IF;
        SELECT coalesce(jsonb_agg(e), '[]') INTO remotes
          FROM @extschema@.spotsigs_citus_export_all(batch, batch_id, batch_sig, tag) e;
        IF jsonb_array_length(remotes) = 0 THEN
            RETURN NULL;
        END IF;
    ELSE
        -- the batch's rows, read as the caller, checked as any join input (an integer id, a spotsig)
        batch_q := format('SELECT %I::pg_catalog.int8 AS id, %I AS sig FROM %s WHERE %I IS NOT NULL AND %I IS NOT NULL',
                          batch_id, batch_sig, batch, batch_id, batch_sig);
        EXECUTE format('SELECT count(*) FROM (%s) b', batch_q) INTO n;
        IF n = 0 THEN
            RETURN NULL;
        END IF;
        batch_result := tag || '_batch';
        PERFORM pg_catalog.broadcast_intermediate_result(batch_result, batch_q);
        IF EXISTS (SELECT 1 FROM @extschema@.spotsigs_citus_nodes(archive) x
                     JOIN pg_catalog.pg_dist_node d ON d.nodename = x.host AND d.nodeport = x.port
                    WHERE d.groupid = 0) THEN
            -- the coordinator holds shards too: its task reads the batch from its own copy
            PERFORM pg_catalog.create_intermediate_result(batch_result, batch_q);
        END IF;
    END IF;
    template_arg := @extschema@.spotsigs_citus_template_arg(archive, template);
    SELECT jsonb_object_agg(n.host || ':' || n.port, format(
               '@extschema@.spotsigs_citus_task(%L::pg_catalog.text[], %L::pg_catalog.name, %L::pg_catalog.name, '
               '%L::pg_catalog.float8, %L::pg_catalog.int4, %L::pg_catalog.text, %L::pg_catalog.jsonb, '
               'false::pg_catalog.bool, %L::pg_catalog.text, %s)',
               ARRAY(SELECT jsonb_array_elements_text(n.shards)), archive_id, archive_sig,
               threshold, threads, method, remotes, batch_result, template_arg))
      INTO tasks
      FROM @extschema@.spotsigs_citus_nodes(archive) n;
    IF tasks IS NULL THEN
        RETURN NULL;
    END IF;
    RETURN jsonb_build_object('rel', archive::pg_catalog.oid, 'tasks', tasks, 'swapped', false);
END
$fn$;
COMMENT ON FUNCTION spotsigs_citus_join_rs_tasks(regclass, name, name, regclass, name, name, double precision, integer, text, spotsig) IS
    'internal: the tasks of spotsigs_join_rs of a batch against a hash-distributed archive, for the nodes holding its shards';

-- Ingest for tables without the trigger (Citus refuses triggers on distributed tables): after
-- the rows with ids >= first_id have been written (ids increasing in arrival order), flags each
-- of them as spotsigs_flag_duplicates(sig, duplicate, similarity, threshold, 'best') would have,
-- had the rows been inserted one by one in ascending id order: with the row of highest
-- similarity >= threshold among all rows of smaller id (ties to the smallest id), else NULL.
-- The matching is one spotsigs_join_rs of the new rows against the table, so on a distributed
-- table it runs on the workers. Calls on one table are serialized (a SHARE UPDATE EXCLUSIVE lock
-- on it held until the transaction ends). similarity_column NULL: none. threshold NULL: the
-- content measure at 0.4, as the trigger without a threshold (the stored template of target:
-- spotsigs_join_rs's default; on a distributed table too). Returns the number of rows flagged.
CREATE FUNCTION spotsigs_flag_batch(target regclass, id_column name, sig_column name,
                                    duplicate_column name, similarity_column name,
                                    threshold double precision, first_id bigint)
    RETURNS bigint LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
    SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
    n bigint;
    sim_set text := '';
    sim_clear text := '';
    suffix text;
    new_rows text;
    matches text;
BEGIN
    IF target IS NULL OR id_column IS NULL OR sig_column IS NULL OR duplicate_column IS NULL OR first_id IS NULL THEN
        RAISE EXCEPTION 'only similarity_column and threshold may be NULL' USING ERRCODE = '22004';
    END IF;
    PERFORM @extschema@.spotsigs_threshold(threshold);  -- the one threshold rule (22023)
    -- A call must see the rows committed while it waited for the lock below (another batch's, of
    -- smaller ids): under REPEATABLE READ or SERIALIZABLE its snapshot predates the wait, and two
    -- calls could each miss the other's rows and leave wrong flags that no later call corrects.
    IF current_setting('transaction_isolation') <> 'read committed' THEN
        RAISE EXCEPTION 'spotsigs_flag_batch needs READ COMMITTED, not %', current_setting('transaction_isolation')
            USING ERRCODE = '0A000',
                  HINT = 'Call it in a READ COMMITTED transaction: it must see the batches committed before it.';
    END IF;
    IF similarity_column IS NOT NULL THEN
        sim_set := format(', %I = m.similarity', similarity_column);
        sim_clear := format(', %I = NULL', similarity_column);
    END IF;
    -- Serializes calls on one table with a lock only its writers can take (LOCK TABLE in this mode
    -- needs UPDATE, DELETE or TRUNCATE; an advisory lock could be held by any role). It lets
    -- INSERT, UPDATE, DELETE and reads through.
    EXECUTE format('LOCK TABLE %s IN SHARE UPDATE EXCLUSIVE MODE', target);
    -- The new rows and their matches go to two temporary tables of this call's own, under names
    -- that no relation of the session has when the call starts (a random suffix, checked): the
    -- call creates, reads and drops those two and never an object of the caller's, whatever the
    -- caller's objects (the target included) are called.
    LOOP
        suffix := md5(random()::text || clock_timestamp()::text);
        new_rows := 'spotsigs_flag_new_' || suffix;
        matches := 'spotsigs_flag_match_' || suffix;
        EXIT WHEN to_regclass(format('pg_temp.%I', new_rows)) IS NULL AND to_regclass(format('pg_temp.%I', matches)) IS NULL;
    END LOOP;
    EXECUTE format('CREATE TEMP TABLE %I AS SELECT %I::pg_catalog.int8 AS id, %I AS sig FROM %s WHERE %I >= $1 AND %I IS NOT NULL',
                   new_rows, id_column, sig_column, target, id_column, sig_column) USING first_id;
    EXECUTE format('CREATE TEMP TABLE %I AS
      SELECT DISTINCT ON (j.r_id) j.r_id, j.s_id, j.similarity
        FROM @extschema@.spotsigs_join_rs($1, ''id''::pg_catalog.name, ''sig''::pg_catalog.name, $2, $3, $4, $5,
                                          NULL::pg_catalog.int4, NULL::pg_catalog.text, NULL::pg_catalog.text) j
       WHERE j.s_id < j.r_id
       ORDER BY j.r_id, j.similarity DESC, j.s_id', matches)
      USING format('pg_temp.%I', new_rows)::regclass, target, id_column, sig_column, threshold;
    EXECUTE format('UPDATE %s SET %I = NULL%s WHERE %I >= $1 AND %I IS NOT NULL',
                   target, duplicate_column, sim_clear, id_column, duplicate_column) USING first_id;
    EXECUTE format('UPDATE %s t SET %I = m.s_id%s FROM pg_temp.%I m WHERE t.%I = m.r_id',
                   target, duplicate_column, sim_set, matches, id_column);
    GET DIAGNOSTICS n = ROW_COUNT;
    EXECUTE format('DROP TABLE pg_temp.%I, pg_temp.%I', new_rows, matches);
    RETURN n;
END
$fn$;
COMMENT ON FUNCTION spotsigs_flag_batch(regclass, name, name, name, name, double precision, bigint) IS
    'flags the rows with ids >= first_id as the spotsigs_flag_duplicates trigger (best) would, for tables without it (Citus)';
