# ALTER EXTENSION spotsigs UPDATE from 0.1.0 to the current default version, with real data: a
# table with a generated spotsig column, a spotsigs index and the duplicate-flagging trigger.
#
# 1. Values, index answers, the trigger's flags and the join are the same after the update as
#    before it, and rows inserted after the update are flagged and found as in a database that
#    was created at the current version and given the same rows.
# 2. The on-disk formats are those the upgrade script's header describes: stored spotsig bytes
#    are packed format 1, as 0.1.0 wrote them, and an index gets metapage version 4. An index
#    of the format 0.1.0 wrote (3) is refused with 0A000 and a REINDEX hint before and after the
#    update, does not stop the update, and REINDEX CONCURRENTLY brings it back.
# 3. The updated extension's member objects equal a fresh installation's, attribute by attribute
#    (definition, volatility, parallel safety, strictness, search_path and other settings,
#    security, owner, access rights, comment, operator class members). Every difference is
#    listed by object and attribute.
# 4. Every function or operator that the update adds has a check in %new_object_checks below.
use strict;
use warnings;
use JSON::PP;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $old_version = '0.1.0';

my $node = PostgreSQL::Test::Cluster->new('upgrade');
# The format-3 index below is made by writing its metapage's bytes: without data checksums
# (initdb enables them by default from PostgreSQL 18), or the server rejects the page as corrupt.
my ($pgmajor) = `pg_config --version` =~ /PostgreSQL (\d+)/;
$node->init($pgmajor >= 18 ? (extra => ['--no-data-checksums']) : ());
$node->start;
my $current = $node->safe_psql('postgres',
	"SELECT default_version FROM pg_available_extensions WHERE name = 'spotsigs'");

# Synthetic news stories of 120 words (30% antecedents, so many spot signatures), 4 variants of
# each with about 2% of the words replaced: variants of a story are near duplicates.
my $setup = q{
CREATE EXTENSION pageinspect;
SELECT setseed(0.5);
CREATE TABLE story AS
  SELECT s, i, CASE WHEN random() < 0.3
                    THEN (ARRAY['the','a','is','was','will','can','has','does'])[1 + floor(random() * 8)::int]
                    ELSE 'w' || floor(random() * 5000)::int END AS word
  FROM generate_series(1, 40) s, generate_series(1, 120) i;
CREATE TABLE src AS
  SELECT 4 * (s - 1) + v AS n,
         string_agg(CASE WHEN random() < 0.02 THEN 'x' || floor(random() * 5000)::int ELSE word END, ' ' ORDER BY i) AS body
  FROM story, generate_series(1, 4) v GROUP BY s, v;
CREATE TABLE docs (
  id int PRIMARY KEY,
  body text,
  sig spotsig GENERATED ALWAYS AS (spotsigs(body)) STORED,
  duplicate_of int,
  similarity float8);
CREATE INDEX docs_sig ON docs USING spotsigs (sig);
CREATE TRIGGER docs_dedup BEFORE INSERT OR UPDATE OF body ON docs
  FOR EACH ROW EXECUTE FUNCTION spotsigs_flag_duplicates('sig', 'duplicate_of', 'similarity', '0.6', 'best');
CREATE TABLE fixed (v spotsig);
INSERT INTO fixed VALUES ('{1:2,ff:1,123456789abcdef0:3}');
};
# Variants 1 and 2 of every story arrive before the update, variants 3 and 4 after it, so the
# trigger flags rows against earlier rows in both phases.
# The trigger's flags against a brute-force reference: the most similar row inserted earlier (at
# least 0.6; ties to the smallest id).
my $flags_q = 'SELECT id, duplicate_of, round(similarity::numeric, 6) FROM docs ORDER BY id';
my $brute_q = q{SELECT d.id, b.id, round(b.sim::numeric, 6) FROM docs d LEFT JOIN LATERAL (
	  SELECT e.id, similarity(d.sig, e.sig) AS sim FROM docs e
	  WHERE ((e.id - 1) % 4 >= 2, e.id) < ((d.id - 1) % 4 >= 2, d.id) AND similarity(d.sig, e.sig) >= 0.6
	  ORDER BY 2 DESC, 1 LIMIT 1) b ON true ORDER BY d.id};
my $first_rows = 'INSERT INTO docs (id, body) SELECT n, body FROM src WHERE (n - 1) % 4 < 2 ORDER BY n';
my $later_rows = 'INSERT INTO docs (id, body) SELECT n, body FROM src WHERE (n - 1) % 4 >= 2 ORDER BY n';

# What a user sees of the data: stored values and flags, index answers (checked to come from the
# index), the similarity join and the index's own check.
my $values_q = 'SELECT id, sig::text, duplicate_of, round(similarity::numeric, 6) FROM docs ORDER BY id';
my $index_q = q{SET enable_seqscan = off; SET spotsigs.similarity_threshold = 0.5;
	SELECT q.id, (SELECT array_agg(b.id ORDER BY b.id) FROM docs b WHERE b.sig % q.sig),
	       (SELECT array_agg(b.id) FROM (SELECT b.id FROM docs b ORDER BY b.sig <-> q.sig, b.id LIMIT 4) b)
	FROM docs q WHERE q.id % 7 = 0 ORDER BY q.id};
my $plan_q = q{SET enable_seqscan = off; SET spotsigs.similarity_threshold = 0.5;
	EXPLAIN (COSTS OFF) SELECT id FROM docs WHERE sig % spotsigs('the w1 is w2 a w3')};
my $join_q = q{SELECT id1, id2, round(similarity::numeric, 6) FROM spotsigs_join('docs', 'id', 'sig', 0.6) ORDER BY 1, 2};
my $check_q = q{SELECT spotsigs_index_check('docs_sig')};
# A bare % with no setting (spotsigs.similarity_threshold = 'auto'): the plain similarity at 0.2,
# through the index, until the table is analyzed; then the content similarity at 0.4 against the
# stored template. Each is compared with its brute force.
my $bare_q = q{SET enable_seqscan = off;
	SELECT q.id, (SELECT array_agg(b.id ORDER BY b.id) FROM docs b WHERE b.sig % q.sig)
	FROM docs q WHERE q.id % 7 = 0 ORDER BY q.id};
