# spotsigs on Citus: a coordinator and three workers on localhost, newsframes-dev distributed by
# id over six shards next to a plain local copy of the same rows on the coordinator. Every
# distributed answer must equal the single-node answer over the local copy: % at three
# thresholds (spotsig_query, SET LOCAL propagated by Citus, and a session SET), the top 10 by <->, the join,
# the clusters and the batch-against-archive join (a local batch, and a distributed one) at tau
# 0.3, 0.5 and 0.9, each worker's share of the matching in its own log, the ingest path against
# the single-node trigger, and privileges and row-level security as on one node.
# Skips, saying why, when Citus is not installed (test/citus/build-citus installs it; test/run-all
# calls it) or the data set is missing.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use lib 'test/t';
use CitusNodes;

my $citus_missing = citus_missing();
plan skip_all => $citus_missing if $citus_missing;
my $data = $ENV{SPOTSIGS_NEWSFRAMES} // '';
plan skip_all => "newsframes-dev not found (set SPOTSIGS_NEWSFRAMES to its pages.tsv.gz)"
  unless $data ne '' && -r $data;

# ---- the cluster
my ($coord, @workers) = citus_nodes();
my @nodes = ($coord, @workers);
is($workers[$_]->safe_psql('postgres', "SELECT extversion FROM pg_extension WHERE extname = 'spotsigs'"),
	$coord->safe_psql('postgres', "SELECT extversion FROM pg_extension WHERE extname = 'spotsigs'"),
	"spotsigs propagated to worker " . ($_ + 1)) for 0 .. 2;

# ---- the data: a local copy (the single-node reference) and a table distributed by id
$coord->safe_psql('postgres', qq{
CREATE TABLE pages_local (id int PRIMARY KEY, cluster int, host text, kind text, html text, sig spotsig);
COPY pages_local (id, cluster, host, kind, html) FROM PROGRAM 'zcat $data';
UPDATE pages_local SET sig = spotsigs(html);
CREATE INDEX ON pages_local USING spotsigs (sig);
SET citus.shard_count = 6;
CREATE TABLE pages (id int PRIMARY KEY, sig spotsig);
SELECT create_distributed_table('pages', 'id');
INSERT INTO pages SELECT id, sig FROM pages_local;
CREATE INDEX ON pages USING spotsigs (sig);
ANALYZE pages_local;
ANALYZE pages;
});
is($coord->safe_psql('postgres', 'SELECT count(*) FROM pages'), '1353', 'all rows distributed');
is($coord->safe_psql('postgres', q{SELECT count(DISTINCT nodeport) || ' ' || count(*) FROM citus_shards WHERE table_name = 'pages'::regclass}),
	'3 6', 'six shards on three workers');

# Query rows: every 137th page, with their signatures as literals for the statements below.
my @queries = split /\n/, $coord->safe_psql('postgres',
	q{SELECT id || '|' || sig::text FROM pages_local WHERE id % 137 = 1 ORDER BY id});
cmp_ok(scalar(@queries), '>=', 9, 'query rows');

# The result of $sql (with QUERY replaced by a literal spotsig) for every query row, on the
# distributed table and on the local copy.
sub both {
	my ($sql, $prefix) = @_;
	$prefix //= '';
	my (@dist, @local);
	for my $q (@queries) {
		my ($id, $sig) = split /\|/, $q, 2;
		(my $s = $sql) =~ s/QUERY/'$sig'::spotsig/g;
		push @dist, "$id: " . $coord->safe_psql('postgres', $prefix . ($s =~ s/TABLE/pages/gr));
		push @local, "$id: " . $coord->safe_psql('postgres', $prefix . ($s =~ s/TABLE/pages_local/gr));
	}
	return (join("\n", @dist), join("\n", @local));
}

# The tasks each worker logged while $sql ran on the coordinator (its output returned first):
# per worker, a list of {rows, shards, fetched, bytes, remote_shards, candidates, pairs}.
my $task_re = qr/spotsigs_citus_task: (\d+) local rows in (\d+) shards, (\d+) rows \((\d+) bytes\) fetched from (\d+) remote shards, (\d+) candidates, (\d+) pairs \((\d+) bytes returned\)/;
sub worker_tasks {
	my ($sql) = @_;
	my @marks = map { -s $_->logfile } @workers;
	my $out = $coord->safe_psql('postgres', $sql);
	my @per_worker;
	for my $i (0 .. $#workers) {
		my $log = substr(slurp_file($workers[$i]->logfile), $marks[$i]);
		my @tasks;
		while ($log =~ /$task_re/g) {
			push @tasks, { rows => $1, shards => $2, fetched => $3, bytes => $4, remote_shards => $5,
				candidates => $6, pairs => $7 };
		}
		push @per_worker, \@tasks;
	}
	return ($out, @per_worker);
}

