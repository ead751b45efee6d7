# The content measure (the default of the joins) on Citus-distributed tables: on newsframes-dev
# and docversions-dev, each distributed by id over six shards on three workers next to a local
# copy on the coordinator, the default spotsigs_join and spotsigs_clusters, measure 'content' at
# a given threshold, spotsigs_join_rs and spotsigs_flag_batch without a threshold give exactly
# one node's answer over the local copy: first without statistics (the template computed from
# every row the shards hold), then with spotsigs_analyze's stored template (kept on the
# coordinator; the workers have none), which equals the local copy's. Each worker ran its share
# (its log). Skips, saying why, when Citus is not installed or a data set is missing.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use lib 'test/t';
use CitusNodes;

my $citus_missing = citus_missing();
plan skip_all => $citus_missing if $citus_missing;
my $newsframes = $ENV{SPOTSIGS_NEWSFRAMES} // '';
plan skip_all => "newsframes-dev not found (set SPOTSIGS_NEWSFRAMES to its pages.tsv.gz)"
  unless $newsframes ne '' && -r $newsframes;
(my $docversions = $newsframes) =~ s{newsframes-dev/pages\.tsv\.gz$}{docversions-dev/pages.tsv.gz};
$docversions = $ENV{SPOTSIGS_DOCVERSIONS} if $ENV{SPOTSIGS_DOCVERSIONS};
plan skip_all => "docversions-dev not found (set SPOTSIGS_DOCVERSIONS to its pages.tsv.gz)"
  unless -r $docversions;

my ($coord, @workers) = citus_nodes(preload => 'citus,spotsigs');
my @nodes = ($coord, @workers);

my $task_re = qr/spotsigs_citus_task: \d+ local rows in \d+ shards, \d+ rows \(\d+ bytes\) fetched from \d+ remote shards, \d+ candidates, \d+ pairs/;
my $pairs = q{SELECT count(*) || ' ' || md5(coalesce(string_agg(a || ',' || b || ',' || s, ';' ORDER BY a, b), ''))};
my $clusters = q{SELECT count(*) || ' ' || count(DISTINCT c) || ' ' || md5(string_agg(i || ',' || c, ';' ORDER BY i))};