my $bare_plain_q = q{SELECT q.id, (SELECT array_agg(b.id ORDER BY b.id) FROM docs b WHERE similarity(b.sig, q.sig) >= 0.2)
	FROM docs q WHERE q.id % 7 = 0 ORDER BY q.id};
my $bare_content_q = q{SELECT q.id, (SELECT array_agg(b.id ORDER BY b.id) FROM docs b, spotsigs_stats s
	  WHERE s.relation = 'docs'::regclass AND s.sig_column = 'sig'
	    AND similarity(spotsig_remove(b.sig, s.template), spotsig_remove(q.sig, s.template)) >= 0.4)
	FROM docs q WHERE q.id % 7 = 0 ORDER BY q.id};
# The stored bytes of a literal value (1-byte varlena header, then packed format 1 in host byte
# order) and the index metapage's magic and version, as 0.1.0 wrote them.
my $value_bytes_q = q{SELECT t_attrs[1] FROM heap_page_item_attrs(get_raw_page('fixed', 0), 'fixed'::regclass)};
my $meta_q = q{SELECT encode(substring(get_raw_page('docs_sig', 0) FROM 25 FOR 8), 'hex')};

sub user_view
{
	my ($db) = @_;
	return join("\n---\n", map { $node->safe_psql($db, $_) } ($values_q, $index_q, $join_q, $check_q));
}