# ---- % at three thresholds
for my $tau (qw(0.3 0.5 0.9)) {
	my ($d, $l) = both("SELECT count(*) || ' ' || coalesce(string_agg(id::text, ',' ORDER BY id), '') FROM TABLE "
		. "WHERE sig % spotsig_query(QUERY, $tau)");
	is($d, $l, "sig % spotsig_query(q, $tau): distributed = single node");
	unlike($l, qr/^\d+: 0 /m, "every query finds itself at $tau");
	# The session setting travels only as SET LOCAL, with citus.propagate_set_commands = 'local'.
	($d, $l) = both("SELECT count(*) || ' ' || coalesce(string_agg(id::text, ',' ORDER BY id), '') FROM TABLE "
		. "WHERE sig % QUERY; COMMIT", "BEGIN; SET LOCAL citus.propagate_set_commands = 'local'; "
		. "SET LOCAL spotsigs.similarity_threshold = $tau; ");
	is($d, $l, "SET LOCAL spotsigs.similarity_threshold = $tau propagated: distributed = single node");
}
# A plain SET stays on the coordinator, which folds the threshold into the query it sends
# (test/t/042_citus_threshold.pl checks every way of setting it).
my ($plain_d, $plain_l) = both('SELECT count(*) FROM TABLE WHERE sig % QUERY',
	'SET spotsigs.similarity_threshold = 0.9; ');
is($plain_d, $plain_l, 'a session SET: distributed = single node');

# ---- top 10 by <->: Citus pushes ORDER BY ... LIMIT to each shard and merges their top 10s
{
	my ($d, $l) = both("SELECT string_agg(id || ':' || d, ',' ORDER BY d, id) FROM "
		. "(SELECT id, sig <-> QUERY AS d FROM TABLE ORDER BY sig <-> QUERY, id LIMIT 10) t");
	is($d, $l, 'top 10 by <-> (ties by id): distributed = single node');
	# Without a tie-break the order among equal distances is unspecified; the distances are not.
	($d, $l) = both("SELECT string_agg(d::text, ',' ORDER BY d) FROM "
		. "(SELECT sig <-> QUERY AS d FROM TABLE ORDER BY sig <-> QUERY LIMIT 10) t");
	is($d, $l, 'top 10 distances by <-> without a tie-break: distributed = single node');
	# Citus pushes the LIMIT into every shard's query and merges their top 10s.
	my ($id, $sig) = split /\|/, $queries[0], 2;
	my $plan = $coord->safe_psql('postgres',
		"EXPLAIN (COSTS OFF) SELECT id FROM pages ORDER BY sig <-> '$sig'::spotsig, id LIMIT 10");
	like($plan, qr/Custom Scan \(Citus Adaptive\).*Task Count: 6.*->\s+Task\b.*->\s+Limit/s,
		'the LIMIT runs on each shard');
}

# ---- the joins, on the workers
# A batch of new pages for the batch-against-archive join: copies of every 7th page under new ids
# (each pairs with its original and with the original's near duplicates), a plain local table.
$coord->safe_psql('postgres', q{
CREATE TABLE batch AS SELECT id + 100000 AS id, sig FROM pages_local WHERE id % 7 = 0;
SET citus.shard_count = 6;
CREATE TABLE batch_dist (bid bigint PRIMARY KEY, bsig spotsig);
SELECT create_distributed_table('batch_dist', 'bid');
INSERT INTO batch_dist SELECT id, sig FROM batch;
});
my $pairs = q{SELECT count(*) || ' ' || md5(coalesce(string_agg(a || ',' || b || ',' || s, ';' ORDER BY a, b), ''))};
for my $tau (qw(0.3 0.5 0.9)) {
	my $one = sub {
		my ($sql) = @_;
		return ($coord->safe_psql('postgres', $sql =~ s/TABLE/pages/gr),
			$coord->safe_psql('postgres', $sql =~ s/TABLE/pages_local/gr));
	};
	my ($d, $l) = $one->("$pairs FROM spotsigs_join('TABLE', 'id', 'sig', $tau) j(a, b, s)");
	is($d, $l, "spotsigs_join at $tau: distributed = single node ($l)");
	($d, $l) = $one->("SELECT count(*) || ' ' || count(DISTINCT c) || ' ' || md5(string_agg(i || ',' || c, ';' ORDER BY i)) "
		. "FROM spotsigs_clusters('TABLE', 'id', 'sig', $tau) k(i, c)");
	is($d, $l, "spotsigs_clusters at $tau: distributed = single node ($l)");
	($d, $l) = $one->("$pairs FROM spotsigs_join_rs('batch', 'id', 'sig', 'TABLE', 'id', 'sig', $tau) j(a, b, s)");
	is($d, $l, "spotsigs_join_rs(batch, archive) at $tau: distributed = single node ($l)");
	($d, $l) = $one->("$pairs FROM spotsigs_join_rs('TABLE', 'id', 'sig', 'batch', 'id', 'sig', $tau) j(a, b, s)");
	is($d, $l, "spotsigs_join_rs(archive, batch) at $tau: distributed = single node");
	# Both sides distributed: the smaller side (the batch) travels to the nodes holding the other,
	# whichever argument it is.
	my $want = $l;
	is($coord->safe_psql('postgres', "$pairs FROM spotsigs_join_rs('batch_dist', 'bid', 'bsig', 'pages', 'id', 'sig', $tau) j(b, a, s)"),
		$coord->safe_psql('postgres', "$pairs FROM spotsigs_join_rs('batch', 'id', 'sig', 'pages_local', 'id', 'sig', $tau) j(b, a, s)"),
		"spotsigs_join_rs(distributed batch, archive) at $tau: distributed = single node");
	is($coord->safe_psql('postgres', "$pairs FROM spotsigs_join_rs('pages', 'id', 'sig', 'batch_dist', 'bid', 'bsig', $tau) j(a, b, s)"),
		$want, "spotsigs_join_rs(archive, distributed batch) at $tau: distributed = single node");
}

