# The locks that serialize writers ('locked' mode of the trigger, spotsigs_flag_batch) cannot be
# held by a role without privileges on the table: such a role holding every advisory lock key
# derived from the table (the keys these locks used to be) and LOCK TABLE refused to it, the
# writers go through. The bucket locks still serialize two writers of similar rows.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('trigger_lock_keys');
$node->init;
$node->start;

$node->safe_psql('postgres', q{
CREATE EXTENSION spotsigs;
CREATE ROLE intruder LOGIN;
CREATE TABLE lk (id int PRIMARY KEY, sig spotsig, dup int, sim float8);
CREATE INDEX ON lk USING spotsigs (sig);
CREATE TRIGGER lk_dedup BEFORE INSERT ON lk FOR EACH ROW
  EXECUTE FUNCTION spotsigs_flag_duplicates('sig', 'dup', 'sim', '0.5', 'best', 'locked');
CREATE TABLE fb (id int PRIMARY KEY, sig spotsig, dup int, sim float8);
INSERT INTO fb VALUES (1, '{1,2,3}'), (2, '{1,2,3}');
});

# The intruder holds every advisory key pair of the table (buckets 0-600) and the batch's old key.
my $intruder = $node->background_psql('postgres', extra_params => [ '-U', 'intruder' ]);
is($intruder->query_safe(q{
SELECT count(pg_advisory_lock('lk'::regclass::oid::int, b)) FROM generate_series(0, 600) b;
SELECT pg_advisory_lock(hashtext('spotsigs_flag_batch'), 'fb'::regclass::oid::int);
SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid();}),
	"601\n\n602", 'the intruder holds 602 advisory locks');
my ($rc, $out, $err) = $node->psql('postgres', 'BEGIN; LOCK TABLE fb IN SHARE UPDATE EXCLUSIVE MODE',
	extra_params => [ '-U', 'intruder' ]);
like($err, qr/permission denied for table fb/, 'the intruder may not lock the table');

# Writers are not held up (lock_timeout turns a wait into an error).
($rc, $out, $err) = $node->psql('postgres', q{
SET lock_timeout = '2s';
INSERT INTO lk VALUES (1, '{1,2,3,4,5}'), (2, '{1,2,3,4,5}'), (3, '{1,2,3,4,5,6,7,8,9,10,11,12}');
SELECT id, dup, sim FROM lk ORDER BY id;});
is($rc, 0, "a writer in 'locked' mode is not blocked by the intruder's locks") or diag($err);
is($out, "1||\n2|1|1\n3||", 'and flags as usual');
($rc, $out, $err) = $node->psql('postgres', q{
SET lock_timeout = '2s';
SELECT spotsigs_flag_batch('fb', 'id', 'sig', 'dup', 'sim', 0.5, 1);
SELECT id, dup, sim FROM fb ORDER BY id;});
is($rc, 0, 'spotsigs_flag_batch is not blocked by the intruder') or diag($err);
is($out, "1\n1||\n2|1|1", 'and flags as usual');
$intruder->quit;

# The bucket locks still serialize writers: while a transaction holds the bucket of a 5-signature
# row, a writer of a row of length 5 waits (here: until its lock_timeout), one of length 12 at
# threshold 0.5 (buckets 5 to 25) waits too, and a plain INSERT through another table does not.
my $holder = $node->background_psql('postgres');
$holder->query_safe(q{BEGIN; INSERT INTO lk VALUES (10, '{21,22,23,24,25}');});
($rc, $out, $err) = $node->psql('postgres', q{
SET lock_timeout = '300ms'; INSERT INTO lk VALUES (11, '{21,22,23,24,26}');});
like($err, qr/lock timeout/, 'a writer of the same length waits for the holder');
($rc, $out, $err) = $node->psql('postgres', q{
SET lock_timeout = '300ms'; INSERT INTO lk VALUES (12, '{31,32,33,34,35,36,37,38,39,40,41,42}');});
like($err, qr/lock timeout/, 'a writer of a length in range waits for the holder');
($rc, $out, $err) = $node->psql('postgres', q{
SET lock_timeout = '300ms'; INSERT INTO fb VALUES (3, '{21,22,23,24,25}');});
is($rc, 0, 'a write to another table does not wait') or diag($err);
$holder->query_safe('COMMIT');
is($node->safe_psql('postgres', q{
INSERT INTO lk VALUES (11, '{21,22,23,24,25}'); SELECT dup FROM lk WHERE id = 11;}),
	'10', 'after the commit the next writer sees and flags the row');
$holder->quit;

$node->stop;
done_testing();
