# The SQL join (SpotsigsJoin) and Citus: a join on % that reads a distributed table gives the
# answer of one node over a local copy of the same rows, or exactly what Citus gives with the
# custom scan turned off (its own plan or its own error); never a plan that scans a distributed
# table's empty shell on the coordinator. Skips, saying why, when Citus is not installed.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use lib 'test/t';
use CitusNodes;

my $citus_missing = citus_missing();
plan skip_all => $citus_missing if $citus_missing;

my ($coord, @workers) = citus_nodes(workers => 2, preload => 'citus,spotsigs', max_connections => 60);
my @nodes = ($coord, @workers);

# 3,000 documents of 3 to 42 consecutive values (near duplicates of their neighbours), a local
# copy, a table distributed by id over 4 shards, a local batch and a distributed one.
$coord->safe_psql('postgres', q{
CREATE TABLE near_local (id int PRIMARY KEY, sig spotsig);
INSERT INTO near_local SELECT i, ('{' || (SELECT string_agg(to_hex(i / 5 + j), ',') FROM generate_series(0, 2 + i % 40) j) || '}')::spotsig
FROM generate_series(1, 3000) i;
SET citus.shard_count = 4;
CREATE TABLE near (id int PRIMARY KEY, sig spotsig);
SELECT create_distributed_table('near', 'id');
INSERT INTO near SELECT * FROM near_local;
CREATE TABLE batch_local AS SELECT id + 100000 AS id, sig FROM near_local WHERE id % 10 = 0;
CREATE TABLE batch (id int PRIMARY KEY, sig spotsig);
SELECT create_distributed_table('batch', 'id');
INSERT INTO batch SELECT * FROM batch_local;
ANALYZE near_local, near, batch_local, batch;
});
is($coord->safe_psql('postgres', 'SELECT count(*) FROM near'), '3000', 'rows distributed');

# The joins, written over TABLE (near or near_local) and BATCH (batch or batch_local).
my @joins = (
	'SELECT count(*), sum(hashtext(a.id || \' \' || b.id)) FROM TABLE a JOIN TABLE b ON a.sig % b.sig AND a.id < b.id',
	'SELECT count(*), sum(hashtext(a.id || \' \' || b.id)) FROM TABLE a JOIN TABLE b ON a.sig % spotsig_query(b.sig, 0.7)',
	'SELECT count(*), sum(hashtext(a.id || \' \' || b.id)) FROM TABLE a JOIN TABLE b ON a.id = b.id AND a.sig % b.sig',
	'SELECT count(*), sum(r.id) FROM BATCH r WHERE NOT EXISTS (SELECT 1 FROM TABLE s WHERE s.sig % r.sig AND s.id + 100000 <> r.id)',
	'SELECT count(*), sum(r.id) FROM BATCH r WHERE EXISTS (SELECT 1 FROM TABLE s WHERE s.sig % r.sig)',
	'SELECT count(*), sum(hashtext(r.id || \' \' || s.id)) FROM BATCH r JOIN TABLE s ON r.sig % s.sig',
	'SELECT count(*), sum(hashtext(r.id || \' \' || s.id)) FROM BATCH r JOIN TABLE s ON r.sig % spotsig_query(s.sig, 0.8)',
);
my @forms = (
	[ 'distributed self', 'near', 'batch_local' ],
	[ 'local batch against a distributed table', 'near', 'batch_local' ],
	[ 'distributed batch against a local table', 'near_local', 'batch' ],
	[ 'both distributed', 'near', 'batch' ],
);

# Runs $sql on the coordinator with a session threshold (which the coordinator folds into the
# queries Citus sends the workers; spotsigs is preloaded, as docs/scale-out.md advises, so that a
# session's first query is folded too): its output, or 'ERROR: ' and the message.
sub run {
	my ($sql) = @_;
	my ($ret, $out, $err) = $coord->psql('postgres', "SET spotsigs.similarity_threshold = 0.8; $sql");
	return $ret == 0 ? $out : 'ERROR: ' . ($err =~ /ERROR:\s+(.*)/ ? $1 : $err);
}

for my $j (@joins) {
	my $single = run($j =~ s/TABLE/near_local/gr =~ s/BATCH/batch_local/gr);
	for my $f (@forms) {
		my ($what, $table, $batch) = @$f;
		# The self joins do not read BATCH: one form each is enough.
		next if $j !~ /BATCH/ && $what ne 'distributed self';
		next if $j =~ /BATCH/ && $what eq 'distributed self';
		my $sql = $j =~ s/TABLE/$table/gr =~ s/BATCH/$batch/gr;
		my $on = run($sql);
		my $off = run("SET spotsigs.enable_join = off; $sql");
		note("$what: $sql\n  single node: $single\n  on: $on\n  off: $off");
		ok($on eq $single || $on eq $off, "$what: $sql: one node's answer or Citus's own ($on)");
		unlike($on, qr/^0\|$/, "$what: $sql: not the empty answer of a shell table");
		my $plan = run("EXPLAIN (COSTS OFF) $sql");
		note("plan: $plan");
		unlike($plan, qr/SpotsigsJoin(?:(?!Citus).)*Seq Scan on (?:near|batch)\b(?!_local)/s,
			"$what: the coordinator's plan scans no distributed table's shell in a SpotsigsJoin");
	}
}

$_->stop for @nodes;
done_testing();