# The length-range split (spotsigs_citus_ranges): with more than 3 tasks when its ranges and
# borders hold under (W - 1) / 2 times the table (at 0.9 on this set with 5 tasks, under two
# tables; not at 0.5, wider borders); with 3 tasks or fewer from 0.8 up (at 0.8 and 0.9 with 3,
# not at 0.79 nor 0.5).
is($coord->safe_psql('postgres', q{
	SELECT (spotsigs_citus_ranges('pages', 'id', 'sig', 0.9, 5) IS NOT NULL) || ' '
	    || (spotsigs_citus_ranges('pages', 'id', 'sig', 0.5, 5) IS NOT NULL) || ' '
	    || (spotsigs_citus_ranges('pages', 'id', 'sig', 0.9, 3) IS NOT NULL) || ' '
	    || (spotsigs_citus_ranges('pages', 'id', 'sig', 0.8, 3) IS NOT NULL) || ' '
	    || (spotsigs_citus_ranges('pages', 'id', 'sig', 0.79, 3) IS NOT NULL) || ' '
	    || (spotsigs_citus_ranges('pages', 'id', 'sig', 0.5, 3) IS NOT NULL)}),
	'true false true true false false', 'the length split: at 0.9 with 5 tasks, not at 0.5; with 3 from 0.8 up');
# Forced here (spotsigs.citus_split = length; the automatic choice too at 0.9): the coordinator cuts the length axis, and
# pairs whose longer row's length is exactly a range's lower end, or whose shorter row's length is
# exactly on a border, are among the pairs, which equal one node's.
my $force_length = 'SET spotsigs.citus_split = length;';
for my $tau (qw(0.9)) {
	my $mark = -s $coord->logfile;
	$coord->safe_psql('postgres', "$force_length SELECT count(*) FROM spotsigs_join('pages', 'id', 'sig', $tau)");
	my $log = substr(slurp_file($coord->logfile), $mark);
	like($log, qr/spotsigs_citus_join: length ranges from \[0, \d+, \d+\]/, "at $tau the join is split by length into three ranges");
	my ($los, $borders) = $log =~ /length ranges from \[([\d, ]+)\] \(borders \[([\d, ]+)\]\)/;
	my $on = $coord->safe_psql('postgres', qq{
		SELECT count(*) FILTER (WHERE greatest(length(a.sig), length(b.sig)) = ANY('{$los}'::int[])) || ' '
		    || count(*) FILTER (WHERE least(length(a.sig), length(b.sig)) = ANY('{$borders}'::int[]) AND least(length(a.sig), length(b.sig)) > 0)
		  FROM spotsigs_join('pages_local', 'id', 'sig', $tau) j JOIN pages_local a ON a.id = j.id1 JOIN pages_local b ON b.id = j.id2});
	my ($at_lo, $at_border) = split / /, $on;
	cmp_ok($at_lo + $at_border, '>', 0, "at $tau pairs sit on the range ends or borders ($on)");
	is($coord->safe_psql('postgres', "$force_length $pairs FROM spotsigs_join('pages', 'id', 'sig', $tau) j(a, b, s)"),
		$coord->safe_psql('postgres', "$pairs FROM spotsigs_join('pages_local', 'id', 'sig', $tau) j(a, b, s)"),
		"spotsigs_join at $tau split by length: distributed = single node");
	# Each worker ran one task of one range: no shard read, its range's rows and border fetched or
	# exported here; together they hold the table and less than the pair split's two tables.
	my ($out, @tasks) = worker_tasks("$force_length SELECT count(*) FROM spotsigs_join('pages', 'id', 'sig', $tau)");
	my ($rows, $sum) = (0, 0);
	for my $i (0 .. 2) {
		is(join(' ', map { $_->{shards} } @{ $tasks[$i] }), '0', 'worker ' . ($i + 1) . ' ran one range task, reading no shard');
		$rows += $_->{rows} + $_->{fetched} for @{ $tasks[$i] };
		$sum += $_->{pairs} for @{ $tasks[$i] };
	}
	cmp_ok($rows, '>=', 1353, "at $tau the ranges and their borders hold the table's rows ($rows)");
	cmp_ok($rows, '<', 2 * 1353, "at $tau fewer than the pair split's two tables");
	is($sum, $out, "at $tau the range tasks' pairs add up to the join's ($out)");
}
for my $case ([ 0.9, 'length' ], [ 0.5, 'pair' ]) {
	my ($tau, $split) = @$case;
	my $mark = -s $coord->logfile;
	$coord->safe_psql('postgres', "SELECT count(*) FROM spotsigs_join('pages', 'id', 'sig', $tau)");
	my $log = substr(slurp_file($coord->logfile), $mark);
	is($log =~ /length ranges/ ? 'length' : 'pair', $split, "at $tau with 3 workers the $split split");
}
{
	my $mark = -s $coord->logfile;
	is($coord->safe_psql('postgres', "$pairs FROM spotsigs_join('pages', 'id', 'sig', 0.05) j(a, b, s)"),
		$coord->safe_psql('postgres', "$pairs FROM spotsigs_join('pages_local', 'id', 'sig', 0.05) j(a, b, s)"),
		'spotsigs_join at 0.05: distributed = single node');
	unlike(substr(slurp_file($coord->logfile), $mark), qr/length ranges/, 'at 0.05 the pair split');
}