# Every member object of the extension with its attributes as JSON, one "identity\tjson" line
# each. Type and function references are printed by name so that two databases compare.
my $members_q = q{
WITH m AS (
  SELECT d.classid, d.objid FROM pg_depend d JOIN pg_extension e ON e.oid = d.refobjid
  WHERE d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e' AND e.extname = 'spotsigs'),
fam AS (
  SELECT f.oid,
    (SELECT coalesce(jsonb_agg(jsonb_build_object('strategy', o.amopstrategy, 'left', o.amoplefttype::regtype,
       'right', o.amoprighttype::regtype, 'operator', o.amopopr::regoperator, 'purpose', o.amoppurpose,
       'sortfamily', (SELECT s.opfname FROM pg_opfamily s WHERE s.oid = o.amopsortfamily))
       ORDER BY o.amopstrategy, o.amoplefttype::regtype::text, o.amoprighttype::regtype::text), '[]')
     FROM pg_amop o WHERE o.amopfamily = f.oid) AS operators,
    (SELECT coalesce(jsonb_agg(jsonb_build_object('number', p.amprocnum, 'left', p.amproclefttype::regtype,
       'right', p.amprocrighttype::regtype, 'function', p.amproc::regprocedure)
       ORDER BY p.amprocnum, p.amproclefttype::regtype::text, p.amprocrighttype::regtype::text), '[]')
     FROM pg_amproc p WHERE p.amprocfamily = f.oid) AS functions
  FROM pg_opfamily f)
SELECT pg_describe_object(m.classid, m.objid, 0) || E'\t' || (
  CASE m.classid
  WHEN 'pg_proc'::regclass THEN (
    SELECT jsonb_build_object('kind', p.prokind, 'arguments', pg_get_function_arguments(p.oid),
      'result', pg_get_function_result(p.oid), 'language', l.lanname, 'volatility', p.provolatile,
      'parallel', p.proparallel, 'strict', p.proisstrict, 'security_definer', p.prosecdef,
      'leakproof', p.proleakproof, 'config', p.proconfig, 'cost', p.procost, 'rows', p.prorows,
      'support', p.prosupport, 'source', p.prosrc, 'library', p.probin, 'owner', pg_get_userbyid(p.proowner),
      'acl', p.proacl, 'schema', p.pronamespace::regnamespace,
      'definition', CASE WHEN p.prokind <> 'a' THEN pg_get_functiondef(p.oid) END,
      'aggregate', (SELECT to_jsonb(a) - 'aggfnoid' || jsonb_build_object('aggtranstype', a.aggtranstype::regtype,
         'aggmtranstype', a.aggmtranstype::regtype, 'aggsortop', a.aggsortop::regoperator)
         FROM pg_aggregate a WHERE a.aggfnoid = p.oid))
    FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang WHERE p.oid = m.objid)
  WHEN 'pg_type'::regclass THEN (
    SELECT to_jsonb(t) - 'oid' || jsonb_build_object('typnamespace', t.typnamespace::regnamespace,
      'typowner', pg_get_userbyid(t.typowner), 'typelem', t.typelem::regtype, 'typarray', t.typarray::regtype,
      'typbasetype', t.typbasetype::regtype, 'typrelid', t.typrelid::regclass,
      'typcollation', (SELECT c.collname FROM pg_collation c WHERE c.oid = t.typcollation),
      'columns', (SELECT jsonb_agg(a.attname || ' ' || format_type(a.atttypid, a.atttypmod) ORDER BY a.attnum)
         FROM pg_attribute a WHERE a.attrelid = t.typrelid AND a.attnum > 0 AND NOT a.attisdropped))
    FROM pg_type t WHERE t.oid = m.objid)
  WHEN 'pg_operator'::regclass THEN (
    SELECT to_jsonb(o) - 'oid' || jsonb_build_object('oprnamespace', o.oprnamespace::regnamespace,
      'oprowner', pg_get_userbyid(o.oprowner), 'oprleft', o.oprleft::regtype, 'oprright', o.oprright::regtype,
      'oprresult', o.oprresult::regtype, 'oprcom', o.oprcom::regoperator, 'oprnegate', o.oprnegate::regoperator,
      'oprcode', o.oprcode::regprocedure)
    FROM pg_operator o WHERE o.oid = m.objid)
  WHEN 'pg_opclass'::regclass THEN (
    SELECT to_jsonb(c) - 'oid' || jsonb_build_object('opcmethod', am.amname,
      'opcnamespace', c.opcnamespace::regnamespace, 'opcowner', pg_get_userbyid(c.opcowner),
      'opcfamily', f.opfname, 'opcintype', c.opcintype::regtype, 'opckeytype', c.opckeytype::regtype)
    FROM pg_opclass c JOIN pg_am am ON am.oid = c.opcmethod JOIN pg_opfamily f ON f.oid = c.opcfamily
    WHERE c.oid = m.objid)
  WHEN 'pg_opfamily'::regclass THEN (
    SELECT jsonb_build_object('name', f.opfname, 'method', am.amname, 'schema', f.opfnamespace::regnamespace,
      'owner', pg_get_userbyid(f.opfowner), 'operators', fam.operators, 'functions', fam.functions)
    FROM pg_opfamily f JOIN pg_am am ON am.oid = f.opfmethod JOIN fam ON fam.oid = f.oid
    WHERE f.oid = m.objid)
  WHEN 'pg_am'::regclass THEN (
    SELECT jsonb_build_object('name', a.amname, 'handler', a.amhandler::regprocedure, 'type', a.amtype)
    FROM pg_am a WHERE a.oid = m.objid)
  ELSE '{}'::jsonb END
  || jsonb_build_object('comment', (SELECT d.description FROM pg_description d
       WHERE d.classoid = m.classid AND d.objoid = m.objid AND d.objsubid = 0)))::text
FROM m ORDER BY 1};

sub members
{
	my ($db) = @_;
	my %objects;
	for my $line (split /\n/, $node->safe_psql($db, $members_q))
	{
		my ($id, $json) = split /\t/, $line, 2;
		$objects{$id} = decode_json($json);
	}
	return \%objects;
}

# The differences between two member listings, one entry per object or attribute. A function's
# whole definition is shown only when no single attribute of it differs; texts of several lines
# (a function body) are shown as they read.
sub member_differences
{
	my ($got, $want, $got_name, $want_name) = @_;
	my @diffs;
	my $json = JSON::PP->new->canonical->allow_nonref;
	my $show = sub {
		my ($v) = @_;
		return (defined $v && !ref $v && $v =~ /\n/) ? "\n" . join("\n", map { "      | $_" } split /\n/, $v) : $json->encode($v);
	};
	for my $id (sort keys %$want)
	{
		if (!exists $got->{$id}) { push @diffs, "$id: missing in $got_name"; next; }
		my @attrs = grep { $json->encode($got->{$id}{$_}) ne $json->encode($want->{$id}{$_}) }
		  sort keys %{ $want->{$id} };
		@attrs = grep { $_ ne 'definition' } @attrs if @attrs > 1;
		push @diffs, map { "$id: $_ differs\n    $got_name: " . $show->($got->{$id}{$_})
			  . "\n    $want_name: " . $show->($want->{$id}{$_}) } @attrs;
	}
	push @diffs, map { "$_: only in $got_name" } grep { !exists $want->{$_} } sort keys %$got;
	return @diffs;
}

# The 0.1.0 database with its first rows, and a reference database created at the current version.
$node->safe_psql('postgres', 'CREATE DATABASE upg');
$node->safe_psql('postgres', 'CREATE DATABASE ref');
$node->safe_psql('upg', "CREATE EXTENSION spotsigs VERSION '$old_version'");
$node->safe_psql('ref', 'CREATE EXTENSION spotsigs');
is($node->safe_psql('upg', "SELECT extversion FROM pg_extension WHERE extname = 'spotsigs'"),
	$old_version, "created at $old_version");
for my $db ('upg', 'ref') { $node->safe_psql($db, $setup . $first_rows); }

like($node->safe_psql('upg', $plan_q), qr/Index Scan using docs_sig/, 'the index answers % at 0.1.0');
is($node->safe_psql('upg', $bare_q), $node->safe_psql('upg', $bare_plain_q), 'a bare % at 0.1.0 is the plain similarity at 0.2');
is($node->safe_psql('upg', $flags_q), $node->safe_psql('upg', $brute_q), "the trigger's flags at $old_version are the brute-force ones");
my $flagged = $node->safe_psql('upg', 'SELECT count(duplicate_of) FROM docs');
cmp_ok($flagged, '>=', 20, "the trigger flagged $flagged of the first 80 rows (at most 40 can be)");
my $before = user_view('upg');
my $old_members = members('upg');

is($node->safe_psql('upg', $value_bytes_q), '\x510101000003000000060000000100000000000000ff00000000000000f0debc9a78563412020103',
	'stored spotsig bytes are packed format 1 as in 0.1.0 (else: say in the upgrade script how old values are read)');
is($node->safe_psql('upg', $meta_q), '5849505305000000',
	'index metapage magic and version 5 (else: update the upgrade script header and this test)');

# An index of format 3, as 0.1.0 wrote them: one built now with its metapage's version set to
# 3 on disk while the server is down (the library decides by that number alone).
$node->safe_psql('upg', 'CREATE TABLE old_format AS SELECT id, sig FROM docs;
	CREATE INDEX old_format_sig ON old_format USING spotsigs (sig)');
my $old_format_q = q{SET enable_seqscan = off; SET spotsigs.similarity_threshold = 0.5;
	SELECT q.id, (SELECT array_agg(b.id ORDER BY b.id) FROM old_format b WHERE b.sig % q.sig)
	FROM docs q WHERE q.id % 9 = 0 ORDER BY q.id};
my $old_format_answer = $node->safe_psql('upg', $old_format_q);
my $old_format_file = $node->data_dir . '/' . $node->safe_psql('upg', "SELECT pg_relation_filepath('old_format_sig')");
$node->stop;
open(my $fh, '+<:raw', $old_format_file) or die "open $old_format_file: $!";
seek($fh, 24 + 4, 0) or die;    # page header, then the magic, then the version
print $fh pack('V', 3);
close($fh) or die;
$node->start;
sub old_format_refused
{
	my ($when) = @_;
	for my $q ($old_format_q, 'INSERT INTO old_format SELECT 0, sig FROM docs WHERE id = 1')
	{
		my ($ret, $out, $err) = $node->psql('upg', "\\set VERBOSITY verbose\n$q");
		like($err, qr/ERROR:  0A000: spotsigs index "old_format_sig" has version 3, this build reads versions 4 to 5.*HINT:  REINDEX the index/s,
			"$when, a format 3 index is refused with 0A000 and a REINDEX hint (" . ($q =~ /^INSERT/ ? 'insert' : 'scan') . ')');
	}
}
old_format_refused('before the update');

# The update itself.
$node->safe_psql('upg', 'ALTER EXTENSION spotsigs UPDATE');
is($node->safe_psql('upg', "SELECT extversion FROM pg_extension WHERE extname = 'spotsigs'"),
	$current, "updated to $current");

is(user_view('upg'), $before, 'values, flags, index answers, join and index check unchanged by the update');

# The update leaves a format 3 index as it is; REINDEX rebuilds it from the table.
old_format_refused('after the update');
$node->safe_psql('upg', 'REINDEX INDEX CONCURRENTLY old_format_sig');
is($node->safe_psql('upg', $old_format_q), $old_format_answer, 'after REINDEX CONCURRENTLY the index answers as before');

# An index of format 4, as 0.2.0 wrote them: it does not record rows whose value is NULL. It
# still answers % and takes inserts; a scan that must return every row (here ORDER BY <-> read to
# its end) is refused with 0A000 and a REINDEX hint, never answered without those rows.
$node->safe_psql('upg', 'INSERT INTO old_format VALUES (-1, NULL)');
$old_format_answer = $node->safe_psql('upg', $old_format_q);
my $all_rows_q = q{SET enable_seqscan = off;
	SELECT count(*), count(*) FILTER (WHERE sig IS NULL) FROM (SELECT sig FROM old_format ORDER BY sig <-> '{1}') s};
my $all_rows = $node->safe_psql('upg', 'SELECT count(*), count(*) FILTER (WHERE sig IS NULL) FROM old_format');
is($node->safe_psql('upg', $all_rows_q), $all_rows, 'a format 5 index returns the NULL row at the end of ORDER BY <->');
$old_format_file = $node->data_dir . '/' . $node->safe_psql('upg', "SELECT pg_relation_filepath('old_format_sig')");
$node->stop;
open($fh, '+<:raw', $old_format_file) or die "open $old_format_file: $!";
seek($fh, 24 + 4, 0) or die;
print $fh pack('V', 4);
close($fh) or die;
$node->start;
is($node->safe_psql('upg', $old_format_q), $old_format_answer, 'a format 4 index answers % as before');
$node->safe_psql('upg', 'INSERT INTO old_format SELECT -2, sig FROM docs WHERE id = 1');
{
	my ($ret, $out, $err) = $node->psql('upg', "\\set VERBOSITY verbose\n$all_rows_q");
	like($err, qr/ERROR:  0A000: spotsigs index "old_format_sig" has version 4, which does not record rows whose value is NULL.*HINT:  REINDEX the index/s,
		'a format 4 index refuses a scan that must return every row, with 0A000 and a REINDEX hint');
}
$node->safe_psql('upg', 'REINDEX INDEX old_format_sig');
is($node->safe_psql('upg', $all_rows_q), $node->safe_psql('upg', 'SELECT count(*), count(*) FILTER (WHERE sig IS NULL) FROM old_format'),
	'after REINDEX the index returns every row, the NULL one too');
$node->safe_psql('upg', 'DELETE FROM old_format WHERE id < 0');
like($node->safe_psql('upg', $plan_q), qr/Index Scan using docs_sig/, 'the index answers % after the update');
my $bare_before = $node->safe_psql('upg', $bare_q);
is($bare_before, $node->safe_psql('upg', $bare_plain_q), 'after the update, before any analyze, a bare % is the plain similarity at 0.2');
like($node->safe_psql('upg', "SET enable_seqscan = off; EXPLAIN (COSTS OFF) SELECT id FROM docs WHERE sig % '{1,2}'"),
	qr/Index Scan using docs_sig.*\n.*spotsig_auto_query/, 'a bare % after the update: the rewritten qual, through the index');
my ($bare_analyzed, $bare_content) = split /\n===\n/, $node->safe_psql('upg',
	"BEGIN; SELECT spotsigs_analyze('docs', 'sig') >= 0; $bare_q; SELECT '==='; $bare_content_q; ROLLBACK");
$bare_analyzed =~ s/^t\n//;
is($bare_analyzed, $bare_content, 'after spotsigs_analyze, a bare % is the content similarity at 0.4');
is($node->safe_psql('upg', $bare_q), $bare_before, 'rolled back: the plain answers again');

# Rows after the update: the trigger flags them and the index finds them as at the current version.
for my $db ('upg', 'ref') { $node->safe_psql($db, $later_rows); }
is($node->safe_psql('upg', $flags_q), $node->safe_psql('upg', $brute_q), "the trigger's flags after the update are the brute-force ones");
my $late_flagged = $node->safe_psql('upg', 'SELECT count(duplicate_of) FROM docs WHERE (id - 1) % 4 >= 2');
cmp_ok($late_flagged, '>=', 40, "the trigger flagged $late_flagged of the 80 rows inserted after the update");
is(user_view('upg'), user_view('ref'), "after more rows, the updated database answers as one created at $current");
like($node->safe_psql('upg', $check_q), qr/^ok: .*\b160\b/, 'the index holds every row');

# The catalog: the updated extension equals a fresh installation.
my $new_members = members('ref');
my @diffs = member_differences(members('upg'), $new_members, "updated from $old_version", "fresh $current");
ok(!@diffs, "the updated extension's objects equal a fresh $current installation's")
  or diag(scalar(@diffs) . " difference(s); extend sql-versions/spotsigs--$old_version--$current.sql.in (or add a step):\n"
	  . join("\n", @diffs));

# New functions and operators: each has a check here (SQL and its expected output, or the
# SQLSTATE it must stop with as 'ERROR:  XXXXX'), run in the updated database. Without Citus the
# Citus helpers stop where they look up Citus's catalogs (42P01) or functions (42883): that much
# shows them callable after the update; test/t/040_citus.pl runs them on Citus, and the catalog
# comparison above shows their definitions equal a fresh installation's.
my $q5 = '(SELECT sig FROM docs WHERE id = 5)';
my %new_object_checks = (
	# Takes internal arguments (the planner calls it): the check is that % of two spotsigs uses it.
	'function spotsig_joinsel(internal,oid,internal,smallint,internal)' => [
		q{SELECT oprjoin FROM pg_operator WHERE oprname = '%' AND oprright = 'spotsig'::regtype},
		'spotsig_joinsel'
	],
	'function spotsig_query(spotsig,double precision)' =>
	  [ q{SELECT spotsig_query('{1,2}', 0.5)}, '("{0000000000000001,0000000000000002}",0.5)' ],
	'function spotsig_similar_query(spotsig,spotsigs_query)' => [
		q{SELECT spotsig_similar_query('{1,2}', spotsig_query('{1,2,3}', 0.6)), spotsig_similar_query('{1,2}', spotsig_query('{1,2,3}', 0.7))},
		't|f' ],
	'operator %(spotsig,spotsigs_query)' => [
		"SET enable_seqscan = off; SELECT array_agg(id ORDER BY id) = (SELECT array_agg(id ORDER BY id) FROM docs
		   WHERE similarity(sig, $q5) >= 0.5) FROM docs WHERE sig % spotsig_query($q5, 0.5)", 't' ],
	'function spotsigs_flag_batch(regclass,name,name,name,name,double precision,bigint)' => [
		q{CREATE TABLE batch AS SELECT id, sig, NULL::int AS dup, NULL::float8 AS sim FROM docs;
		  SELECT spotsigs_flag_batch('batch', 'id', 'sig', 'dup', 'sim', 0.6, 1) > 0;
		  SELECT count(*) FROM batch f LEFT JOIN LATERAL (SELECT e.id FROM batch e
		    WHERE e.id < f.id AND similarity(f.sig, e.sig) >= 0.6 ORDER BY similarity(f.sig, e.sig) DESC, e.id LIMIT 1) b
		  ON true WHERE f.dup IS DISTINCT FROM b.id}, "t\n0" ],
	'function spotsigs_threshold(double precision)' =>
	  [ q{SELECT spotsigs_threshold(0.5), spotsigs_threshold(NULL)}, '0.5|0.2' ],
	'function spotsig_remove(spotsig,spotsig)' =>
	  [ q{SELECT spotsig_remove('{1:2,2:1,3:1}', '{2}')}, '{0000000000000001:2,0000000000000003}' ],
	# The stored statistics, and a trigger created with a threshold before the update keeps the
	# plain measure at that threshold once the table has them (rolled back: docs stays as it is).
	'function spotsigs_analyze(regclass,name,name)' => [
		q{BEGIN;
		  SELECT spotsigs_analyze('docs', 'sig') >= 0;
		  SELECT rows_analyzed FROM spotsigs_stats WHERE relation = 'docs'::regclass;
		  UPDATE docs SET body = body || ' the end' WHERE id = 1;
		  UPDATE docs SET body = body || ' the end' WHERE id = 5;
		  SELECT count(*) FROM docs n LEFT JOIN LATERAL (SELECT e.id, similarity(n.sig, e.sig) AS s FROM docs e
		    WHERE e.id <> n.id AND similarity(n.sig, e.sig) >= 0.6 ORDER BY 2 DESC, e.id LIMIT 1) b ON true
		  WHERE n.id IN (1, 5) AND (n.duplicate_of IS DISTINCT FROM b.id OR n.similarity IS DISTINCT FROM b.s);
		  ROLLBACK}, "t\n160\n0" ],
	# A threshold without a measure keeps the plain measure, as the 0.2.0 definition did.
	'function spotsigs_join_rs(regclass,name,name,regclass,name,name,double precision,integer,text,text)' => [
		q{SELECT (SELECT count(*) FROM spotsigs_join_rs('docs', 'id', 'sig', 'docs', 'id', 'sig', 0.6))
		       = (SELECT count(*) FROM docs a, docs b WHERE similarity(a.sig, b.sig) >= 0.6)}, 't' ],
	# The content query: before any analyze of docs, the plain similarity at 0.4; served by the
	# index built at 0.1.0 (the operator family gained strategy 4).
	'function spotsig_content_query(spotsig,regclass,name)' =>
	  [ q{SELECT (spotsig_content_query('{1,2}', 'docs', 'sig')).threshold}, '0.4' ],
	'function spotsig_auto_query(spotsig,regclass,name)' =>
	  [ q{SELECT spotsig_auto_query('{1,2}', 'docs', 'sig')}, '("{0000000000000001,0000000000000002}",0.2,{},,,)' ],
	# Takes internal arguments (the planner calls it): the check is that spotsig % spotsig has it.
	'function spotsig_similar_support(internal)' =>
	  [ q{SELECT prosupport FROM pg_proc WHERE proname = 'spotsig_similar'}, 'spotsig_similar_support' ],
	# Answers no request; the check is that similarity(spotsig, spotsig) has it as support.
	'function spotsig_similarity_support(internal)' => [
		q{SELECT prosupport FROM pg_proc WHERE proname = 'similarity' AND proargtypes[0] = 'spotsig'::regtype},
		'spotsig_similarity_support'
	],
	'function spotsig_content_similar(spotsig,spotsigs_content_query)' =>
	  [ q{SELECT spotsig_content_similar('{1,2,3}', ROW('{1,2}', 0.4, '{3}', NULL, NULL, NULL)::spotsigs_content_query)}, 't' ],
	'operator %(spotsig,spotsigs_content_query)' => [
		"SET enable_seqscan = off; SELECT array_agg(id ORDER BY id) = (SELECT array_agg(id ORDER BY id) FROM docs
		   WHERE similarity(sig, $q5) >= 0.4) FROM docs WHERE sig % spotsig_content_query($q5, 'docs', 'sig')", 't' ],
	# Ordered by content distance through the index built at 0.1.0 (the family gained strategy 5):
	# the nearest 5 distances equal a full sort's (no statistics: the plain distance).
	'function spotsig_content_distance(spotsig,spotsigs_content_query)' =>
	  [ q{SELECT spotsig_content_distance('{1,2,3}', ROW('{1,2,5}', 0.4, '{3}', NULL, NULL, NULL)::spotsigs_content_query)}, '0.33333333333333337' ],
	'operator <->(spotsig,spotsigs_content_query)' => [
		"SET enable_seqscan = off; SELECT array_agg(d) = (SELECT array_agg(d) FROM (SELECT sig <-> $q5 AS d FROM docs
		   ORDER BY 1 LIMIT 5) y) FROM (SELECT sig <-> spotsig_content_query($q5, 'docs', 'sig') AS d FROM docs
		   ORDER BY sig <-> spotsig_content_query($q5, 'docs', 'sig') LIMIT 5) x", 't' ],
	'function spotsigs_template(regclass,name,name)' =>
	  [ q{SELECT spotsigs_template('docs', 'id', 'sig') IS NOT NULL}, 't' ],
	'function spotsigs_join(regclass,name,name,double precision,integer,text,text)' => [
		q{WITH j AS (SELECT id1, id2 FROM spotsigs_join('docs', 'id', 'sig', 0.6, measure => 'jaccard')),
		  b AS (SELECT a.id::bigint AS id1, b.id::bigint AS id2 FROM docs a JOIN docs b
		        ON a.id < b.id AND similarity(a.sig, b.sig) >= 0.6)
		  SELECT (SELECT count(*) FROM j) = (SELECT count(*) FROM b), (SELECT count(*) FROM (TABLE j EXCEPT TABLE b) x)}, 't|0' ],
	'function spotsigs_clusters(regclass,name,name,double precision,integer,text,text)' =>
	  [ q{SELECT count(*) FROM spotsigs_clusters('docs', 'id', 'sig', 0.6, measure => 'jaccard')}, '160' ],
	'function spotsigs_citus_distributed(regclass)' => [ q{SELECT spotsigs_citus_distributed('docs')}, 'f' ],
	'function spotsigs_citus_nodes(regclass)' => [ q{SELECT * FROM spotsigs_citus_nodes('docs')}, 'ERROR:  42P01' ],
	'function spotsigs_citus_join_tasks(regclass,name,name,double precision,integer,text,spotsig)' =>
	  [ q{SELECT spotsigs_citus_join_tasks('docs', 'id', 'sig', 0.6)}, 'ERROR:  42883' ],
	'function spotsigs_citus_join_rs_tasks(regclass,name,name,regclass,name,name,double precision,integer,text,spotsig)' =>
	  [ q{SELECT spotsigs_citus_join_rs_tasks('docs', 'id', 'sig', 'docs', 'id', 'sig', 0.6)}, 'ERROR:  42883' ],
	'function spotsigs_citus_on_nodes(regclass,jsonb)' =>
	  [ q{SELECT * FROM spotsigs_citus_on_nodes('docs', '{}')}, 'ERROR:  42P01' ],
	'function spotsigs_citus_export_all(regclass,name,name,text)' =>
	  [ q{SELECT * FROM spotsigs_citus_export_all('docs', 'id', 'sig', 'x')}, 'ERROR:  42P01' ],
	# A task's matching: the self-join of its shards (here one table), as spotsigs_join's.
	'function spotsigs_citus_match(regclass[],name,name,text[],double precision,integer,text,spotsig,text)' => [
		q{SELECT (SELECT count(*) FROM spotsigs_citus_match('{docs}', 'id', 'sig', NULL, 0.6, 1, NULL, NULL, 'local'))
		       = (SELECT count(*) FROM spotsigs_join('docs', 'id', 'sig', 0.6, measure => 'jaccard'))}, 't' ],
	'function spotsigs_citus_hold_value(spotsig)' =>
	  [ q{SELECT spotsigs_citus_held_value() = '{1,2:3}' FROM (SELECT spotsigs_citus_hold_value('{1,2:3}')) h}, 't' ],
	'function spotsigs_citus_held_value()' => [ q{SELECT spotsigs_citus_held_value()}, 'ERROR:  55000' ],
	'function spotsigs_citus_template_arg(regclass,spotsig)' =>
	  [ q{SELECT spotsigs_citus_template_arg('docs', NULL)}, 'NULL::public.spotsig' ],
	'function spotsigs_citus_export_pieces(text[],text,name,name,integer[])' =>
	  [ q{SELECT spotsigs_citus_export_pieces('{docs}', 'x', 'id', 'sig', '{0,5}')}, 'ERROR:  42P01' ],
	'function spotsigs_citus_ranges(regclass,name,name,double precision,integer)' =>
	  [ q{SELECT spotsigs_citus_ranges('docs', 'id', 'sig', 0.9, 5)}, 'ERROR:  42883' ],
	'function spotsigs_citus_range_task(jsonb,integer,double precision,integer,text)' => [
		q{SELECT spotsigs_citus_range_task('[{"host": "localhost", "port": 1, "results": ["x"], "rows": 0, "here": false}]', 0, 0.9, 1, NULL)},
		'ERROR:  42883' ],
	'function spotsigs_citus_export(text[],text[],name,name)' =>
	  [ q{SELECT spotsigs_citus_export('{docs}', '{x}', 'id', 'sig')}, 'ERROR:  42883' ],
	'function spotsigs_citus_task(text[],name,name,double precision,integer,text,jsonb,boolean,text,spotsig)' =>
	  [ q{SELECT spotsigs_citus_task('{docs}', 'id', 'sig', 0.6, 1, NULL, '[]', true, NULL)}, 'ERROR:  42P01' ],
	'function spotsigs_citus_pack(regclass,name,name)' => [
		q{SELECT count(*) > 0 AND count(*) = (SELECT count(*) FROM docs WHERE sig IS NOT NULL)
		  FROM docs d JOIN spotsigs_citus_unpack(spotsigs_citus_pack('docs', 'id', 'sig')) u ON u.id = d.id AND u.sig = d.sig}, 't' ],
	'function spotsigs_citus_unpack(text)' => [
		q{SELECT count(*) = (SELECT count(*) FROM docs WHERE sig IS NOT NULL)
		  FROM spotsigs_citus_unpack(spotsigs_citus_pack('docs', 'id', 'sig'))}, 't' ],
	# The pairs of a task packed by the aggregate and read back: the join's pairs, the very doubles.
	'function spotsigs_citus_pairs_add(internal,bigint,bigint,double precision)' => [
		q{SELECT count(*) FROM pg_aggregate WHERE aggtransfn = 'spotsigs_citus_pairs_add'::regproc}, '1' ],
	'function spotsigs_citus_pairs_final(internal)' => [
		q{SELECT count(*) FROM pg_aggregate WHERE aggfinalfn = 'spotsigs_citus_pairs_final'::regproc}, '1' ],
	'function spotsigs_citus_pairs_agg(bigint,bigint,double precision)' => [
		q{WITH j AS (SELECT * FROM spotsigs_join('docs', 'id', 'sig', 0.6)),
		       p AS (SELECT spotsigs_citus_pairs_agg(id2, id1, similarity) AS t FROM j)
		  SELECT (SELECT count(*) FROM j) > 0 AND (SELECT count(*) FROM (TABLE j EXCEPT ALL
		    SELECT q.* FROM p, spotsigs_citus_pairs(p.t, true) q) x) = 0
		    AND (SELECT count(*) FROM p, spotsigs_citus_pairs(p.t, true)) = (SELECT count(*) FROM j)}, 't' ],
	'function spotsigs_citus_pairs(text,boolean)' =>
	  [ q{SELECT count(*) FROM spotsigs_citus_pairs((SELECT spotsigs_citus_pairs_agg(1, 2, 0.5) WHERE false), false)}, '0' ],
	'function spotsigs_join_candidates()' => [
		q{CREATE TEMP TABLE c0 AS SELECT spotsigs_join_candidates() AS n;
		  SELECT (SELECT count(*) FROM spotsigs_join('docs', 'id', 'sig', 0.6)) <= spotsigs_join_candidates() - n FROM c0}, 't' ],
);
my @new = grep { /^(function|operator|aggregate) / && !exists $old_members->{$_} } sort keys %$new_members;
for my $id (@new)
{
	my $check = $new_object_checks{$id};
	if (!$check) { fail("$id is new in $current: add a check to \%new_object_checks"); next; }
	my ($sql, $want) = @$check;
	if ($want =~ /^ERROR/)
	{
		my ($ret, $out, $err) = $node->psql('upg', "\\set VERBOSITY sqlstate\n$sql");
		like($err, qr/^(psql:\S+ )?\Q$want\E$/m, "$id is there after the update and stops with $want without Citus");
	}
	else { is($node->safe_psql('upg', $sql), $want, "$id works after the update"); }
}
if (grep { $_ eq 'operator %(spotsig,spotsigs_query)' } @new)
{
	like($node->safe_psql('upg', "SET enable_seqscan = off; EXPLAIN (COSTS OFF) SELECT id FROM docs WHERE sig % spotsig_query($q5, 0.5)"),
		qr/(Index Scan using|Bitmap Index Scan on) docs_sig/, 'the index built at 0.1.0 answers % spotsig_query after the update');
	like($node->safe_psql('upg', "SET enable_seqscan = off; EXPLAIN (COSTS OFF) SELECT id FROM docs ORDER BY sig <-> spotsig_content_query($q5, 'docs', 'sig') LIMIT 5"),
		qr/Index Scan using docs_sig/, 'the index built at 0.1.0 serves ORDER BY <-> a content query after the update');
}
note(@new ? scalar(@new) . " new function(s)/operator(s) since $old_version"
	: "$current adds no function or operator to $old_version");

# A 0.2.0 catalog with this version's library (installed, ALTER EXTENSION not yet run): the
# default join (the content measure) finds no statistics store and computes its template, as
# 0.2.0 did, instead of failing.
$node->safe_psql('postgres', 'CREATE DATABASE at020');
$node->safe_psql('at020', "CREATE EXTENSION spotsigs VERSION '0.2.0'; " . $setup . $first_rows);
is($node->safe_psql('at020', q{SELECT (SELECT count(*) FROM spotsigs_join('docs', 'id', 'sig'))
	= (WITH t AS (SELECT spotsigs_template('docs', 'id', 'sig') AS t)
	   SELECT count(*) FROM docs a, docs b, t WHERE a.id < b.id
	     AND similarity(spotsig_remove(a.sig, t.t), spotsig_remove(b.sig, t.t)) >= 0.4)}), 't',
	'a 0.2.0 catalog with the new library: the default join computes its template');


# Triggers and an index made under 0.2.0, then ALTER EXTENSION UPDATE. 0.2.0's trigger took a
# threshold always (4 to 6 arguments: threshold, then 'best' or 'first', then 'locked' or
# 'unlocked'; the similarity column may be ''), so every such trigger keeps the plain measure at
# its threshold: rows inserted after the update, and after spotsigs_analyze, get exactly the
# flags they got before it (the later rows inserted and rolled back under 0.2.0 first). Only
# what had no explicit threshold may change: a bare % under the default setting (0.2.0's
# default was the number 0.2, the new one 'auto') becomes the content measure once the table is
# analyzed; % and <-> under a numeric setting answer as before, analyzed or not.
$node->safe_psql('postgres', 'CREATE DATABASE u020');
$node->safe_psql('u020', "CREATE EXTENSION spotsigs VERSION '0.2.0'; " . $setup . q{
ALTER TABLE docs ADD COLUMN d1 int, ADD COLUMN s1 float8, ADD COLUMN d2 int, ADD COLUMN s2 float8,
  ADD COLUMN d3 int, ADD COLUMN d4 int, ADD COLUMN s4 numeric(4, 3), ADD COLUMN d5 int, ADD COLUMN s5 float4;
CREATE TRIGGER f1 BEFORE INSERT ON docs FOR EACH ROW EXECUTE FUNCTION spotsigs_flag_duplicates('sig', 'd1', 's1', '0.8', 'best');
CREATE TRIGGER f2 BEFORE INSERT ON docs FOR EACH ROW EXECUTE FUNCTION spotsigs_flag_duplicates('sig', 'd2', 's2', '0.5');
CREATE TRIGGER f3 BEFORE INSERT ON docs FOR EACH ROW EXECUTE FUNCTION spotsigs_flag_duplicates('sig', 'd3', '', '0.6', 'first');
CREATE TRIGGER f4 BEFORE INSERT ON docs FOR EACH ROW EXECUTE FUNCTION spotsigs_flag_duplicates('sig', 'd4', 's4', '0.6', 'best', 'locked');
CREATE TRIGGER f5 BEFORE INSERT ON docs FOR EACH ROW EXECUTE FUNCTION spotsigs_flag_duplicates('sig', 'd5', 's5', '0.4', 'first', 'unlocked');
} . $first_rows);
my $flags5_q = 'SELECT id, duplicate_of, similarity, d1, s1, d2, s2, d3, d4, s4, d5, s5 FROM docs ORDER BY id';
# The best-mode triggers against the plain brute force at their thresholds (ties to the smallest
# id, as the trigger breaks them); a first-mode flag is some earlier row at or above its threshold.
my $brute5_q = q{SELECT count(*) FROM docs d, LATERAL (SELECT
	  (SELECT e.id FROM docs e WHERE e.id < d.id AND similarity(d.sig, e.sig) >= 0.8 ORDER BY similarity(d.sig, e.sig) DESC, e.id LIMIT 1) AS b1,
	  (SELECT e.id FROM docs e WHERE e.id < d.id AND similarity(d.sig, e.sig) >= 0.5 ORDER BY similarity(d.sig, e.sig) DESC, e.id LIMIT 1) AS b2,
	  (SELECT e.id FROM docs e WHERE e.id < d.id AND similarity(d.sig, e.sig) >= 0.6 ORDER BY similarity(d.sig, e.sig) DESC, e.id LIMIT 1) AS b4,
	  (SELECT count(*) FROM docs e WHERE e.id < d.id AND similarity(d.sig, e.sig) >= 0.6) AS n3,
	  (SELECT count(*) FROM docs e WHERE e.id < d.id AND similarity(d.sig, e.sig) >= 0.4) AS n5) b
	WHERE d.d1 IS DISTINCT FROM b.b1 OR d.d2 IS DISTINCT FROM b.b2 OR d.d4 IS DISTINCT FROM b.b4
	   OR (d.d3 IS NULL) <> (b.n3 = 0) OR (d.d5 IS NULL) <> (b.n5 = 0)
	   OR d.s5 <> (SELECT similarity(d.sig, e.sig)::float4 FROM docs e WHERE e.id = d.d5)
	   OR d.d3 >= d.id OR d.d5 >= d.id
	   OR (SELECT similarity(d.sig, e.sig) FROM docs e WHERE e.id = d.d3) < 0.6};
# Rows in id order here: the later rows' ids interleave with the first ones', so the brute force
# above (e.id < d.id) is only checked on the first rows; the later rows are checked by equality.
my $later_ordered = 'INSERT INTO docs (id, body) SELECT n, body FROM src WHERE (n - 1) % 4 >= 2 ORDER BY n';
is($node->safe_psql('u020', $brute5_q), '0', "0.2.0: the five triggers' flags on the first rows are the plain brute force's");
my $index5_q = q{SET enable_seqscan = off; SET spotsigs.similarity_threshold = 0.5;
	SELECT q.id, (SELECT array_agg(b.id ORDER BY b.id) FROM docs b WHERE b.sig % q.sig),
	       (SELECT array_agg(b.id) FROM (SELECT b.id FROM docs b ORDER BY b.sig <-> q.sig, b.id LIMIT 4) b),
	       (SELECT array_agg(round((b.sig <-> q.sig)::numeric, 12)) FROM (SELECT b.sig FROM docs b ORDER BY b.sig <-> q.sig, b.id LIMIT 4) b)
	FROM docs q WHERE q.id % 3 = 0 ORDER BY q.id};
my $bare5_q = q{SET enable_seqscan = off;
	SELECT q.id, (SELECT array_agg(b.id ORDER BY b.id) FROM docs b WHERE b.sig % q.sig),
	       (SELECT array_agg(b.id) FROM (SELECT b.id FROM docs b ORDER BY b.sig <-> q.sig, b.id LIMIT 4) b)
	FROM docs q WHERE q.id % 3 = 0 ORDER BY q.id};
# Each capture starts from the index as a VACUUM leaves it: a 'first' trigger takes the first row
# at or above its threshold in the index's order of exact similarities and unverified bounds,
# which depends on whether the rows sit in the pending list or in a segment (a VACUUM merges
# them), not on the extension's version.
my $later_flags_q = "BEGIN; $later_ordered; $flags5_q; ROLLBACK";
$node->safe_psql('u020', 'VACUUM docs');
my %at020 = (later => $node->safe_psql('u020', $later_flags_q), index => $node->safe_psql('u020', $index5_q),
	bare => $node->safe_psql('u020', $bare5_q));
like($node->safe_psql('u020', 'SELECT count(d1), count(d2), count(d3), count(d4), count(d5) FROM docs'),
	qr/^[1-9]\d*\|[1-9]\d*\|[1-9]\d*\|[1-9]\d*\|[1-9]\d*$/, '0.2.0: each of the five triggers flagged rows');
$node->safe_psql('u020', 'VACUUM docs');
is($node->safe_psql('u020', $later_flags_q), $at020{later}, '0.2.0: the later rows get the same flags again from the same index state');
$node->safe_psql('u020', 'VACUUM docs');
$node->safe_psql('u020', 'ALTER EXTENSION spotsigs UPDATE');
is($node->safe_psql('u020', "SELECT extversion FROM pg_extension WHERE extname = 'spotsigs'"), $current,
	"0.2.0 database updated to $current");
is($node->safe_psql('u020', $index5_q), $at020{index}, 'after the update, the 0.2.0 index answers % and <-> at 0.5 as before');
is($node->safe_psql('u020', $bare5_q), $at020{bare}, 'after the update, before any analyze, a bare % and <-> answer as under 0.2.0');
is($node->safe_psql('u020', $later_flags_q), $at020{later},
	'after the update, the 0.2.0 triggers (0.8 best, 0.5, 0.6 first, 0.6 best locked, 0.4 first unlocked) flag new rows as before');
$node->safe_psql('u020', "SELECT spotsigs_analyze('docs', 'sig')");
is($node->safe_psql('u020', $later_flags_q), $at020{later},
	'after spotsigs_analyze, the 0.2.0 triggers with their thresholds flag new rows as before (the plain measure)');
is($node->safe_psql('u020', $index5_q), $at020{index}, 'after spotsigs_analyze, % and <-> at a numeric setting answer as before');
my $bare_after = $node->safe_psql('u020', $bare5_q);
my $bare_content5_q = q{SET enable_seqscan = off;
	SELECT q.id, (SELECT array_agg(b.id ORDER BY b.id) FROM docs b, spotsigs_stats s
	  WHERE s.relation = 'docs'::regclass AND s.sig_column = 'sig'
	    AND similarity(spotsig_remove(b.sig, s.template), spotsig_remove(q.sig, s.template)) >= 0.4)
	FROM docs q WHERE q.id % 3 = 0 ORDER BY q.id};
is(join("\n", map { join('|', (split /\|/, $_, -1)[0, 1]) } split /\n/, $bare_after),
	$node->safe_psql('u020', $bare_content5_q),
	'after spotsigs_analyze, a bare % under the default setting is the content measure at 0.4 (the one answer that changes)');
$node->safe_psql('u020', $later_ordered);
is($node->safe_psql('u020', $flags5_q), $at020{later} =~ s/^BEGIN\n|\nROLLBACK$//gr,
	'the later rows, committed after the update and the analyze: the flags 0.2.0 gave them');
like($node->safe_psql('u020', $check_q), qr/^ok: /, 'the 0.2.0 index checks ok after the update');
$node->stop;
done_testing();
