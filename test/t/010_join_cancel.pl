# Cancelling a long spotsigs_join: statement_timeout and pg_cancel_backend stop it promptly
# (the matcher thread is stopped and joined), progress shows in pg_stat_activity, and
# pg_terminate_backend during a join leaves the server healthy.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use Time::HiRes qw(time sleep);

my $node = PostgreSQL::Test::Cluster->new('join_cancel');
$node->init;
$node->append_conf('postgresql.conf', "spotsigs.max_threads = 3\nspotsigs.join_memory_limit = '2GB'\n");
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION spotsigs');
# Settings from postgresql.conf survive the library's reservation of the "spotsigs" prefix.
is($node->safe_psql('postgres', "LOAD 'spotsigs'; SHOW spotsigs.max_threads"), '3',
	'spotsigs.max_threads from postgresql.conf applies');
is($node->safe_psql('postgres', "LOAD 'spotsigs'; SHOW spotsigs.join_memory_limit"), '2GB',
	'spotsigs.join_memory_limit from postgresql.conf applies');

# 100,000 documents of 20 random signatures out of 5,000: brute force needs 5e9 comparisons.
$node->safe_psql('postgres', q{
	SELECT setseed(0.5);
	CREATE TABLE docs AS
	SELECT i AS id,
	       ('{' || array_to_string(ARRAY(SELECT to_hex((random() * 5000)::int + i * 0)
	                                     FROM generate_series(1, 20)), ',') || '}')::spotsig AS sig
	FROM generate_series(1, 100000) i;
});

# statement_timeout fires during matching: 57014 within a second of the timeout.
for my $method ('bruteforce', 'noprune') {
	for my $threads (1, 2) {
		my $t0 = time;
		my ($ret, $out, $err) = $node->psql('postgres',
			"SET statement_timeout = '1s'; SELECT count(*) FROM spotsigs_join('docs', 'id', 'sig', 0.3, $threads, '$method')",
			extra_params => [ '-v', 'VERBOSITY=verbose' ]);
		my $elapsed = time - $t0;
		isnt($ret, 0, "$method, $threads threads: the timed-out join fails");
		like($err, qr/57014.*canceling statement due to statement timeout/,
			"$method, $threads threads: with SQLSTATE 57014");
		ok($elapsed < 1.0 + 1.0,
			sprintf("$method, $threads threads: returns within a second of the timeout (%.2f s)", $elapsed));
	}
}
is($node->safe_psql('postgres', 'SELECT 1'), '1', 'the server still answers');

# Progress in pg_stat_activity, then pg_cancel_backend from another session.
my ($in, $out, $err) = ('', '', '');
my $h = IPC::Run::start(
	[ 'psql', '-XAtq', '-d', $node->connstr('postgres'), '-c',
	  "SELECT count(*) FROM spotsigs_join('docs', 'id', 'sig', 0.3, 2, 'bruteforce')" ],
	'<', \$in, '>', \$out, '2>', \$err);
ok($node->poll_query_until('postgres',
	"SELECT count(*) = 1 FROM pg_stat_activity WHERE state = 'active' AND query LIKE 'spotsigs_join: matching, % of 100000 documents%'"),
	'progress shows in pg_stat_activity.query');
my $activity = $node->safe_psql('postgres',
	"SELECT query FROM pg_stat_activity WHERE state = 'active' AND query LIKE 'spotsigs_join: matching%'");
note("pg_stat_activity.query: $activity");
like($activity, qr/^spotsigs_join: matching, \d+ of 100000 documents \(\d+%\) \| SELECT count/,
	'progress text names the documents done and the query');
my $t0 = time;
$node->safe_psql('postgres',
	"SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE state = 'active' AND query LIKE 'spotsigs_join: matching%'");
$h->finish;
my $elapsed = time - $t0;
like($err, qr/canceling statement due to user request/, 'pg_cancel_backend cancels the join');
ok($elapsed < 1.0, sprintf('within a second (%.2f s)', $elapsed));

# A join in passes (past spotsigs.join_memory_limit) shows which pass it is at and the lengths it
# covers, and a cancel stops it there too. 100,000 documents of 10 to 59 signatures.
$node->safe_psql('postgres', q{
	SELECT setseed(0.25);
	CREATE TABLE varied AS
	SELECT i AS id,
	       ('{' || array_to_string(ARRAY(SELECT to_hex((random() * 5000)::int + i * 0)
	                                     FROM generate_series(1, 10 + i % 50)), ',') || '}')::spotsig AS sig
	FROM generate_series(1, 100000) i;
});
($in, $out, $err) = ('', '', '');
$h = IPC::Run::start(
	[ 'psql', '-XAtq', '-d', $node->connstr('postgres'), '-c',
	  "SET spotsigs.join_memory_limit = '16MB'; SELECT count(*) FROM spotsigs_join('varied', 'id', 'sig', 0.3, 2, 'bruteforce')" ],
	'<', \$in, '>', \$out, '2>', \$err);
