# spotsigs index through pg_dump and pg_restore: the index is recreated with its reloptions and
# answers like the original.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('index_dump');
$node->init;
$node->start;
$node->safe_psql('postgres', 'CREATE DATABASE src');
$node->safe_psql('src', q{
CREATE EXTENSION spotsigs;
CREATE FUNCTION mk(n int) RETURNS spotsig LANGUAGE sql IMMUTABLE AS $$
  SELECT ('{' || string_agg(to_hex(((n / 5) * 37 + k) % 50000 + 1) || ':' || (1 + k % 2), ',') || '}')::spotsig
  FROM generate_series(0, 15 + n % 30) k WHERE (k + n) % 7 <> 0 $$;
CREATE TABLE t (id int PRIMARY KEY, sig spotsig);
INSERT INTO t SELECT n, mk(n) FROM generate_series(1, 2000) n;
CREATE INDEX t_sig ON t USING spotsigs (sig) WITH (partition_growth = 25);
INSERT INTO t SELECT n, mk(n) FROM generate_series(2001, 2500) n;
SELECT spotsigs_analyze('t', 'sig');
CREATE TABLE kept AS SELECT id, spotsig_content_query(sig, 't', 'sig') AS q FROM t WHERE id % 97 = 0;
CREATE TABLE gone (id int PRIMARY KEY, sig spotsig);
SELECT spotsigs_analyze('gone', 'sig');
DROP TABLE gone;
});

my $dir = PostgreSQL::Test::Utils::tempdir;
$node->command_ok(['pg_dump', '-Fc', '-f', "$dir/src.dump", '-d', $node->connstr('src')], 'pg_dump');
$node->safe_psql('postgres', 'CREATE DATABASE dst');
# Tables created first in the new database: the restored table gets another OID.
$node->safe_psql('dst', 'CREATE TABLE pad1 (x int); CREATE TABLE pad2 (x int)');
$node->command_ok(['pg_restore', '-d', $node->connstr('dst'), "$dir/src.dump"], 'pg_restore');

like($node->safe_psql('dst', "SELECT indexdef FROM pg_indexes WHERE indexname = 't_sig'"),
	qr/USING spotsigs \(sig\) WITH \(partition_growth='?25'?\)/, 'the index is restored with its reloption');
like($node->safe_psql('dst', "SELECT spotsigs_index_check('t_sig')"), qr/^ok: 1 segments, 2500 rows/, 'the restored index holds every row');
my $q = "SET enable_seqscan = off; SET spotsigs.similarity_threshold = 0.44;
	SELECT q.id, (SELECT array_agg(b.id ORDER BY b.id) FROM t b WHERE b.sig % q.sig),
	       (SELECT array_agg(b.id) FROM (SELECT b.id FROM t b ORDER BY b.sig <-> q.sig, b.id LIMIT 5) b)
	FROM t q WHERE q.id % 19 = 0 ORDER BY q.id";
is($node->safe_psql('dst', $q), $node->safe_psql('src', $q), 'restored index answers like the original');

# The stored template statistics are dumped by table name and restored to the new table's OID;
# those of a dropped table are left out.
my $stats = "SELECT relation, sig_column, id_column, rows_analyzed, template_size, template FROM spotsigs_stats";
is($node->safe_psql('dst', $stats), $node->safe_psql('src', $stats), 'the stored statistics are restored');
isnt($node->safe_psql('dst', "SELECT 't'::regclass::oid"), $node->safe_psql('src', "SELECT 't'::regclass::oid"),
	'the restored table has another OID');
is($node->safe_psql('dst', "SELECT count(*) FROM spotsigs_template_store WHERE relation = 't'::regclass"), '1',
	'the statistics name the restored table');
is($node->safe_psql('dst', "SELECT count(*) FROM spotsigs_template_store"), '1', 'a dropped table\'s statistics are not dumped');

# A content query kept in a table names its template by the table's name and the statistics'
# analyzed_at, both restored: it answers as before; a new analyze replaces the statistics it names.
my $kept = "SET enable_seqscan = off; SELECT k.id, (k.q).template_relation,
	(SELECT array_agg(b.id ORDER BY b.id) FROM t b WHERE b.sig % k.q) FROM kept k ORDER BY k.id";
is($node->safe_psql('dst', $kept), $node->safe_psql('src', $kept), 'a kept content query answers as before after a restore');
$node->safe_psql('dst', "SELECT spotsigs_analyze('t', 'sig')");
my ($rc, $out, $err) = $node->psql('dst', "SELECT count(*) FROM t b, kept k WHERE b.sig % k.q",
	extra_params => [ '-v', 'VERBOSITY=verbose' ]);
like($err, qr/55000: the statistics this content query was made with are no longer stored/,
	'after a new analyze it is refused with 55000');

$node->stop;
done_testing();