# spotsigs.citus_split (superuser, for tests and benchmarks) runs either split: the pair split at
# 0.9 and the length split at 0.5 (each where the other would be taken); the pairs are one node's either
# way. Another role may not set it (once the library is loaded; before, PostgreSQL
# drops its placeholder value with a WARNING when the library loads).
for my $case (['pairs', '0.9'], ['length', '0.5']) {
	my ($split, $tau) = @$case;
	my $mark = -s $coord->logfile;
	is($coord->safe_psql('postgres', "SET spotsigs.citus_split = $split; $pairs FROM spotsigs_join('pages', 'id', 'sig', $tau) j(a, b, s)"),
		$coord->safe_psql('postgres', "$pairs FROM spotsigs_join('pages_local', 'id', 'sig', $tau) j(a, b, s)"),
		"spotsigs.citus_split = $split at $tau: distributed = single node");
	my $log = substr(slurp_file($coord->logfile), $mark);
	if ($split eq 'length') {
		like($log, qr/spotsigs_citus_join: length ranges from \[0, \d+, \d+\]/, "spotsigs.citus_split = length at $tau: the length split");
	} else {
		unlike($log, qr/length ranges/, "spotsigs.citus_split = pairs at $tau: the pair split");
		like($log, qr/spotsigs_citus_join: the template and the rows of 3 nodes exported/, "spotsigs.citus_split = pairs at $tau: the rows exported for the pair split");
	}
}
{
	my ($rc, $out, $err) = $coord->psql('postgres',
		"CREATE ROLE split_tester; SELECT spotsigs_threshold(0.5); SET ROLE split_tester; SET spotsigs.citus_split = pairs", extra_params => ['-v', 'VERBOSITY=verbose']);
	like($err, qr/42501: permission denied to set parameter "spotsigs.citus_split"/, 'spotsigs.citus_split: 42501 for a role that is not superuser');
	$coord->safe_psql('postgres', 'DROP ROLE split_tester');
}

# A task's matching reads its fetched rows through read_intermediate_results, which Citus
# materializes in a tuplestore of work_mem: spotsigs_citus_match raises work_mem for its call only
# (so the rows stay in memory), and the transaction that goes on after it has its own work_mem
# back. Here on the coordinator, with an intermediate result of some rows of the local copy: the
# R-S pairs equal spotsigs_join_rs over the same rows.
my $fetched = $coord->safe_psql('postgres', q{
	BEGIN;
	SET LOCAL work_mem = '1MB';
	SELECT pg_catalog.create_intermediate_result('task_other', 'SELECT id::bigint, sig FROM pages_local WHERE id % 3 = 0');
	CREATE TEMP TABLE task_other AS SELECT id, sig FROM pages_local WHERE id % 3 = 0;
	SELECT (SELECT count(*) FROM spotsigs_citus_match('{pages_local}', 'id', 'sig', '{task_other}', 0.5, 1, NULL, NULL, 'rs'))
	       || ' ' || (SELECT count(*) FROM (SELECT * FROM spotsigs_citus_match('{pages_local}', 'id', 'sig', '{task_other}', 0.5, 1, NULL, NULL, 'rs')
	                                        EXCEPT SELECT * FROM spotsigs_join_rs('pages_local', 'id', 'sig', 'task_other', 'id', 'sig', 0.5, measure => 'jaccard')) x)
	       || ' ' || current_setting('work_mem');
	COMMIT;});
is((split /\n/, $fetched)[-1],
	$coord->safe_psql('postgres', q{SELECT count(*) FROM spotsigs_join_rs('pages_local', 'id', 'sig', 'pages_local', 'id', 'sig', 0.5, measure => 'jaccard') j
	  WHERE j.s_id % 3 = 0}) . ' 0 1MB',
	'a task\'s matching of fetched rows: the R-S pairs of one node, and work_mem back after it');

