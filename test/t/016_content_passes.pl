# The content measure past spotsigs.join_memory_limit: its statistics run in passes over the rows
# (content_passes.hpp), giving the template of a call without a limit, and the join of the rows
# without the template then runs as the plain join does (in passes when it does not fit). The
# default spotsigs_join, spotsigs_clusters, spotsigs_join_rs without a threshold,
# spotsigs_template and spotsigs_analyze give under a small limit exactly what they give
# without one; rows that change between reads are refused (55000), a limit too small even for
# the passes fails with 53200, and a cancel stops the passes.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);

my $node = PostgreSQL::Test::Cluster->new('content_passes');
$node->init;
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION spotsigs');

# 20,001 pages: 6,667 stories of 10 to 59 signatures, each copied (edited) onto three pages of
# different sites among 20; every site has a template of 6 signatures, and every page 2 of its
# own. Some short stories lose to their sites' templates, so the template holds story signatures
# too; a few pages are empty.
$node->safe_psql('postgres', q{
	CREATE TABLE pages AS
	  SELECT 3 * s + c AS id,
	         ('{' || (SELECT string_agg(to_hex(x), ',') FROM (
	             SELECT ((s * 7 + c * 5) % 20) * 1000 + k AS x FROM generate_series(1, 6) k
	             UNION ALL SELECT 1000000 + s * 100 + k FROM generate_series(1, 10 + s % 50) k WHERE (k + c) % 9 <> 0
	             UNION ALL SELECT 90000000 + (3 * s + c) * 10 + k FROM generate_series(1, 2) k) q) || '}')::spotsig AS sig
	  FROM generate_series(0, 6666) s, generate_series(0, 2) c;
	INSERT INTO pages VALUES (-1, '{}'), (-2, '{}');
	CREATE TABLE evens AS SELECT * FROM pages WHERE id % 2 = 0;
	CREATE TABLE odds AS SELECT * FROM pages WHERE id % 2 <> 0;
});

# Runs $query (a SELECT) without a limit and under $limit with DEBUG1 messages; returns the rows
# it gives beyond the unlimited query's, those it misses, its row count and the messages.
sub compare {
	my ($query, $limit) = @_;
	$node->safe_psql('postgres', qq{
		DROP TABLE IF EXISTS want, got;
		CREATE TABLE want AS $query;
	});
	my ($ret, $out, $err) = $node->psql('postgres', qq{
		SET client_min_messages = debug1; SET spotsigs.join_memory_limit = '$limit';
		CREATE TABLE got AS $query;});
	die "$query failed: $err" if $ret != 0;
	my $res = $node->safe_psql('postgres', q{
		SELECT (SELECT count(*) FROM (TABLE got EXCEPT ALL TABLE want) d) || ' ' ||
		       (SELECT count(*) FROM (TABLE want EXCEPT ALL TABLE got) d) || ' ' ||
		       (SELECT count(*) FROM got)});
	return (split(/ /, $res), $err);
}

# The statistics ran in passes within the limit (their DEBUG1 line): its reads and peak.
sub stats_passes {
	my ($err, $fn, $limit_kb, $what, $one_group) = @_;
	if ($err =~ /$fn: content statistics in passes: (\d+) template signatures among \d+ held by two or more rows, \d+ rows read (\d+) times, (\d+) signature ranges, accounted peak (\d+) kB/) {
		my ($templates, $reads, $ranges, $peak) = ($1, $2, $3, $4);
		cmp_ok($templates, '>', 0, "$what: template signatures found ($templates)");
		cmp_ok($reads, '>=', 5, "$what: the rows read again for the passes ($reads reads, $ranges ranges)");
		cmp_ok($peak, '<=', $limit_kb, "$what: the statistics held at most the limit ($peak kB)");
		# Where the round's samples and pairs fit in one group: the first read, one read of each
		# range's entries in the first round, and the overlap reads shared by all ranges (two
		# here, in each round); the second round judges the first's samples again. Not a read
		# of the entries and of the overlaps per range.
		cmp_ok($reads, '<=', 1 + $ranges / 2 + 4, "$what: the ranges share their overlap reads ($reads reads)")
			if $one_group;
	} else {
		fail("$what: the statistics ran in passes");
		diag($err);
	}
}