for my $set ([ 'newsframes', $newsframes ], [ 'docversions', $docversions ]) {
	my ($name, $file) = @$set;
	my ($dist, $local) = ("${name}_dist", "${name}_local");
	$coord->safe_psql('postgres', qq{
CREATE TABLE $local (id int PRIMARY KEY, cluster int, host text, kind text, html text, sig spotsig);
COPY $local (id, cluster, host, kind, html) FROM PROGRAM 'zcat $file';
UPDATE $local SET sig = spotsigs(html);
ALTER TABLE $local DROP COLUMN html;
SET citus.shard_count = 6;
CREATE TABLE $dist (id int PRIMARY KEY, sig spotsig);
SELECT create_distributed_table('$dist', 'id');
INSERT INTO $dist SELECT id, sig FROM $local;
-- a batch of new pages: copies of every 9th page under new ids, a plain local table
CREATE TABLE ${name}_batch AS SELECT id + 100000 AS id, sig FROM $local WHERE id % 9 = 0;
-- ingest: the first two thirds, then the rest, flagged without a threshold
CREATE TABLE ${name}_ingest_local (id int PRIMARY KEY, sig spotsig, duplicate_of int, similarity float8);
CREATE TABLE ${name}_ingest (id int PRIMARY KEY, sig spotsig, duplicate_of int, similarity float8);
SELECT create_distributed_table('${name}_ingest', 'id');
});
	my $rows = $coord->safe_psql('postgres', "SELECT count(*) FROM $local");
	is($coord->safe_psql('postgres', "SELECT count(*) FROM $dist"), $rows, "$name: $rows rows distributed");

	# Each call on the distributed table and on the local copy (TABLE replaced).
	my @calls = (
		[ 'the default spotsigs_join', "$pairs FROM spotsigs_join('TABLE', 'id', 'sig') j(a, b, s)" ],
		[ 'the default spotsigs_clusters', "$clusters FROM spotsigs_clusters('TABLE', 'id', 'sig') k(i, c)" ],
		[ "spotsigs_join, measure 'content' at 0.6",
		  "$pairs FROM spotsigs_join('TABLE', 'id', 'sig', 0.6, measure => 'content') j(a, b, s)" ],
		[ 'the default spotsigs_join_rs(batch, table)',
		  "$pairs FROM spotsigs_join_rs('${name}_batch', 'id', 'sig', 'TABLE', 'id', 'sig') j(a, b, s)" ],
		[ 'the default spotsigs_join_rs(table, batch)',
		  "$pairs FROM spotsigs_join_rs('TABLE', 'id', 'sig', '${name}_batch', 'id', 'sig') j(a, b, s)" ]);
	my $check = sub {
		my ($when) = @_;
		my %answer;
		for my $c (@calls) {
			my ($what, $sql) = @$c;
			my @marks = map { -s $_->logfile } @workers;
			my $d = $coord->safe_psql('postgres', $sql =~ s/TABLE/$dist/gr);
			my $l = $coord->safe_psql('postgres', $sql =~ s/TABLE/$local/gr);
			is($d, $l, "$name, $when: $what: distributed = single node ($l)");
			like($l, qr/^[1-9]\d* /, "$name, $when: $what: some pairs");
			$answer{$what} = $l;
			# every worker ran one task for it, on its own shards
			my @tasks = map { my $log = substr(slurp_file($workers[$_]->logfile), $marks[$_]); scalar(() = $log =~ /$task_re/g) } 0 .. 2;
			is(join(' ', @tasks), '1 1 1', "$name, $when: $what: one task on each worker");
		}
		return %answer;
	};
	my %computed = $check->('no statistics (the template of every row)');

	# Stored statistics: analyze both tables; the distributed table's template, computed from the
	# rows its shards hold, equals the local copy's, and stays on the coordinator.
	$coord->safe_psql('postgres', "SELECT spotsigs_analyze('$dist', 'sig'); SELECT spotsigs_analyze('$local', 'sig')");
	is($coord->safe_psql('postgres', "SELECT count(DISTINCT template::text) || ' ' || min(rows_analyzed) FROM spotsigs_stats "
		. "WHERE relation IN ('$dist'::regclass, '$local'::regclass)"), "1 $rows",
		"$name: spotsigs_analyze on the distributed table: the local copy's template, over every row");
	is($workers[0]->safe_psql('postgres', 'SELECT count(*) FROM spotsigs_stats'), '0', "$name: the workers store no statistics");
	my %stored = $check->('stored statistics');
	# The stored template is the one computed from the same rows: the same answers (but for
	# spotsigs_join_rs(table, batch), which without statistics takes the template of its second
	# argument, the batch, and with them the table's).
	is($stored{$_}, $computed{$_}, "$name: $_ with stored statistics = without") for grep { !/\(table, batch\)/ } sort keys %computed;

	# A stored template that is not the rows' (analyzed on a subset): the distributed join uses it,
	# as one node does (the stored one, not one recomputed from the rows).
	$coord->safe_psql('postgres', qq{
CREATE TABLE ${name}_sub AS SELECT * FROM $local WHERE id % 2 = 0;
ALTER TABLE ${name}_sub ADD PRIMARY KEY (id);
SELECT spotsigs_analyze('${name}_sub', 'sig');
UPDATE spotsigs_template_store SET template = (SELECT template FROM spotsigs_template_store
  WHERE relation = '${name}_sub'::regclass) WHERE relation IN ('$dist'::regclass, '$local'::regclass);
});
	my ($d, $l) = map { $coord->safe_psql('postgres', $calls[0][1] =~ s/TABLE/$_/gr) } ($dist, $local);
	is($d, $l, "$name: the default spotsigs_join with another stored template: distributed = single node");
	isnt($l, $computed{ $calls[0][0] }, "$name: which is another answer than the rows' template gives");
	$coord->safe_psql('postgres', "SELECT spotsigs_analyze('$dist', 'sig'); SELECT spotsigs_analyze('$local', 'sig')");

	# Ingest without a threshold: spotsigs_flag_batch on the distributed table flags what it flags
	# on the local one (the stored template of the target).
	my $third = int($rows * 2 / 3);
	my $flags = q{SELECT count(duplicate_of) || ' ' || md5(string_agg(id || ',' || coalesce(duplicate_of::text, '-') || ',' || coalesce(similarity::text, '-'), ';' ORDER BY id)) FROM };
	for my $t ("${name}_ingest", "${name}_ingest_local") {
		$coord->safe_psql('postgres', qq{
INSERT INTO $t (id, sig) SELECT id, sig FROM $local WHERE id <= $third;
SELECT spotsigs_flag_batch('$t', 'id', 'sig', 'duplicate_of', 'similarity', NULL, 1);
INSERT INTO $t (id, sig) SELECT id, sig FROM $local WHERE id > $third;
SELECT spotsigs_analyze('$t', 'sig');
SELECT spotsigs_flag_batch('$t', 'id', 'sig', 'duplicate_of', 'similarity', NULL, $third + 1);
});
	}
	my $want = $coord->safe_psql('postgres', $flags . "${name}_ingest_local");
	like($want, qr/^[1-9]/, "$name: spotsigs_flag_batch without a threshold flags rows");
	is($coord->safe_psql('postgres', $flags . "${name}_ingest"), $want,
		"$name: spotsigs_flag_batch without a threshold on the distributed table = on the local one ($want)");
}