# The pair split's modes, whose matcher is told which rows are the task's own and writes no
# other pair down: 'local+cross' the pairs with an own row, 'cross' those of an own row and a
# fetched one. Own rows: a table of the local copy's rows with id % 3 <> 0; fetched: an
# intermediate result of the others. Each equals one node's self-join of all the rows, its pairs
# filtered the same way (pairs and similarities, both ways round).
foreach my $mode ('local+cross', 'cross') {
	my $keep = $mode eq 'cross' ? '(a % 3 = 0) <> (b % 3 = 0)' : 'NOT (a % 3 = 0 AND b % 3 = 0)';
	my $res = $coord->safe_psql('postgres', qq{
		BEGIN;
		SELECT pg_catalog.create_intermediate_result('task_fetched', 'SELECT id::bigint, sig FROM pages_local WHERE id % 3 = 0');
		CREATE TEMP TABLE task_own AS SELECT id, sig FROM pages_local WHERE id % 3 <> 0;
		CREATE TEMP TABLE got AS SELECT * FROM spotsigs_citus_match('{task_own}', 'id', 'sig', '{task_fetched}', 0.5, 2, NULL, NULL, '$mode') m(a, b, s);
		CREATE TEMP TABLE want AS SELECT * FROM spotsigs_join('pages_local', 'id', 'sig', 0.5) j(a, b, s) WHERE $keep;
		SELECT (SELECT count(*) FROM got) || ' ' || (SELECT count(*) FROM want) || ' '
		       || (SELECT count(*) FROM (SELECT * FROM got EXCEPT SELECT * FROM want) x) || ' '
		       || (SELECT count(*) FROM (SELECT * FROM want EXCEPT SELECT * FROM got) x);
		COMMIT;});
	my ($got, $want, $extra, $missing) = split / /, (split /\n/, $res)[-1];
	cmp_ok($want, '>', 0, "a task's '$mode' pairs: one node has some");
	is("$got $extra $missing", "$want 0 0", "a task's '$mode' pairs: one node's pairs with an own row" . ($mode eq 'cross' ? ' and a fetched one' : ''));
}

# Each worker did its share of the matching, as its own log shows (the coordinator logs no task):
# one task per worker, which paired the rows of its two shards and found pairs among candidates
# it verified; the workers' rows add up to the table and their pairs to the single-node join's.
{
	my ($out, @tasks) = worker_tasks("SELECT count(*) FROM spotsigs_join('pages', 'id', 'sig', 0.5)");
	my $single = $coord->safe_psql('postgres', "SELECT count(*) FROM spotsigs_join('pages_local', 'id', 'sig', 0.5)");
	my ($rows, $pairs) = (0, 0);
	for my $i (0 .. 2) {
		my $w = 'worker ' . ($i + 1);
		is(scalar(@{ $tasks[$i] }), 1, "$w ran one task for the join");
		my $t = $tasks[$i][0];
		is($t->{shards}, 2, "$w paired the rows of its two shards");
		cmp_ok($t->{pairs}, '>', 0, "$w found pairs ($t->{pairs})");
		cmp_ok($t->{candidates}, '>=', $t->{pairs}, "$w verified $t->{candidates} candidates for them");
		$rows += $t->{rows};
		$pairs += $t->{pairs};
	}
	is($rows, 1353, "the workers' own rows are the table's");
	is($pairs, $out, "the workers' pairs add up to the join's ($out)");
	is($out, $single, 'which are the single-node pairs');
	my ($rs_out, @rs_tasks) = worker_tasks("SELECT count(*) FROM spotsigs_join_rs('batch', 'id', 'sig', 'pages', 'id', 'sig', 0.5)");
	is(join(' ', map { scalar(@$_) } @rs_tasks), '1 1 1', 'spotsigs_join_rs ran one task on each worker');
	my $rs_pairs = 0;
	$rs_pairs += $_->[0]{pairs} for @rs_tasks;
	is($rs_pairs, $rs_out, "their pairs add up to the batch join's ($rs_out)");
	my $batch_rows = $coord->safe_psql('postgres', 'SELECT count(*) FROM batch');
	is($_->[0]{fetched}, $batch_rows, "each task received the batch ($batch_rows rows)") for @rs_tasks;
	# Both distributed, in either order: each worker's task pairs its archive rows with the whole
	# batch, fetched from the six shards of the batch.
	for my $args ("'batch_dist', 'bid', 'bsig', 'pages', 'id', 'sig'", "'pages', 'id', 'sig', 'batch_dist', 'bid', 'bsig'") {
		my ($n, @t) = worker_tasks("SELECT count(*) FROM spotsigs_join_rs($args, 0.5)");
		is(join(' ', map { scalar(@$_) . ':' . $_->[0]{fetched} . ':' . $_->[0]{remote_shards} } @t),
			join(' ', ("1:$batch_rows:6") x 3), "spotsigs_join_rs($args): each worker fetched the batch's six shards");
		my $sum = 0;
		$sum += $_->[0]{pairs} for @t;
		is($sum, $rs_out, "spotsigs_join_rs($args): the workers' pairs add up to the batch join's");
	}
}

