# The SQL join (SpotsigsJoin) past spotsigs.join_memory_limit: it runs in passes, says so at
# DEBUG1, gives the rows of one pass and of the nested loop, and a statement_timeout stops it
# promptly while it reads its tuplestores or matches a pass. In one pass: its progress shows in
# pg_stat_activity, and pg_cancel_backend and statement_timeout stop it promptly.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use Time::HiRes qw(time);

my $node = PostgreSQL::Test::Cluster->new('sql_join_passes');
$node->init;
$node->append_conf('postgresql.conf', "spotsigs.max_threads = 2\nmax_parallel_workers_per_gather = 0\n");
$node->start;
$node->safe_psql('postgres', q{
	CREATE EXTENSION spotsigs;
	SELECT setseed(0.5);
	-- 60,000 documents of 3 to 80 random signatures out of 5,000
	CREATE TABLE docs AS
	SELECT i AS id,
	       ('{' || array_to_string(ARRAY(SELECT to_hex((random() * 5000)::int + i * 0)
	                                     FROM generate_series(1, 3 + i % 78)), ',') || '}')::spotsig AS sig
	FROM generate_series(1, 60000) i;
	-- 30,000 documents of 3 to 42 consecutive values: near duplicates of their neighbours
	CREATE TABLE near AS
	SELECT i AS id, ('{' || (SELECT string_agg(to_hex(i / 5 + j), ',') FROM generate_series(0, 2 + i % 40) j) || '}')::spotsig AS sig
	FROM generate_series(1, 30000) i;
	ANALYZE docs, near;
});

# In passes: the DEBUG1 messages, and the rows of the join run at once.
my $join = 'SELECT a.id AS x, b.id AS y FROM near a JOIN near b ON a.sig % spotsig_query(b.sig, 0.9) AND a.id < b.id';
$node->safe_psql('postgres', "CREATE TABLE want AS $join");
my ($ret, $out, $err) = $node->psql('postgres',
	"SET client_min_messages = debug1; SET spotsigs.join_memory_limit = '16MB'; CREATE TABLE got AS $join");
is($ret, 0, 'the join under 16MB runs');
like($err, qr/SpotsigsJoin: the rows do not fit spotsigs.join_memory_limit at once/, 'DEBUG1 says it goes to passes');
like($err, qr/SpotsigsJoin: (\d+) passes within spotsigs.join_memory_limit, accounted peak (\d+) kB/,
	'DEBUG1 says how many passes and their peak');
