# spotsigs index: crash recovery. An insert/VACUUM load, an immediate stop, a restart: the index
# passes spotsigs_index_check and answers exactly like a sequential scan. Unlogged tables come back
# empty with a valid index. REINDEX (also CONCURRENTLY) rebuilds an equal index.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('index_crash');
$node->init;
$node->append_conf('postgresql.conf', "autovacuum = off\n");
$node->start;

# mk(n): a deterministic spotsig; rows n and n+1..n+4 are near duplicates of each other.
my $setup = q{
CREATE EXTENSION spotsigs;
CREATE FUNCTION mk(n int) RETURNS spotsig LANGUAGE sql IMMUTABLE AS $$
  SELECT ('{' || string_agg(to_hex(((n / 5) * 37 + k) % 50000 + 1) || ':' || (1 + k % 2), ',') || '}')::spotsig
  FROM generate_series(0, 15 + n % 30) k WHERE (k + n) % 7 <> 0 $$;
CREATE TABLE t (id int PRIMARY KEY, sig spotsig);
INSERT INTO t SELECT n, mk(n) FROM generate_series(1, 2000) n;
CREATE INDEX t_sig ON t USING spotsigs (sig);
CREATE UNLOGGED TABLE u (id int PRIMARY KEY, sig spotsig);
CREATE INDEX u_sig ON u USING spotsigs (sig);
INSERT INTO u SELECT n, mk(n) FROM generate_series(1, 500) n;
};
$node->safe_psql('postgres', $setup);

# results(use_index, tau): for every 13th row, the ids it matches.
sub results {
	my ($n, $use_index, $tau) = @_;
	my $set = $use_index ? 'SET enable_seqscan = off;' : 'SET enable_indexscan = off; SET enable_bitmapscan = off;';
	return $n->safe_psql('postgres', "$set SET spotsigs.similarity_threshold = $tau;
	  SELECT q.id, (SELECT array_agg(b.id ORDER BY b.id) FROM t b WHERE b.sig % q.sig) FROM t q WHERE q.id % 13 = 0 ORDER BY q.id");
}

# the load: inserts into the pending list, a merge, deletes and a full rewrite, more inserts
$node->safe_psql('postgres', 'INSERT INTO t SELECT n, mk(n) FROM generate_series(2001, 5000) n');
$node->safe_psql('postgres', 'VACUUM t');
$node->safe_psql('postgres', 'DELETE FROM t WHERE id % 9 = 0');
$node->safe_psql('postgres', 'VACUUM t');
for my $b (0 .. 9) {
	my ($lo, $hi) = (5001 + 100 * $b, 5100 + 100 * $b);
	$node->safe_psql('postgres', "INSERT INTO t SELECT n, mk(n) FROM generate_series($lo, $hi) n");
}
# an uncommitted transaction in flight at the crash
my $bg = $node->background_psql('postgres');
$bg->query_safe('BEGIN; INSERT INTO t SELECT n, mk(n) FROM generate_series(7001, 7500) n;');

my $before44 = results($node, 0, 0.44);
my $before80 = results($node, 0, 0.8);
$node->stop('immediate');
eval { $bg->quit };
$node->start;

like($node->safe_psql('postgres', "SELECT spotsigs_index_check('t_sig')"), qr/^ok/, 'index check passes after crash recovery');
is(results($node, 1, 0.44), $before44, 'index results at tau 0.44 equal the sequential scan before the crash');
is(results($node, 0, 0.44), $before44, 'sequential results unchanged by recovery');
is(results($node, 1, 0.8), $before80, 'index results at tau 0.8 equal too');
is($node->safe_psql('postgres', 'SET enable_seqscan = off; SELECT count(*), count(DISTINCT id) FROM (SELECT id FROM t ORDER BY sig <-> mk(1)) s'),
	$node->safe_psql('postgres', 'SELECT count(*), count(*) FROM t'), 'an ordered index scan returns every row once');

# unlogged: reset to empty with a valid index, usable again
like($node->safe_psql('postgres', "SELECT spotsigs_index_check('u_sig')"), qr/^ok: 0 segments, 0 rows/, 'unlogged index is empty and valid after the crash');
$node->safe_psql('postgres', 'INSERT INTO u SELECT n, mk(n) FROM generate_series(1, 300) n');
is($node->safe_psql('postgres', "SET enable_seqscan = off; SELECT count(*) FROM u WHERE sig % mk(10)"),
	$node->safe_psql('postgres', "SET enable_indexscan = off; SET enable_bitmapscan = off; SELECT count(*) FROM u WHERE sig % mk(10)"),
	'the unlogged index answers after refilling');

# REINDEX and REINDEX CONCURRENTLY rebuild an equal index
$node->safe_psql('postgres', 'REINDEX INDEX t_sig');
is(results($node, 1, 0.44), $before44, 'REINDEX gives the same results');
$node->safe_psql('postgres', 'REINDEX INDEX CONCURRENTLY t_sig');
is(results($node, 1, 0.44), $before44, 'REINDEX CONCURRENTLY gives the same results');
like($node->safe_psql('postgres', "SELECT spotsigs_index_check('t_sig')"), qr/^ok/, 'index check passes after REINDEX');

$node->stop;
done_testing();
