# Thresholds down to the denormals: the joins return the right answer promptly, and a long join
# at such a threshold still ends within a bounded time on statement_timeout, pg_cancel_backend
# and pg_terminate_backend. Every statement runs under a client-side time bound, so a matcher
# that loops makes the test fail instead of hanging it.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use Time::HiRes qw(time sleep);

my $node = PostgreSQL::Test::Cluster->new('join_tiny');
$node->init;
$node->append_conf('postgresql.conf', "spotsigs.max_threads = 2\n");
$node->start;
$node->safe_psql('postgres', q{
	CREATE EXTENSION spotsigs;
	CREATE TABLE s AS SELECT g AS id, '{1,2,3}'::spotsig AS sig FROM generate_series(1, 2000) g;
	CREATE TABLE two AS SELECT g AS id, '{1,2,3}'::spotsig AS sig FROM generate_series(1, 2) g;
	CREATE TABLE mixed AS SELECT g AS id, ('{' || g % 7 || ':' || 1 + g % 5 || ',ff}')::spotsig AS sig
		FROM generate_series(1, 300) g;
	-- 100,000 values with no signature in common: brute force compares 5e9 pairs, none similar.
	CREATE TABLE apart AS SELECT g AS id, ('{' || to_hex(g) || '}')::spotsig AS sig
		FROM generate_series(1, 100000) g;
});

# Runs sql in its own psql; returns (stdout, stderr, seconds), or fails the test past $limit s
# (the backend is then left to the node's immediate stop at the end).
my $hung = 0;
sub bounded {
	my ($sql, $limit) = @_;
	my ($in, $out, $err) = ('', '', '');
	my $t0 = time;
	my $h = IPC::Run::start(
		[ 'psql', '-XAtq', '-v', 'VERBOSITY=verbose', '-d', $node->connstr('postgres'), '-c', $sql ],
		'<', \$in, '>', \$out, '2>', \$err, IPC::Run::timeout($limit));
	eval { $h->finish; };
	if ($@) {
		$h->kill_kill;
		$hung = 1;
		return (undef, "timed out after $limit s", time - $t0);
	}
	chomp $out;
	return ($out, $err, time - $t0);
}

# Exact answers at tiny thresholds: every pair of equal values, and every pair of the mixed
# table whose similarity is positive (computed pair by pair with similarity()).
my $mixed_want = $node->safe_psql('postgres',
	'SELECT count(*) FROM mixed a JOIN mixed b ON a.id < b.id AND similarity(a.sig, b.sig) > 0');
for my $tau ('1e-20', '5e-20', '1e-300', '4.9406564584124654e-324', '2.2250738585072014e-308') {
	my ($out, $err, $secs) = bounded("SELECT count(*) FROM spotsigs_join('s', 'id', 'sig', $tau)", 60);
	is($out, '1999000', "spotsigs_join at $tau: every pair of 2000 equal rows");
	ok($secs < 30, sprintf("spotsigs_join at $tau answers promptly (%.2f s)", $secs));
	($out, $err) = bounded("SELECT count(*) FROM spotsigs_join('mixed', 'id', 'sig', $tau)", 60);
	is($out, $mixed_want, "spotsigs_join at $tau: every pair of mixed rows with a common signature");
	($out, $err) = bounded("SELECT count(*) FROM spotsigs_join_rs('two', 'id', 'sig', 'two', 'id', 'sig', $tau)", 60);
	is($out, '4', "spotsigs_join_rs at $tau on two rows");
}
my ($out, $err) = bounded("SET spotsigs.similarity_threshold = 1e-30;
	SELECT count(DISTINCT cluster), count(*) FROM spotsigs_clusters('s', 'id', 'sig')", 60);
is($out, '1|2000', 'spotsigs_clusters at the GUC threshold 1e-30: one cluster of 2000');

# A long join at a tiny threshold ends on statement_timeout within a second of it.
my $secs;
($out, $err, $secs) = bounded("SET statement_timeout = '1s';
	SELECT count(*) FROM spotsigs_join('apart', 'id', 'sig', 1e-20, 2, 'bruteforce')", 60);
like($err, qr/57014.*canceling statement due to statement timeout/, 'statement_timeout cancels a tiny-threshold join');
ok($secs < 2.0, sprintf('within a second of the timeout (%.2f s)', $secs));

# pg_cancel_backend and pg_terminate_backend while matching at a tiny threshold.
for my $how ('cancel', 'terminate') {
	my ($in, $o, $e) = ('', '', '');
	my $h = IPC::Run::start(
		[ 'psql', '-XAtq', '-d', $node->connstr('postgres'), '-c',
		  "SELECT count(*) FROM spotsigs_join('apart', 'id', 'sig', 1e-20, 2, 'bruteforce')" ],
		'<', \$in, '>', \$o, '2>', \$e, IPC::Run::timeout(60));
	ok($node->poll_query_until('postgres',
		"SELECT count(*) = 1 FROM pg_stat_activity WHERE state = 'active' AND query LIKE 'spotsigs_join: matching%'"),
		"$how: the join is matching");
	my $t0 = time;
	$node->safe_psql('postgres',
		"SELECT pg_${how}_backend(pid) FROM pg_stat_activity WHERE state = 'active' AND query LIKE 'spotsigs_join: matching%'");
	eval { $h->finish; };
	if ($@) {
		$h->kill_kill;
		$hung = 1;
	}
	my $elapsed = time - $t0;
	like($e, $how eq 'cancel' ? qr/canceling statement due to user request/
		: qr/terminating connection due to administrator command/, "pg_${how}_backend ends the join");
	ok($elapsed < 2.0, sprintf("$how: within two seconds (%.2f s)", $elapsed));
}

ok(!$hung, 'no statement outlived its time bound');
is($node->safe_psql('postgres', 'SELECT 1'), '1', 'the server still answers');
unlike(slurp_file($node->logfile), qr/terminated by signal|server process .* was terminated/,
	'no backend crashed');
$node->stop('immediate');
done_testing();