for my $case ([ "SELECT * FROM spotsigs_join('pages', 'id', 'sig')", 'spotsigs_join', '12MB', 10000, 1 ],
	[ "SELECT * FROM spotsigs_join('pages', 'id', 'sig', NULL, 1)", 'spotsigs_join', '16MB', 10000, 0, 1 ],
	[ "SELECT * FROM spotsigs_clusters('pages', 'id', 'sig')", 'spotsigs_clusters', '12MB', 20000, 1 ],
	[ "SELECT spotsigs_template('pages', 'id', 'sig')::text AS t", 'spotsigs_template', '8MB', 0, 0 ],
	[ "SELECT spotsigs_template('pages', 'id', 'sig')::text AS t", 'spotsigs_template', '4MB', 0, 0 ]) {
	my ($query, $fn, $limit, $min, $join_passes, $one_group) = @$case;
	my ($extra, $missing, $rows, $err) = compare($query, $limit);
	my ($mb) = $limit =~ /^(\d+)MB$/;
	is("$extra $missing", '0 0', "$query, limit $limit: the rows without a limit");
	cmp_ok($rows, '>', $min, "$query, limit $limit: rows given ($rows)");
	stats_passes($err, $fn, $mb * 1024, "$query, limit $limit", $one_group);
	next unless $join_passes;
	like($err, qr/$fn: \d+ passes within/, "$query, limit $limit: the join of the contents in passes");
	# Each pass skips the rows outside its lengths by the lengths without the template that the
	# join's first read noted, instead of reading every row and removing the template again.
	my $skipped = 0;
	$skipped += $1 while $err =~ /(\d+) values outside the pass skipped by their noted length/g;
	cmp_ok($skipped, '>', 20000, "$query, limit $limit: the passes skip rows by their noted length ($skipped)");
}

# More rows than the notes of lengths without the template may take (a sixteenth of the limit:
# about 46,000 at 12MB): the rows past them go unnoted, and the passes read those whole and keep
# them by their length; the pairs are still those without a limit.
$node->safe_psql('postgres', q{
	CREATE TABLE crowded AS TABLE pages;
	INSERT INTO crowded SELECT 1000000 + i, '{}' FROM generate_series(1, 40000) i;
});
{
	my ($extra, $missing, $rows, $err) = compare("SELECT * FROM spotsigs_join('crowded', 'id', 'sig')", '12MB');
	is("$extra $missing", '0 0', 'rows past the notes: the rows without a limit');
	cmp_ok($rows, '>', 10000, "rows past the notes: rows given ($rows)");
	like($err, qr/spotsigs_join: \d+ passes within/, 'rows past the notes: the join of the contents in passes');
	my @skipped = $err =~ /(\d+) values outside the pass skipped by their noted length/g;
	cmp_ok(scalar(@skipped), '>', 0, 'rows past the notes: the passes skip the noted ones');
	note('most skipped by a note in one pass: ' . (sort { $b <=> $a } @skipped)[0]);
	cmp_ok((sort { $b <=> $a } @skipped)[0], '<', 60001 - 10000,
		'rows past the notes: the unnoted ones are not skipped by a note');
}

# The template is not empty and holds story signatures as well as the sites' (the short stories).
my $t = $node->safe_psql('postgres', q{
	SELECT count(*) FILTER (WHERE h < 100000) || ' ' || count(*) FILTER (WHERE h >= 1000000 AND h < 90000000)
	FROM (SELECT ('x' || lpad(x, 16, '0'))::bit(64)::bigint AS h
	      FROM regexp_split_to_table(trim(both '{}' from spotsigs_template('pages', 'id', 'sig')::text), ',') x) q});
like($t, qr/^120 [1-9]\d*$/, "the template: the 120 site signatures and some story signatures ($t)");

