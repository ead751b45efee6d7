# spotsigs index under concurrency: 8 sessions insert (and delete now and then) while VACUUM runs
# over and over, and inserts merge the pending list whenever it passes 64 kB; afterwards no entry is
# lost or duplicated and the index answers exactly.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use IPC::Run;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('index_concurrent');
$node->init;
$node->append_conf('postgresql.conf', "autovacuum = off\nmax_connections = 30\n");
$node->start;
$node->safe_psql('postgres', q{
CREATE EXTENSION spotsigs;
CREATE FUNCTION mk(n int) RETURNS spotsig LANGUAGE sql IMMUTABLE AS $$
  SELECT ('{' || string_agg(to_hex(((n / 5) * 37 + k) % 50000 + 1) || ':' || (1 + k % 2), ',') || '}')::spotsig
  FROM generate_series(0, 15 + n % 30) k WHERE (k + n) % 7 <> 0 $$;
CREATE SEQUENCE t_seq START 2001;
CREATE TABLE t (id int PRIMARY KEY, sig spotsig);
INSERT INTO t SELECT n, mk(n) FROM generate_series(1, 2000) n;
CREATE INDEX t_sig ON t USING spotsigs (sig) WITH (pending_list_limit = 64);
});

my $dir = PostgreSQL::Test::Utils::tempdir;
my $script = "$dir/insert.sql";
open my $fh, '>', $script or die;
print $fh "\\set d random(1, 2000)\n";
print $fh "INSERT INTO t SELECT n, mk(n::int) FROM nextval('t_seq') n;\n";
print $fh "INSERT INTO t SELECT n, mk(n::int) FROM nextval('t_seq') n;\n";
print $fh "DELETE FROM t WHERE id = :d;\n";
close $fh;
my $vac = "$dir/vacuum.sql";
open $fh, '>', $vac or die;
print $fh "VACUUM t;\nSELECT pg_sleep(0.02);\n" for 1 .. 60;
close $fh;

my $connstr = $node->connstr('postgres');
my ($vout, $verr, $pout, $perr) = ('', '', '', '');
my $vh = IPC::Run::start(['psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', $connstr, '-f', $vac], '>', \$vout, '2>', \$verr);
my $ok = IPC::Run::run(['pgbench', '-n', '-c', '8', '-j', '2', '-t', '150', '-f', $script, $connstr], '>', \$pout, '2>', \$perr);
my $vok = $vh->finish;
ok($ok, '8 inserting sessions finished') or diag($perr);
ok($vok, 'VACUUM ran concurrently without errors') or diag($verr);
like($pout, qr/number of failed transactions: 0/, 'no failed transactions') if $pout =~ /failed transactions/;

$node->safe_psql('postgres', 'VACUUM t');
like($node->safe_psql('postgres', "SELECT spotsigs_index_check('t_sig')"), qr/^ok/, 'index check passes (no row indexed twice)');
my $heap = $node->safe_psql('postgres', 'SELECT count(*) FROM t');
ok($heap > 2000 + 8 * 150, "the table holds the new rows ($heap)");
is($node->safe_psql('postgres', 'SET enable_seqscan = off; SELECT count(*), count(DISTINCT id) FROM (SELECT id FROM t ORDER BY sig <-> mk(1)) s'),
	"$heap|$heap", 'an ordered index scan returns every row exactly once');
is($node->safe_psql('postgres', "SET enable_seqscan = off; SET spotsigs.similarity_threshold = 1;
	SELECT count(*) FROM t a WHERE NOT (a.id = ANY (ARRAY(SELECT b.id FROM t b WHERE b.sig % a.sig)))"),
	'0', 'every row finds itself through the index');
my $q = "SET spotsigs.similarity_threshold = 0.44;
	SELECT q.id, (SELECT array_agg(b.id ORDER BY b.id) FROM t b WHERE b.sig % q.sig) FROM t q WHERE q.id % 23 = 0 ORDER BY q.id";
is($node->safe_psql('postgres', "SET enable_seqscan = off; $q"),
	$node->safe_psql('postgres', "SET enable_indexscan = off; SET enable_bitmapscan = off; $q"),
	'index results equal a sequential scan');

$node->stop;
done_testing();
