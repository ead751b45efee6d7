# The SQL join (SpotsigsJoin) under a small spotsigs.join_memory_limit, as the join functions
# under it (test/t/012_join_passes.pl): its first read charges what it keeps (both sides'
# pipelines with their batch buffers, the kept tuples, the notes of out-of-line values) to one
# budget, the limit, before it allocates, and goes to passes at the first row the budget refuses;
# each pass's pipelines hold within the limit too. So the join runs under 8, 16 and 24MB, its
# accounted first read and passes are within the limit, the backend's private memory at its
# high-water mark within the limit and a fixed overhead, and its rows are the join functions'.
# Self and two-table joins, inner, semi and anti. (With 8 MB of fixed batch buffers a side,
# the join under 8MB failed with 53200 even in passes.)
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use lib 'test/t';
use JoinTables;

my $node = PostgreSQL::Test::Cluster->new('sql_join_first_read');
$node->init;
$node->append_conf('postgresql.conf', "max_parallel_workers_per_gather = 0\n");
$node->start;
# docs, other and wide (JoinTables.pm): runs of signatures shared with the neighbours at every
# length from 3 to 62; wide has long rows stored out of line and two empty signatures.
$node->safe_psql('postgres', 'CREATE EXTENSION spotsigs');
create_join_table($node, $_) for qw(docs other wide);
$node->safe_psql('postgres', 'ANALYZE docs, other, wide');

# Each case: a name, the SQL join, the rows the join functions give for it, the limit, threads.
my @cases = (
	[ 'self inner', 'SELECT a.id AS x, b.id AS y FROM docs a JOIN docs b ON a.sig % spotsig_query(b.sig, 0.9) AND a.id < b.id',
	  q{SELECT id1, id2 FROM spotsigs_join('docs', 'id', 'sig', 0.9)}, '8MB', 1 ],
	[ 'self inner', 'SELECT a.id AS x, b.id AS y FROM docs a JOIN docs b ON a.sig % spotsig_query(b.sig, 0.9) AND a.id < b.id',
	  q{SELECT id1, id2 FROM spotsigs_join('docs', 'id', 'sig', 0.9)}, '8MB', 2 ],
	[ 'self inner', 'SELECT a.id AS x, b.id AS y FROM docs a JOIN docs b ON a.sig % spotsig_query(b.sig, 0.6) AND a.id < b.id',
	  q{SELECT id1, id2 FROM spotsigs_join('docs', 'id', 'sig', 0.6)}, '16MB', 2 ],
	[ 'self inner, out of line', 'SELECT a.id AS x, b.id AS y FROM wide a JOIN wide b ON a.sig % spotsig_query(b.sig, 0.5) AND a.id < b.id',
	  q{SELECT id1, id2 FROM spotsigs_join('wide', 'id', 'sig', 0.5)}, '24MB', 2 ],
	[ 'self anti', 'SELECT a.id AS x FROM wide a WHERE NOT EXISTS (SELECT 1 FROM wide b WHERE b.sig % spotsig_query(a.sig, 0.9) AND b.id <> a.id)',
	  q{SELECT id FROM wide EXCEPT SELECT id1 FROM spotsigs_join('wide', 'id', 'sig', 0.9)
	    EXCEPT SELECT id2 FROM spotsigs_join('wide', 'id', 'sig', 0.9)}, '8MB', 2 ],
	[ 'self semi', 'SELECT a.id AS x FROM docs a WHERE EXISTS (SELECT 1 FROM docs b WHERE b.sig % spotsig_query(a.sig, 0.9) AND b.id <> a.id)',
	  q{SELECT id1 FROM spotsigs_join('docs', 'id', 'sig', 0.9) UNION SELECT id2 FROM spotsigs_join('docs', 'id', 'sig', 0.9)},
	  '16MB', 2 ],
	[ 'R-S inner', 'SELECT a.id AS x, b.id AS y FROM docs a JOIN other b ON a.sig % spotsig_query(b.sig, 0.6)',
	  q{SELECT r_id, s_id FROM spotsigs_join_rs('docs', 'id', 'sig', 'other', 'id', 'sig', 0.6)}, '24MB', 3 ],
	[ 'R-S semi', 'SELECT r.id AS x FROM docs r WHERE EXISTS (SELECT 1 FROM other s WHERE s.sig % spotsig_query(r.sig, 0.6))',
	  q{SELECT DISTINCT r_id FROM spotsigs_join_rs('docs', 'id', 'sig', 'other', 'id', 'sig', 0.6)}, '16MB', 2 ],
	[ 'R-S anti', 'SELECT r.id AS x FROM other r WHERE NOT EXISTS (SELECT 1 FROM wide s WHERE s.sig % spotsig_query(r.sig, 0.6))',
	  q{SELECT id FROM other EXCEPT SELECT r_id FROM spotsigs_join_rs('other', 'id', 'sig', 'wide', 'id', 'sig', 0.6)},
	  '16MB', 2 ],
);