ok($node->poll_query_until('postgres',
	"SELECT count(*) = 1 FROM pg_stat_activity WHERE state = 'active' AND query LIKE 'spotsigs_join: pass %'"),
	'a join in passes shows its pass in pg_stat_activity.query');
$activity = $node->safe_psql('postgres',
	"SELECT query FROM pg_stat_activity WHERE state = 'active' AND query LIKE 'spotsigs_join: pass %'");
note("pg_stat_activity.query: $activity");
like($activity,
	qr/^spotsigs_join: pass \d+, lengths \d+ to \d+ of 59: (reading, \d+ rows read|matching, \d+ of \d+ documents \(\d+%\)) \| SET spotsigs/,
	'the progress of a pass names it, its lengths, the longest length, and what it does');
$t0 = time;
$node->safe_psql('postgres',
	"SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE state = 'active' AND query LIKE 'spotsigs_join: pass %'");
$h->finish;
$elapsed = time - $t0;
like($err, qr/canceling statement due to user request/, 'pg_cancel_backend cancels the join in passes');
ok($elapsed < 1.0, sprintf('within a second (%.2f s)', $elapsed));

# After cancels, the same session type still joins correctly.
is($node->safe_psql('postgres',
	"SELECT count(*) FROM spotsigs_join('docs', 'id', 'sig', 1.0, 2) WHERE id1 < 100"),
	$node->safe_psql('postgres', "SELECT count(*) FROM docs a JOIN docs b ON a.id < b.id AND a.sig = b.sig WHERE a.id < 100"),
	'a join after the cancels gives the right answer');

# A session whose join was cancelled shows its own query again once idle, not the progress text.
($in, $out, $err) = ('', '', '');
$h = IPC::Run::start([ 'psql', '-XAtq', '-d', $node->connstr('postgres') ],
	'<', \$in, '>', \$out, '2>', \$err);
$in .= "SET application_name = 'stale_progress';\n"
	. "SELECT count(*) FROM spotsigs_join('docs', 'id', 'sig', 0.3, 2, 'bruteforce');\n";
$h->pump_nb;
ok($node->poll_query_until('postgres',
	"SELECT count(*) = 1 FROM pg_stat_activity WHERE application_name = 'stale_progress' "
	  . "AND query LIKE 'spotsigs_join: matching%'"), 'the kept session is matching');
$node->safe_psql('postgres',
	"SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE application_name = 'stale_progress'");
$h->pump until $err =~ /canceling statement/;
ok($node->poll_query_until('postgres',
	"SELECT state = 'idle' FROM pg_stat_activity WHERE application_name = 'stale_progress'"),
	'the cancelled session goes idle');
is($node->safe_psql('postgres',
	"SELECT query FROM pg_stat_activity WHERE application_name = 'stale_progress'"),
	"SELECT count(*) FROM spotsigs_join('docs', 'id', 'sig', 0.3, 2, 'bruteforce');",
	'the idle session shows its query, not the progress of the cancelled join');
$in .= "\\q\n";
$h->finish;

# pg_terminate_backend during a join: the backend exits (its thread stopped), the server lives.
# Only an active session is matched: an idle one may still show what it last ran.
($in, $out, $err) = ('', '', '');
$h = IPC::Run::start(
	[ 'psql', '-XAtq', '-d', $node->connstr('postgres'), '-c',
	  "SELECT count(*) FROM spotsigs_join('docs', 'id', 'sig', 0.3, 2, 'bruteforce')" ],
	'<', \$in, '>', \$out, '2>', \$err);
$node->poll_query_until('postgres',
	"SELECT count(*) = 1 FROM pg_stat_activity WHERE state = 'active' AND query LIKE 'spotsigs_join: matching%'");
$node->safe_psql('postgres',
	"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE state = 'active' AND query LIKE 'spotsigs_join: matching%'");
$h->finish;
like($err, qr/terminating connection due to administrator command/, 'pg_terminate_backend ends the joining backend');
is($node->safe_psql('postgres', 'SELECT 1'), '1', 'the server still answers after the termination');
unlike(slurp_file($node->logfile), qr/terminated by signal|server process .* was terminated/,
	'no backend crashed');

$node->stop;
done_testing();