# The content measure: the template of the whole table (computed from the rows the shards hold),
# sent to the tasks; the default call and measure 'content' with a threshold answer as one node
# (test/t/043_citus_content.pl checks both dev sets, stored statistics, clusters and batches).
for my $call ("$pairs FROM spotsigs_join('TABLE', 'id', 'sig') j(a, b, s)",
	"SELECT count(*) || ' ' || md5(string_agg(i || ',' || c, ';' ORDER BY i)) FROM spotsigs_clusters('TABLE', 'id', 'sig') k(i, c)",
	"$pairs FROM spotsigs_join('TABLE', 'id', 'sig', 0.5, measure => 'content') j(a, b, s)") {
	is($coord->safe_psql('postgres', $call =~ s/TABLE/pages/gr), $coord->safe_psql('postgres', $call =~ s/TABLE/pages_local/gr),
		"the content measure on the distributed table: distributed = single node ($call)");
}

# ---- ingest: spotsigs_flag_batch on the distributed table flags what the trigger flags on one node
# Pages arrive in two batches (ids up to 900, then the rest), each in ascending id order.
$coord->safe_psql('postgres', q{
CREATE TABLE ingest_local (id int PRIMARY KEY, sig spotsig, duplicate_of int, similarity float8);
CREATE INDEX ON ingest_local USING spotsigs (sig);
CREATE TRIGGER dedup BEFORE INSERT ON ingest_local FOR EACH ROW
  EXECUTE FUNCTION spotsigs_flag_duplicates('sig', 'duplicate_of', 'similarity', '0.5', 'best');
INSERT INTO ingest_local (id, sig) SELECT id, sig FROM pages_local WHERE id <= 900 ORDER BY id;
INSERT INTO ingest_local (id, sig) SELECT id, sig FROM pages_local WHERE id > 900 ORDER BY id;
CREATE TABLE ingest (id int PRIMARY KEY, sig spotsig, duplicate_of int, similarity float8);
SELECT create_distributed_table('ingest', 'id');
});
my $flagged = $coord->safe_psql('postgres', q{
INSERT INTO ingest (id, sig) SELECT id, sig FROM pages_local WHERE id <= 900;
SELECT spotsigs_flag_batch('ingest', 'id', 'sig', 'duplicate_of', 'similarity', 0.5, 1);
INSERT INTO ingest (id, sig) SELECT id, sig FROM pages_local WHERE id > 900;
SELECT spotsigs_flag_batch('ingest', 'id', 'sig', 'duplicate_of', 'similarity', 0.5, 901);
});
my $flags = q{SELECT count(duplicate_of) || ' ' || md5(string_agg(id || ',' || coalesce(duplicate_of::text, '-') || ',' || coalesce(similarity::text, '-'), ';' ORDER BY id)) FROM };
my $want = $coord->safe_psql('postgres', $flags . 'ingest_local');
is($coord->safe_psql('postgres', $flags . 'ingest'), $want, "spotsigs_flag_batch on the distributed table = the trigger on one node ($want)");
is(join(' ', split /\n/, $flagged), join(' ', split /\n/, $coord->safe_psql('postgres',
	'SELECT count(duplicate_of) FILTER (WHERE id <= 900), count(duplicate_of) FILTER (WHERE id > 900) FROM ingest_local') =~ s/\|/ /r),
	'spotsigs_flag_batch returns the rows it flagged per batch');