for my $case (@cases) {
	my ($name, $join, $want, $limit, $threads) = @$case;
	my ($mb) = $limit =~ /^(\d+)MB$/;
	my $what = "$name under $limit, $threads threads";
	like($node->safe_psql('postgres', "EXPLAIN (COSTS OFF) $join"), qr/Custom Scan \(SpotsigsJoin\)/,
		"$what: planned as a SpotsigsJoin");
	$node->safe_psql('postgres', "DROP TABLE IF EXISTS want, got; CREATE TABLE want AS $want");
	# A new session: the backend's high-water mark is this join's.
	my ($ret, $out, $err) = $node->psql('postgres',
		"SET client_min_messages = debug2; SET work_mem = '1MB'; SET spotsigs.max_threads = $threads; "
		  . "SET spotsigs.join_memory_limit = '$limit'; CREATE TABLE got AS $join");
	is($ret, 0, "$what: runs") or diag($err =~ /(ERROR:.*)/s ? $1 : '');
	like($err, qr/SpotsigsJoin: the rows do not fit spotsigs.join_memory_limit at once/, "$what: goes to passes");
	my ($word, $peak, $first, $passes) = $err =~
	  /SpotsigsJoin: \d+ passes (within|above) spotsigs.join_memory_limit, accounted peak (\d+) kB \(first read (\d+) kB, passes (\d+) kB/;
	is($word // 'none', 'within', "$what: DEBUG1 says the passes are within the limit");
	cmp_ok($first // 1e9, '<=', $mb * 1024, "$what: the first read within the limit (${\($first // 'none')} kB)");
	cmp_ok($passes // 1e9, '<=', $mb * 1024, "$what: every pass within the limit (${\($passes // 'none')} kB)");
	# The backend's private memory (its anonymous pages: the high-water mark less its file pages and
	# the shared buffers it touched) within the limit and 12 MB, as the functions' is: the backend's
	# own memory, the threads' malloc arenas and the tuplestores the passes read and write, which
	# work_mem bounds apart from the limit (1MB here: up to three of them).
	my ($file, $shmem, $hwm) = $err =~
	  /SpotsigsJoin: the passes ended: resident anonymous \d+ kB, files (\d+) kB, shared memory (\d+) kB \(process high-water (\d+) kB\)/;
	my $private = defined $hwm ? $hwm - $file - $shmem : 1e9;
	cmp_ok($private, '<=', ($mb + 12) * 1024, "$what: private high-water $private kB, within the limit and 12 MB");
	my @after_pass = $err =~ /SpotsigsJoin: a pass ended: resident anonymous (\d+) kB/g;
	my $worst = (sort { $b <=> $a } @after_pass)[0] // 1e9;
	cmp_ok($worst, '<=', ($mb + 12) * 1024, "$what: private memory after every pass $worst kB at most");
	is($node->safe_psql('postgres',
		'SELECT (SELECT count(*) FROM (TABLE got EXCEPT ALL TABLE want) d) || \' \' || '
		  . '(SELECT count(*) FROM (TABLE want EXCEPT ALL TABLE got) d) || \' \' || (SELECT count(*) FROM got)')
		  =~ s/ \d+$//r,
		'0 0', "$what: the rows of the join functions");
	isnt($node->safe_psql('postgres', 'SELECT count(*) FROM got'), '0', "$what: which are some");
}

# Under the built-in limit the same joins read once: no passes.
my ($ret, $out, $err) = $node->psql('postgres',
	"SET client_min_messages = debug1; SELECT count(*) FROM docs a JOIN other b ON a.sig % spotsig_query(b.sig, 0.6)");
is($ret, 0, 'the R-S join under the built-in limit runs');
unlike($err, qr/SpotsigsJoin: the rows do not fit/, 'in one pass');

$node->stop;
done_testing();