my ($passes, $peak) = $err =~ /SpotsigsJoin: (\d+) passes within spotsigs.join_memory_limit, accounted peak (\d+) kB/;
ok(defined $passes && $passes > 1, 'more than one pass (' . ($passes // 'none') . ')');
ok(defined $peak && $peak <= 16 * 1024, 'the accounted peak is within the limit (' . ($peak // 'none') . ' kB)');
is($node->safe_psql('postgres',
	'SELECT count(*) FROM ((TABLE got EXCEPT ALL TABLE want) UNION ALL (TABLE want EXCEPT ALL TABLE got)) d'),
	'0', 'the passes give the rows of one pass');
isnt($node->safe_psql('postgres', 'SELECT count(*) FROM want'), '0', 'which are some');
# ... which are the nested loop's (of index probes), and those of passes on one thread.
$node->safe_psql('postgres', qq{
	CREATE INDEX ON near USING spotsigs (sig);
	SET spotsigs.enable_join = off;
	CREATE TABLE nested AS $join;
});
($ret, $out, $err) = $node->psql('postgres',
	"SET client_min_messages = debug1; SET spotsigs.max_threads = 1; SET spotsigs.join_memory_limit = '12MB'; "
	  . "CREATE TABLE got1 AS $join");
like($err, qr/SpotsigsJoin: (\d+) passes within/, 'on one thread under 12MB, in passes too');
like($node->safe_psql('postgres', "SET spotsigs.enable_join = off; EXPLAIN (COSTS OFF) $join"), qr/Nested Loop/,
	'the reference is the nested loop');
is($node->safe_psql('postgres',
	'SELECT count(*) FROM ((TABLE got EXCEPT ALL TABLE nested) UNION ALL (TABLE nested EXCEPT ALL TABLE got)) d'),
	'0', 'the passes give the rows of the nested loop');
is($node->safe_psql('postgres',
	'SELECT count(*) FROM ((TABLE got1 EXCEPT ALL TABLE nested) UNION ALL (TABLE nested EXCEPT ALL TABLE got1)) d'),
	'0', 'and so do the passes on one thread');

# Signatures stored out of line: their lengths for the passes come from the first chunk, and a
# pass reads its rows' values by one scan of the toast relation.
$node->safe_psql('postgres', q{
	CREATE TABLE longs (id int, sig spotsig);
	ALTER TABLE longs ALTER COLUMN sig SET STORAGE EXTERNAL;
	INSERT INTO longs
	SELECT i, ('{' || (SELECT string_agg(to_hex(i / 4 * 7 + j), ',') FROM generate_series(0, 250 + i % 150) j) || '}')::spotsig
	FROM generate_series(1, 6000) i;
	ANALYZE longs;
});
is($node->safe_psql('postgres', q{SELECT count(*) FILTER (WHERE pg_column_size(sig) > 2000) = count(*)
	AND (SELECT pg_relation_size(reltoastrelid) > 0 FROM pg_class WHERE oid = 'longs'::regclass) FROM longs}),
	't', 'every signature of longs is stored out of line');
my $long_join = 'SELECT a.id AS x, b.id AS y FROM longs a JOIN longs b ON a.sig % spotsig_query(b.sig, 0.9) AND a.id < b.id';
$node->safe_psql('postgres', "CREATE TABLE long_want AS $long_join");
($ret, $out, $err) = $node->psql('postgres',
	"SET client_min_messages = debug1; SET spotsigs.join_memory_limit = '16MB'; CREATE TABLE long_got AS $long_join");
like($err, qr/SpotsigsJoin: (\d+) passes within/, 'out-of-line signatures under 16MB: in passes');
is($node->safe_psql('postgres',
	'SELECT count(*) FROM ((TABLE long_got EXCEPT ALL TABLE long_want) UNION ALL (TABLE long_want EXCEPT ALL TABLE long_got)) d'),
	'0', 'out-of-line signatures: the passes give the rows of one pass');
isnt($node->safe_psql('postgres', 'SELECT count(*) FROM long_want'), '0', 'which are some');

# statement_timeout in passes (bruteforce at 0.3: each pass is long): 57014 within a second.
for my $threads (1, 2) {
	my $t0 = time;
	($ret, $out, $err) = $node->psql('postgres',
		"SET spotsigs.join_memory_limit = '24MB'; SET spotsigs.join_method = 'bruteforce'; "
		  . "SET spotsigs.max_threads = $threads; SET client_min_messages = debug1; SET statement_timeout = '3s'; "
		  . "SELECT count(*) FROM docs a JOIN docs b ON a.sig % spotsig_query(b.sig, 0.3)",
		extra_params => [ '-v', 'VERBOSITY=verbose' ]);
	my $elapsed = time - $t0;
	like($err, qr/SpotsigsJoin: the rows do not fit/, "$threads threads: the join runs in passes");
	like($err, qr/57014.*canceling statement due to statement timeout/, "$threads threads: the timeout cancels it");
	ok($elapsed < 3.0 + 1.0, sprintf("$threads threads: within a second of the timeout (%.2f s)", $elapsed));
}

# In one pass: progress in pg_stat_activity.query while it matches, then pg_cancel_backend from
# another session and statement_timeout, each within a second.
my $slow = "SET spotsigs.join_method = 'bruteforce'; SELECT count(*) FROM docs a JOIN docs b ON a.sig % spotsig_query(b.sig, 0.3)";
like($node->safe_psql('postgres', "SET spotsigs.join_method = 'bruteforce'; EXPLAIN (COSTS OFF) SELECT count(*) FROM docs a JOIN docs b ON a.sig % spotsig_query(b.sig, 0.3)"),
	qr/Custom Scan \(SpotsigsJoin\)/, 'the slow join is a SpotsigsJoin');
my ($in, $h) = ('');
$h = IPC::Run::start([ 'psql', '-XAtq', '-d', $node->connstr('postgres'), '-c', $slow ],
	'<', \$in, '>', \$out, '2>', \$err);
ok($node->poll_query_until('postgres',
	"SELECT count(*) = 1 FROM pg_stat_activity WHERE state = 'active' AND query LIKE 'SpotsigsJoin: matching, % of 60000 documents%'"),
	'progress shows in pg_stat_activity.query');
my $activity = $node->safe_psql('postgres', "SELECT query FROM pg_stat_activity WHERE state = 'active' AND query LIKE 'SpotsigsJoin: matching%'");
note("pg_stat_activity.query: $activity");
like($activity, qr/^SpotsigsJoin: matching, \d+ of 60000 documents \(\d+%\) \| SET spotsigs.join_method/,
	'the progress text names the documents done and the query');
my $t0 = time;
$node->safe_psql('postgres', "SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE state = 'active' AND query LIKE 'SpotsigsJoin: matching%'");
$h->finish;
my $elapsed = time - $t0;
like($err, qr/canceling statement due to user request/, 'pg_cancel_backend cancels the join');
ok($elapsed < 1.0, sprintf('within a second (%.2f s)', $elapsed));
for my $threads (1, 2) {
	$t0 = time;
	($ret, $out, $err) = $node->psql('postgres',
		"SET spotsigs.max_threads = $threads; SET statement_timeout = '2s'; $slow",
		extra_params => [ '-v', 'VERBOSITY=verbose' ]);
	$elapsed = time - $t0;
	like($err, qr/57014.*canceling statement due to statement timeout/, "one pass, $threads threads: the timeout cancels it");
	ok($elapsed < 2.0 + 1.0, sprintf("one pass, $threads threads: within a second of the timeout (%.2f s)", $elapsed));
}
is($node->safe_psql('postgres', "SET spotsigs.join_memory_limit = '16MB'; SELECT count(*) FROM ($join) j"),
	$node->safe_psql('postgres', 'SELECT count(*) FROM want'), 'a join after the cancels gives the same rows');

$node->stop;
done_testing();