# ---- privileges and row-level security, as on one node
# A role without SELECT on the table gets 42501 from every join, distributed or not; with SELECT
# it gets the owner's answers; with a row-level security policy on both copies of the table, it
# gets the single-node answers over the rows the policy shows it (the policy reaches the shards,
# whose rows the tasks read as the caller), not the whole table's.
{
	$coord->safe_psql('postgres', q{
CREATE ROLE reader LOGIN;
GRANT SELECT ON batch, batch_dist TO reader;
});
	my $as_reader = sub {
		my ($sql) = @_;
		my ($ret, $out, $err) = $coord->psql('postgres', "SET ROLE reader; $sql",
			extra_params => [ '-v', 'VERBOSITY=verbose' ]);
		return $ret == 0 ? $out : ($err =~ /(ERROR:  \w+: [^\n]*)/)[0] // $err;
	};
	my @calls = (
		[ 'spotsigs_join', "$pairs FROM spotsigs_join('TABLE', 'id', 'sig', 0.5) j(a, b, s)" ],
		[ 'spotsigs_clusters', "SELECT count(*) || ' ' || md5(string_agg(i || ',' || c, ';' ORDER BY i)) FROM spotsigs_clusters('TABLE', 'id', 'sig', 0.5) k(i, c)" ],
		[ 'spotsigs_join_rs', "$pairs FROM spotsigs_join_rs('batch', 'id', 'sig', 'TABLE', 'id', 'sig', 0.5) j(a, b, s)" ],
		[ 'spotsigs_join_rs', "$pairs FROM spotsigs_join_rs('batch_dist', 'bid', 'bsig', 'TABLE', 'id', 'sig', 0.5) j(a, b, s)", 'both distributed' ]);
	for my $c (@calls) {
		my ($fn, $sql, $what) = @$c;
		$what = $what ? "$fn ($what)" : $fn;
		for my $table (qw(pages pages_local)) {
			is($as_reader->($sql =~ s/TABLE/$table/gr),
				"ERROR:  42501: permission denied for table public.$table",
				"$what on $table without SELECT: 42501");
		}
	}
	$coord->safe_psql('postgres', 'GRANT SELECT ON pages, pages_local TO reader');
	my %owner;
	for my $c (@calls) {
		my ($fn, $sql, $what) = @$c;
		$what = $what ? "$fn ($what)" : $fn;
		my $d = $as_reader->($sql =~ s/TABLE/pages/gr);
		is($d, $as_reader->($sql =~ s/TABLE/pages_local/gr), "$what by a role with SELECT: distributed = single node");
		is($d, $coord->safe_psql('postgres', $sql =~ s/TABLE/pages/gr), "$what by a role with SELECT: the owner's answer");
		$owner{$sql} = $d;
	}
	$coord->safe_psql('postgres', q{
CREATE POLICY some_rows ON pages FOR SELECT TO reader USING (id % 3 <> 0);
ALTER TABLE pages ENABLE ROW LEVEL SECURITY;
CREATE POLICY some_rows ON pages_local FOR SELECT TO reader USING (id % 3 <> 0);
ALTER TABLE pages_local ENABLE ROW LEVEL SECURITY;
});
	is($as_reader->('SELECT count(*) FROM pages'), $as_reader->('SELECT count(*) FROM pages_local'), 'the policy shows the same rows of both copies');
	for my $c (@calls) {
		my ($fn, $sql, $what) = @$c;
		$what = $what ? "$fn ($what)" : $fn;
		my $d = $as_reader->($sql =~ s/TABLE/pages/gr);
		like($d, qr/^\d+ [0-9a-f]{32}$/, "$what under row-level security: an answer");
		is($d, $as_reader->($sql =~ s/TABLE/pages_local/gr), "$what under row-level security: distributed = single node");
		isnt($d, $owner{$sql}, "$what under row-level security: not the whole table's answer");
	}
	$coord->safe_psql('postgres', q{
ALTER TABLE pages DISABLE ROW LEVEL SECURITY;
DROP POLICY some_rows ON pages;
ALTER TABLE pages_local DISABLE ROW LEVEL SECURITY;
DROP POLICY some_rows ON pages_local;
});
}

