# spotsigs index on a streaming replica: after inserts, pending-list merges, deletes and VACUUM
# rewrites on the primary, the standby's index scans return what the primary's return.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $primary = PostgreSQL::Test::Cluster->new('index_primary');
$primary->init(allows_streaming => 1);
$primary->append_conf('postgresql.conf', "autovacuum = off\n");
$primary->start;
$primary->safe_psql('postgres', q{
CREATE EXTENSION spotsigs;
CREATE FUNCTION mk(n int) RETURNS spotsig LANGUAGE sql IMMUTABLE AS $$
  SELECT ('{' || string_agg(to_hex(((n / 5) * 37 + k) % 50000 + 1) || ':' || (1 + k % 2), ',') || '}')::spotsig
  FROM generate_series(0, 15 + n % 30) k WHERE (k + n) % 7 <> 0 $$;
CREATE TABLE t (id int PRIMARY KEY, sig spotsig);
INSERT INTO t SELECT n, mk(n) FROM generate_series(1, 3000) n;
CREATE INDEX t_sig ON t USING spotsigs (sig) WITH (partition_growth = 15);
});
$primary->backup('b');
my $standby = PostgreSQL::Test::Cluster->new('index_standby');
$standby->init_from_backup($primary, 'b', has_streaming => 1);
$standby->start;

# index-only answers: every 11th row's matches at tau, and the top 10 of a few rows
sub answers {
	my ($n, $tau) = @_;
	return $n->safe_psql('postgres', "SET enable_seqscan = off; SET spotsigs.similarity_threshold = $tau;
	  SELECT q.id, (SELECT array_agg(b.id ORDER BY b.id) FROM t b WHERE b.sig % q.sig),
	         (SELECT array_agg(round(d::numeric, 6)) FROM (SELECT b.sig <-> q.sig AS d FROM t b ORDER BY b.sig <-> q.sig LIMIT 10) s)
	  FROM t q WHERE q.id % 11 = 0 ORDER BY q.id");
}

# the load on the primary
$primary->safe_psql('postgres', 'INSERT INTO t SELECT n, mk(n) FROM generate_series(3001, 4500) n');
$primary->wait_for_catchup($standby, 'replay', $primary->lsn('insert'));
is(answers($standby, 0.44), answers($primary, 0.44), 'standby answers like the primary with a pending list');
$primary->safe_psql('postgres', 'VACUUM t');
$primary->safe_psql('postgres', 'DELETE FROM t WHERE id % 4 = 0');
$primary->safe_psql('postgres', 'VACUUM t');
$primary->safe_psql('postgres', 'INSERT INTO t SELECT n, mk(n) FROM generate_series(4501, 5000) n');
$primary->wait_for_catchup($standby, 'replay', $primary->lsn('insert'));

is(answers($standby, 0.44), answers($primary, 0.44), 'standby answers like the primary at tau 0.44 after VACUUM');
is(answers($standby, 0.8), answers($primary, 0.8), 'and at tau 0.8');
is(answers($standby, 0.8), do {
	my $s = $primary->safe_psql('postgres', "SET enable_indexscan = off; SET enable_bitmapscan = off; SET spotsigs.similarity_threshold = 0.8;
	  SELECT q.id, (SELECT array_agg(b.id ORDER BY b.id) FROM t b WHERE b.sig % q.sig),
	         (SELECT array_agg(round(d::numeric, 6)) FROM (SELECT b.sig <-> q.sig AS d FROM t b ORDER BY b.sig <-> q.sig LIMIT 10) s)
	  FROM t q WHERE q.id % 11 = 0 ORDER BY q.id");
	$s }, 'which is what a sequential scan returns');
like($standby->safe_psql('postgres', "SELECT spotsigs_index_check('t_sig')"), qr/^ok/, 'index check passes on the standby');
like($standby->safe_psql('postgres', "SET enable_seqscan = off; EXPLAIN (COSTS OFF) SELECT id FROM t WHERE sig % mk(5)"),
	qr/Index Scan (using|on) t_sig/, 'the standby uses the index');

$standby->stop;
$primary->stop;
done_testing();
