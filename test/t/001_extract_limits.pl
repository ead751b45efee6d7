# Extraction of very large documents: handled exactly, and cancellable by statement_timeout.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);

my $node = PostgreSQL::Test::Cluster->new('extract');
$node->init;
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION spotsigs');

my $unit = 'the quick brown fox jumps over the lazy dog and the cat is asleep ';

# length(spotsigs(repeat(unit, n))) is a*n + b (the chains cut at the end make b); fit a and b
# on two small documents and predict the ~340 MB one exactly.
my $l1 = $node->safe_psql('postgres', "SELECT length(spotsigs(repeat('$unit', 1000)))");
my $l2 = $node->safe_psql('postgres', "SELECT length(spotsigs(repeat('$unit', 2000)))");
my $a = ($l2 - $l1) / 1000;
my $b = $l1 - 1000 * $a;
ok($a > 0 && $a == int($a), "the unit text yields a whole number of signatures per copy ($a)");
my $n = 5_000_000;    # 68 bytes * 5M = 340 MB
my $t0 = time;
my $big = $node->safe_psql('postgres', "SELECT length(spotsigs(repeat('$unit', $n)))");
my $full = time - $t0;
is($big, $a * $n + $b, 'a 340 MB document is extracted exactly');
note(sprintf('340 MB extraction took %.2f s', $full));

# A statement_timeout that fires during extraction cancels it promptly.
$t0 = time;
my ($ret, $out, $err) = $node->psql('postgres',
	"SET statement_timeout = '500ms'; SELECT length(spotsigs(repeat('$unit', $n)))");
my $elapsed = time - $t0;
isnt($ret, 0, 'the timed-out statement fails');
like($err, qr/canceling statement due to statement timeout/, 'with the statement-timeout error');
# The bound includes starting psql and freeing the 340 MB; on a loaded machine that is most of it.
ok($elapsed < 0.5 + 2.0 && $elapsed < $full,
	sprintf('and stops within 2 s of the timeout, before the full run would end (%.2f s vs %.2f s)',
		$elapsed, $full));
is($node->safe_psql('postgres', 'SELECT 1'), '1', 'the server still answers');

$node->stop;
done_testing();