# ---- overloads planted in the extension's schema (public here) on every node by a role that may
# create there: each would catch a loosely typed internal call (on the coordinator, or in the
# commands the coordinator and the tasks send to the workers) and make the role superuser when a
# superuser ran it. The superuser's distributed joins and spotsigs_flag_batch still answer as on
# one node, and the role is superuser on no node. (The calls below are exactly typed: a loosely
# typed call of the user's own could itself reach a plant.)
{
	my $body = q{LANGUAGE plpgsql AS $$ BEGIN
  IF (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN EXECUTE 'ALTER ROLE planter SUPERUSER'; END IF;
  RETURN%s; END $$;};
	# (Tasks run on the workers only: the coordinator, whose log must not name them, gets the others.)
	my $task_plants = join "\n",
		"CREATE FUNCTION public.spotsigs_citus_task(text[], text, text, double precision, integer, text, jsonb, boolean)
		   RETURNS jsonb " . sprintf($body, ' NULL'),
		"CREATE FUNCTION public.spotsigs_citus_task(text[], text, text, double precision, integer, text, jsonb, boolean, text)
		   RETURNS jsonb " . sprintf($body, ' NULL');
	my $plants = join "\n",
		"CREATE FUNCTION public.spotsigs_join(text, text, text, double precision, integer, text)
		   RETURNS TABLE(id1 bigint, id2 bigint, similarity double precision) " . sprintf($body, ''),
		"CREATE FUNCTION public.spotsigs_join_rs(text, text, text, text, text, text, double precision, integer, text)
		   RETURNS TABLE(r_id bigint, s_id bigint, similarity double precision) " . sprintf($body, ''),
		"CREATE FUNCTION public.spotsigs_join_rs(text, text, text, regclass, name, name, double precision)
		   RETURNS TABLE(r_id bigint, s_id bigint, similarity double precision) " . sprintf($body, ''),
		"CREATE FUNCTION public.spotsigs_citus_pack(text, text, text) RETURNS text " . sprintf($body, ' NULL');
	$_->safe_psql('postgres', "SET citus.enable_ddl_propagation = off; CREATE ROLE planter;
GRANT CREATE ON SCHEMA public TO planter; SET ROLE planter; $plants" . ($_ == $coord ? '' : "\n$task_plants")) for @nodes;
	my $typed = "'id'::name, 'sig'::name, 0.5::float8, NULL::integer, NULL::text";
	for my $c (
		[ 'spotsigs_join', "$pairs FROM spotsigs_join('TABLE'::regclass, $typed, NULL::text) j(a, b, s)" ],
		[ 'spotsigs_clusters', "SELECT count(*) || ' ' || md5(string_agg(i || ',' || c, ';' ORDER BY i)) FROM spotsigs_clusters('TABLE'::regclass, $typed, NULL::text) k(i, c)" ],
		[ 'spotsigs_join_rs(batch, archive)', "$pairs FROM spotsigs_join_rs('batch'::regclass, 'id'::name, 'sig'::name, 'TABLE'::regclass, $typed) j(a, b, s)" ],
		[ 'spotsigs_join_rs(archive, distributed batch)', "$pairs FROM spotsigs_join_rs('TABLE'::regclass, 'id'::name, 'sig'::name, 'batch_dist'::regclass, 'bid'::name, 'bsig'::name, 0.5::float8, NULL::integer, NULL::text) j(a, b, s)" ]) {
		my ($what, $sql) = @$c;
		is($coord->safe_psql('postgres', $sql =~ s/TABLE/pages/gr), $coord->safe_psql('postgres', $sql =~ s/TABLE/pages_local/gr),
			"$what with the plants in place: distributed = single node");
	}
	$coord->safe_psql('postgres', q{
UPDATE ingest SET duplicate_of = NULL, similarity = NULL;
SELECT spotsigs_flag_batch('ingest'::regclass, 'id'::name, 'sig'::name, 'duplicate_of'::name, 'similarity'::name, 0.5::float8, 1::bigint);
});
	is($coord->safe_psql('postgres', $flags . 'ingest'), $coord->safe_psql('postgres', q{
CREATE TEMP TABLE ingest_one AS SELECT id, sig, NULL::int AS duplicate_of, NULL::float8 AS similarity FROM ingest_local;
SELECT spotsigs_flag_batch('ingest_one'::regclass, 'id'::name, 'sig'::name, 'duplicate_of'::name, 'similarity'::name, 0.5::float8, 1::bigint);
} . $flags . 'ingest_one') =~ s/^\d+\n//r, 'spotsigs_flag_batch with the plants in place: distributed = single node');
	is($_->safe_psql('postgres', q{SELECT rolsuper FROM pg_roles WHERE rolname = 'planter'}), 'f',
		$_->name . ': the planting role is not superuser') for @nodes;
	$_->safe_psql('postgres', 'SET citus.enable_ddl_propagation = off; DROP OWNED BY planter; DROP ROLE planter') for @nodes;
}

# ---- cancellation: with a task blocked on worker 1 (one of its shards locked), the
# coordinator's statement timeout ends the join, and the blocked statements on the worker end too
{
	my $shard = $coord->safe_psql('postgres', q{SELECT shard_name('pages', shardid, false) FROM citus_shards
		WHERE table_name = 'pages'::regclass AND nodeport = } . $workers[0]->port . ' ORDER BY shardid LIMIT 1');
	my $bare = $shard =~ s/^.*\.//r;    # as run_command_on_shards names it
	my $locker = $workers[0]->background_psql('postgres');
	$locker->query_safe("SET citus.enable_manual_changes_to_shards = on; BEGIN; LOCK TABLE $shard IN ACCESS EXCLUSIVE MODE;");
	my ($ret, $out, $err) = $coord->psql('postgres',
		"SET statement_timeout = '3s'; SELECT count(*) FROM spotsigs_join('pages', 'id', 'sig', 0.5)");
	like($err, qr/canceling statement due to statement timeout/, 'a distributed join is cancellable');
	# (The first statement to wait for the lock reads the shard: the task, the export of its rows,
	# or the read of one row of it that picks the node's value of the distribution column.)
	my $busy = q{SELECT count(*) = 0 FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND state = 'active'
		AND (query LIKE '%spotsigs_citus%' OR query LIKE '%json_build_array%' OR query LIKE '%LIMIT 1%')};
	ok($workers[0]->poll_query_until('postgres', $busy), 'its statements on the worker ended, the lock still held');
	like(slurp_file($workers[0]->logfile), qr/ERROR:  canceling statement due to user request\n(?:[^\n]*\n){0,2}[^\n]*(?:spotsigs_citus_task|spotsigs_citus_export|\Q$bare\E)/,
		'the blocked statement on the worker was cancelled (not left to finish)');
	$locker->query_safe('COMMIT');
	$locker->quit;
}

# Every join above ran on the workers: each logged its tasks (the coordinator none).
for my $i (0 .. 2) {
	my @tasks = slurp_file($workers[$i]->logfile) =~ /$task_re/g;
	cmp_ok(scalar(@tasks) / 8, '>=', 12, 'worker ' . ($i + 1) . ' ran its join tasks');
}
unlike(slurp_file($coord->logfile), qr/spotsigs_citus_task/, 'the coordinator ran no join task');

$_->stop for @nodes;
done_testing();