# spotsigs_join_rs without a threshold (the template computed from s in passes) and
# spotsigs_analyze under a limit: what they give without one.
{
	my ($extra, $missing, $rows, $err) =
		compare("SELECT * FROM spotsigs_join_rs('evens', 'id', 'sig', 'odds', 'id', 'sig')", '12MB');
	is("$extra $missing", '0 0', 'spotsigs_join_rs without a threshold, limit 12MB: the rows without a limit');
	cmp_ok($rows, '>', 1000, "spotsigs_join_rs, limit 12MB: rows given ($rows)");
	stats_passes($err, 'spotsigs_join_rs', 12288, 'spotsigs_join_rs, limit 12MB', 1);
}
$node->safe_psql('postgres', q{
	SELECT spotsigs_analyze('pages', 'sig', 'id');
	CREATE TABLE analyzed AS SELECT template::text AS t FROM spotsigs_stats WHERE relation = 'pages'::regclass;
});
my ($ret, $out, $err) = $node->psql('postgres', q{
	SET client_min_messages = debug1; SET spotsigs.join_memory_limit = '4MB';
	SELECT spotsigs_analyze('pages', 'sig', 'id');});
is($ret, 0, 'spotsigs_analyze, limit 4MB: runs');
stats_passes($err, 'spotsigs_analyze', 4096, 'spotsigs_analyze, limit 4MB');
is($node->safe_psql('postgres', q{
	SELECT (SELECT t FROM analyzed) = (SELECT template::text FROM spotsigs_stats WHERE relation = 'pages'::regclass)
	   AND (SELECT t FROM analyzed) = spotsigs_template('pages', 'id', 'sig')::text}),
	't', 'spotsigs_analyze, limit 4MB: the template stored without a limit');

# Rows that differ from one read to the next: refused with 55000 (the passes need the first
# read's rows every time).
$node->safe_psql('postgres', q{
	CREATE VIEW shifting AS SELECT id, sig FROM pages WHERE random() < 0.999});
($ret, $out, $err) = $node->psql('postgres', q{
	SET spotsigs.join_memory_limit = '4MB';
	SELECT length(spotsigs_template('shifting', 'id', 'sig')::text)}, extra_params => [ '-v', 'VERBOSITY=verbose' ]);
like($err, qr/55000: the rows of public\.shifting changed between two reads/, 'a view whose rows change: 55000');
($ret, $out, $err) = $node->psql('postgres', q{
	SET spotsigs.join_memory_limit = '12MB';
	SELECT count(*) FROM spotsigs_join('shifting', 'id', 'sig')}, extra_params => [ '-v', 'VERBOSITY=verbose' ]);
like($err, qr/55000: the rows of public\.shifting changed between two reads/, 'the default join of it: 55000');

# A repeated id: the passes' first read finds it (22023).
$node->safe_psql('postgres', q{CREATE TABLE twice AS TABLE pages; INSERT INTO twice SELECT * FROM pages WHERE id = 7});
($ret, $out, $err) = $node->psql('postgres', q{
	SET spotsigs.join_memory_limit = '4MB';
	SELECT length(spotsigs_template('twice', 'id', 'sig')::text)}, extra_params => [ '-v', 'VERBOSITY=verbose' ]);
like($err, qr/22023: id column of relation public\.twice is not unique/, 'a repeated id in passes: 22023');
like($err, qr/The id 7 occurs more than once/, 'a repeated id in passes: the id named');

# A cancel (statement_timeout) while the passes run: 57014, within a second.
{
	my $t0 = time;
	($ret, $out, $err) = $node->psql('postgres', q{
		SET spotsigs.join_memory_limit = '4MB'; SET statement_timeout = 400;
		SELECT length(spotsigs_template('pages', 'id', 'sig')::text)}, extra_params => [ '-v', 'VERBOSITY=verbose' ]);
	my $late = time - $t0 - 0.4;
	like($err, qr/57014: canceling statement due to statement timeout/, 'a timeout in the passes: 57014');
	cmp_ok($late, '<', 1.0, sprintf('a timeout in the passes: ends %.2f s after it', $late));
}

$node->stop;
done_testing();