# Four nodes holding shards (the coordinator too): two of the tasks then pair their rows with two
# other nodes' each, the second of them by the pairs across only. Every call still gives one
# node's answer, by either measure.
$coord->safe_psql('postgres', qq{
SELECT citus_set_node_property('localhost', @{[ $coord->port ]}, 'shouldhaveshards', true);
SET citus.shard_count = 8;
CREATE TABLE four (id int PRIMARY KEY, sig spotsig);
SELECT create_distributed_table('four', 'id');
INSERT INTO four SELECT id, sig FROM newsframes_local;
});
is($coord->safe_psql('postgres', q{SELECT count(DISTINCT nodeport) FROM pg_dist_shard_placement p
  JOIN pg_dist_shard s USING (shardid) WHERE s.logicalrelid = 'four'::regclass}), '4', 'four nodes hold shards of the table');
my @marks = map { -s $_->logfile } @nodes;
for my $c ([ 'the default spotsigs_join', "$pairs FROM spotsigs_join('TABLE', 'id', 'sig') j(a, b, s)" ],
	[ "spotsigs_join, measure 'content' at 0.6", "$pairs FROM spotsigs_join('TABLE', 'id', 'sig', 0.6, measure => 'content') j(a, b, s)" ],
	[ 'spotsigs_join at 0.5', "$pairs FROM spotsigs_join('TABLE', 'id', 'sig', 0.5) j(a, b, s)" ],
	[ 'the default spotsigs_clusters', "$clusters FROM spotsigs_clusters('TABLE', 'id', 'sig') k(i, c)" ]) {
	my ($what, $sql) = @$c;
	my $l = $coord->safe_psql('postgres', $sql =~ s/TABLE/newsframes_local/gr);
	is($coord->safe_psql('postgres', $sql =~ s/TABLE/four/gr), $l, "four nodes: $what: distributed = single node ($l)");
}
# per call, two tasks fetched two other nodes' shards (4 shards) and two one node's (2)
my $logs = join '', map { substr(slurp_file($nodes[$_]->logfile), $marks[$_]) } 0 .. $#nodes;
my %fetched;
$fetched{$1}++ while $logs =~ /spotsigs_citus_task: \d+ local rows in \d+ shards, \d+ rows \(\d+ bytes\) fetched from (\d+) remote shards/g;
is(join(' ', map { "$_:$fetched{$_}" } sort keys %fetched), '2:8 4:8', 'four nodes: per call two tasks joined two other nodes, two joined one');
# The length split with the coordinator among the nodes: it writes its rows' length pieces too
# (Citus's repartitioning, run by Citus's local execution there) and runs a range task.
{
	my $mark = -s $coord->logfile;
	my $sql = "$pairs FROM spotsigs_join('TABLE', 'id', 'sig', 0.9) j(a, b, s)";
	my $l = $coord->safe_psql('postgres', $sql =~ s/TABLE/newsframes_local/gr);
	is($coord->safe_psql('postgres', "SET spotsigs.citus_split = length; " . ($sql =~ s/TABLE/four/gr)), $l,
		"four nodes, the length split at 0.9: distributed = single node ($l)");
	like(substr(slurp_file($coord->logfile), $mark), qr/spotsigs_citus_join: length ranges from \[0, \d+, \d+, \d+\]/,
		'four nodes, the length split: four ranges, one on the coordinator');
}

# An id on two nodes (a table distributed by another column): the task that joins the two nodes'
# rows together refuses it, as one node refuses a repeated id, rather than pair both rows.
$coord->safe_psql('postgres', q{
SET citus.shard_count = 8;
CREATE TABLE twice (id int, k int, sig spotsig);
SELECT create_distributed_table('twice', 'k');
INSERT INTO twice SELECT id, id, sig FROM newsframes_local WHERE id <= 300;
});
my $node_of = q{(SELECT p.groupid FROM pg_dist_placement p WHERE p.shardid = get_shard_id_for_distribution_column('twice', K))};
my $k = $coord->safe_psql('postgres', 'SELECT k FROM generate_series(1000, 2000) k WHERE '
	. ($node_of =~ s/K/k/r) . ' <> ' . ($node_of =~ s/K/5/r) . ' ORDER BY k LIMIT 1');
$coord->safe_psql('postgres', "INSERT INTO twice SELECT 5, $k, sig FROM newsframes_local WHERE id = 6");
my ($ret, $out, $err) = $coord->psql('postgres', "\\set VERBOSITY verbose\nSELECT count(*) FROM spotsigs_join('twice', 'id', 'sig', 0.5)");
like($err, qr/22023: id column of relation .* is not unique/, 'an id on two nodes: the distributed join refuses it (22023)');

$_->stop for @nodes;
done_testing();
