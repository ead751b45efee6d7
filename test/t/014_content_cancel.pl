# The content measure's statistics serve a cancel within tens of milliseconds (every long loop,
# sort and read stride of theirs looks at it), and the progress text in pg_stat_activity.query
# keeps what track_activity_query_size allows, cut at a character boundary.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use Time::HiRes qw(time);

my $node = PostgreSQL::Test::Cluster->new('content_cancel');
$node->init(extra => [ '--encoding=UTF8', '--locale=C.UTF-8' ]);
$node->append_conf('postgresql.conf', "spotsigs.max_threads = 2\ntrack_activity_query_size = 4096\n");
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION spotsigs');

# 2,000 rows of 10,000 signatures, neighbours sharing half of theirs; the signatures are small
# typed-in numbers, so the statistics' buckets by top byte put every entry in one.
$node->safe_psql('postgres', q{
	CREATE TABLE cm (id int, sig spotsig);
	INSERT INTO cm SELECT i, ('{' || string_agg(to_hex(i::bigint * 5000 + k), ',') || '}')::spotsig
	FROM generate_series(1, 2000) i, generate_series(1, 10000) k GROUP BY i;
});

# A statement_timeout that fires while the rows are read or the statistics run: 57014, and the
# call ends within a second of it (it used to run on for up to 1.7 s after the timeout, through
# the read of 2,000 long rows and the sort of every entry, before it looked).
for my $case ([ 'spotsigs_template', 1000 ], [ 'spotsigs_template', 1600 ], [ 'spotsigs_join', 1000 ],
	[ 'spotsigs_join', 2000 ]) {
	my ($fn, $ms) = @$case;
	my $call = $fn eq 'spotsigs_join' ? "count(*) FROM spotsigs_join('cm', 'id', 'sig')"
	  : "length(spotsigs_template('cm', 'id', 'sig'))";
	my $t0 = time;
	my ($ret, $out, $err) = $node->psql('postgres', "SET statement_timeout = $ms; SELECT $call",
		extra_params => [ '-v', 'VERBOSITY=verbose' ]);
	my $late = time - $t0 - $ms / 1000;
	like($err, qr/57014: canceling statement due to statement timeout/, "$fn, timeout $ms ms: 57014");
	cmp_ok($late, '<', 1.0, sprintf("$fn, timeout $ms ms: ends %.2f s after the timeout", $late));
}

# The progress text: a query longer than track_activity_query_size, of three-byte characters.
my $euros = "\xe2\x82\xac" x 1500;
my ($in, $out, $err) = ('', '', '');
my $h = IPC::Run::start(
	[ 'psql', '-XAtq', '-d', $node->connstr('postgres'), '-c',
	  "SELECT count(*) FROM spotsigs_join('cm', 'id', 'sig') /* $euros */" ],
	'<', \$in, '>', \$out, '2>', \$err);
ok($node->poll_query_until('postgres',
	"SELECT count(*) = 1 FROM pg_stat_activity WHERE state = 'active' AND query LIKE 'spotsigs_join: matching%'"),
	'progress shows in pg_stat_activity.query');
# convert_to checks the text is valid UTF-8 (22021 otherwise).
my ($ret, $len, $perr) = $node->psql('postgres',
	"SELECT octet_length(convert_to(query, 'UTF8')) || ' ' || (right(query, 1) = U&'\\20AC') "
	  . "FROM pg_stat_activity WHERE state = 'active' AND query LIKE 'spotsigs_join: matching%'");
is($perr, '', 'the progress text is valid UTF-8');
like($len, qr/^(\d+) true$/, 'it ends with a whole character');
my ($bytes) = $len =~ /^(\d+)/;
cmp_ok($bytes // 0, '>', 4095 - 3, "it keeps what track_activity_query_size allows ($len bytes)");
cmp_ok($bytes // 0, '<=', 4095, 'and no more');
$node->safe_psql('postgres',
	"SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE state = 'active' AND query LIKE 'spotsigs_join: matching%'");
$h->finish;
like($err, qr/canceling statement due to user request/, 'pg_cancel_backend cancels the join');

$node->stop;
done_testing();
