# spotsigs_join, spotsigs_clusters and spotsigs_join_rs past spotsigs.join_memory_limit: they run
# in passes over ranges of document lengths and return exactly the rows of a call without a limit
# (join_passes.hpp); where even the smallest pass cannot fit, the join fails with SQLSTATE 53200
# and says what limit would be needed.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use lib 'test/t';
use JoinTables;

my $node = PostgreSQL::Test::Cluster->new('join_passes');
$node->init;
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION spotsigs');

# docs and wide (JoinTables.pm): values of wide stored out of line are read after the rows
# (their length is read from the first chunk when a pass skips them); its two empty ones give no
# pairs, but each is a cluster of its own.
create_join_table($node, $_) for qw(docs wide);

# Out-of-line values the passes skipped by the lengths the first read noted (not fetching them).
my $skipped_by_note = 0;
# Per call: the passes that continued a probe range over further partners (join_passes.hpp).
my %continuing;
# Per call and limit: the accounted peak of the first read (kB).
my %first_read;
# Per call and limit: the largest accounted peak of a pass, with what the call keeps beside (kB).
my %pass_peak;

# The rows of each call without a limit, as their count and a digest of the multiset: the sum of a
# 64-bit hash of every row (equal multisets give equal digests; a row more, less or changed moves
# the sum), so that a call's rows need neither be stored nor sorted to be compared, and the call
# without a limit runs once however many limits test it. Where the digests differ, the rows are
# stored and compared one by one to say what differs.
my %want;
sub digest_query {
	my ($call) = @_;
	return "SELECT count(*) || ' ' || coalesce(sum(hash_record_extended(t, 0)::numeric), 0) FROM $call t";
}

# Runs $call (a set-returning call of spotsigs_join, spotsigs_join_rs or spotsigs_clusters) without
# a limit and under $limit (with DEBUG1 messages) and returns the rows it gives beyond the call
# without a limit, those it misses, its row count and the number of passes it reported (0 when
# it ran in one).
sub compare {
	my ($call, $limit) = @_;
	my ($fn) = $call =~ /^(\w+)\(/;
	$want{$call} //= $node->safe_psql('postgres', digest_query($call));
	my ($ret, $out, $err) = $node->psql('postgres', qq{
		SET client_min_messages = debug1; SET spotsigs.join_memory_limit = '$limit';
		${\digest_query($call)};});
	die "$call failed: $err" if $ret != 0;
	my $passes = $err =~ /$fn: (\d+) passes (?:within|above)/ ? $1 : 0;
	$continuing{$call} = $err =~ /passes (?:within|above) \S+ \((\d+) of them over further partners/ ? $1 : 0;
	# The message says "within" exactly when its accounted peak is (in kB, against the limit).
	if ($err =~ /$fn: \d+ passes (within|above) .* accounted peak (\d+) kB \(first read (\d+) kB, passes (\d+) kB/) {
		my ($word, $peak, $first) = ($1, $2, $3);
		$pass_peak{"$call $limit"} = $4;
		my ($n, $unit) = $limit =~ /^(\d+)(MB|GB)$/;
		my $limit_kb = $n * ($unit eq 'GB' ? 1024 * 1024 : 1024);
		# (The peak is printed in whole kB, rounded down: equal to the limit, it may be either.)
		ok($peak == $limit_kb || $word eq ($peak < $limit_kb ? 'within' : 'above'),
			"$call, limit $limit: says '$word' of a peak of $peak kB");
		$first_read{"$call $limit"} = $first;
	}
	$skipped_by_note += $1 while $err =~ /(\d+) values outside the pass skipped by their noted length/g;
	my ($rows) = split(/ /, $out);
	return (0, 0, $rows, $passes) if $out eq $want{$call};
	my $res = $node->safe_psql('postgres', qq{
		DROP TABLE IF EXISTS want, got;
		CREATE TABLE want AS SELECT * FROM $call;
		SET spotsigs.join_memory_limit = '$limit';
		CREATE TABLE got AS SELECT * FROM $call;
		RESET spotsigs.join_memory_limit;
		SELECT (SELECT count(*) FROM (TABLE got EXCEPT ALL TABLE want) d) || ' ' ||
		       (SELECT count(*) FROM (TABLE want EXCEPT ALL TABLE got) d)});
	my ($extra, $missing) = split(/ /, $res);
	# The digests differed: that fails even when the stored rows (a second run of each call)
	# happen to agree, counted as one row each way.
	($extra, $missing) = (1, 1) if $extra == 0 && $missing == 0;
	return ($extra, $missing, $rows, $passes);
}

# Checks $call under $limit against the call without a limit: the same rows, more than $min of
# them, and passes (at least 2; none for a limit of 1GB).
sub check_passes {
	my ($call, $limit, $min) = @_;
	my ($extra, $missing, $rows, $passes) = compare($call, $limit);
	my $what = "$call, limit $limit";
	is("$extra $missing", '0 0', "$what: the rows of the call without a limit");
	cmp_ok($rows, '>', $min, "$what: rows given ($rows)");
	if ($limit eq '1GB') {
		is($passes, 0, "$what: one pass");
	} else {
		cmp_ok($passes, '>=', 2, "$what: ran in passes ($passes)");
	}
}

for my $case ([ 'docs', 0.9, 1, '10MB' ], [ 'docs', 0.9, 2, '12MB' ], [ 'docs', 0.6, 2, '24MB' ],
	[ 'docs', 0.3, 2, '40MB' ], [ 'wide', 0.5, 2, '32MB' ], [ 'docs', 0.6, 2, '1GB' ]) {
	my ($table, $tau, $threads, $limit) = @$case;
	check_passes("spotsigs_join('$table', 'id', 'sig', $tau, $threads)", $limit, 1000);
}

# The first read of a call past the limit charges what each row adds before it takes it (its
# document, its prefix entries, the id and length notes the passes need) and stops at the first
# row that would take it past the limit: it holds the limit at most.
for my $case ([ "spotsigs_join('docs', 'id', 'sig', 0.6, 2)", '24MB', 24 ],
	[ "spotsigs_join('docs', 'id', 'sig', 0.9, 1)", '10MB', 10 ], [ "spotsigs_join('wide', 'id', 'sig', 0.5, 2)", '32MB', 32 ],
	[ "spotsigs_clusters('docs', 'id', 'sig', 0.6, 2)", '24MB', 24 ]) {
	my ($call, $limit, $mb) = @$case;
	check_passes($call, $limit, 1000) unless defined $first_read{"$call $limit"};
	cmp_ok($first_read{"$call $limit"} // 1e9, '<=', $mb * 1024, "$call, limit $limit: the first read within the limit");
}

# Every pass holds its documents, its matcher's structures (the prefix-group matcher's candidate
# lists by the slabs they take), its sort scratch and the pairs in flight to the result within
# the limit, whatever the limit and the matcher (at 16MB a pass accounted 20 MB: the pairs a pass
# dropped as another pass's stayed counted in flight, and the candidate lists overshot). The
# first read stays within it too, for both sides of an R-S join.
for my $case ([ 'join', 'docs', 0.9, 1, '8MB' ], [ 'join', 'docs', 0.3, 2, '16MB' ], [ 'join', 'docs', 0.3, 2, '24MB' ],
	[ 'join', 'docs', 0.3, 2, '40MB' ], [ 'clusters', 'docs', 0.3, 2, '16MB' ], [ 'clusters', 'docs', 0.5, 2, '40MB' ],
	[ 'join_rs', 'docs', 0.3, 2, '24MB' ], [ 'join_rs', 'docs', 0.3, 2, '40MB' ]) {
	my ($fn, $table, $tau, $threads, $limit) = @$case;
	my $call = $fn eq 'join_rs'
		? "spotsigs_join_rs('$table', 'id', 'sig', 'other', 'id', 'sig', $tau, $threads)"
		: "spotsigs_$fn('$table', 'id', 'sig', $tau, $threads)";
	create_join_table($node, 'other') if $fn eq 'join_rs';
	check_passes($call, $limit, 1000);
	my ($mb) = $limit =~ /^(\d+)MB$/;
	cmp_ok($pass_peak{"$call $limit"} // 1e9, '<=', $mb * 1024, "$call, limit $limit: every pass within the limit");
	cmp_ok($first_read{"$call $limit"} // 1e9, '<=', $mb * 1024, "$call, limit $limit: the first read within the limit");
}

# What a call holds it gives back to the kernel when it frees it: the backend's private resident
# memory (anonymous, as /proc counts it at DEBUG2) is back below the limit after every pass, and
# at most the limit and a fixed overhead at its high-water mark (the backend's own memory and the
# result rows the tuplestore keeps, up to work_mem's 4 MB; its file pages and the shared buffers
# it touched are counted apart). Large blocks are mapped and unmapped (read_pipeline.cpp); served
# from glibc's per-thread arenas they stayed resident, 2-3 times what the call held.
for my $case ([ "spotsigs_join('docs', 'id', 'sig', 0.6, 2)", '24MB', 24 ],
	[ "spotsigs_join('docs', 'id', 'sig', 0.3, 2)", '40MB', 40 ]) {
	my ($call, $limit, $mb) = @$case;
	my ($mret, $mout, $merr) = $node->psql('postgres',
		"SET client_min_messages = debug2; SET spotsigs.join_memory_limit = '$limit'; SELECT count(*) FROM $call");
	die "$call failed: $merr" if $mret != 0;
	my @after_pass = $merr =~ /a pass ended: resident anonymous (\d+) kB/g;
	cmp_ok(scalar(@after_pass), '>=', 2, "$call, limit $limit: memory logged after each pass");
	my $worst = (sort { $b <=> $a } @after_pass)[0] // 1e9;
	cmp_ok($worst, '<=', $mb * 1024, "$call, limit $limit: private memory back below the limit after every pass ($worst kB at most)");
	my ($file, $shmem, $hwm) = $merr =~ /the passes ended: resident anonymous \d+ kB, files (\d+) kB, shared memory (\d+) kB \(process high-water (\d+) kB\)/;
	my $private_hwm = defined $hwm ? $hwm - $file - $shmem : 1e9;
	cmp_ok($private_hwm, '<=', ($mb + 12) * 1024, "$call, limit $limit: private high-water $private_hwm kB, within the limit and 12 MB");
}

# At a low threshold one length's partners (at 0.3, every length up to 3.3 times its own) take
# more than a pass holds: probe ranges are covered by passes over further partner ranges, with
# the same rows as without a limit, in fewer passes than one per length.
for my $case ([ 'docs', 0.3, 2, '16MB' ], [ 'docs', 0.2, 1, '16MB' ]) {
	my ($table, $tau, $threads, $limit) = @$case;
	my $call = "spotsigs_join('$table', 'id', 'sig', $tau, $threads)";
	check_passes($call, $limit, 1000);
	cmp_ok($continuing{$call}, '>', 0, "$call, limit $limit: passes over further partners ($continuing{$call})");
}

# spotsigs_clusters past the limit: its pairs from the join in passes, its union-find over the
# rows' ids (per row, not per signature). The rows of docs chain into long components at 0.6.
for my $case ([ 'docs', 0.6, 2, '24MB' ], [ 'docs', 0.9, 1, '10MB' ], [ 'wide', 0.5, 2, '32MB' ]) {
	my ($table, $tau, $threads, $limit) = @$case;
	check_passes("spotsigs_clusters('$table', 'id', 'sig', $tau, $threads)", $limit, 39999);
}
my $components = $node->safe_psql('postgres',
	"SET spotsigs.join_memory_limit = '32MB'; SELECT count(DISTINCT cluster) FROM spotsigs_clusters('wide', 'id', 'sig', 0.5, 2)");
cmp_ok($components, '<', 40000, "clusters join rows ($components clusters)");

# spotsigs_join_rs past the limit, in passes over the lengths of both sides: S (other) shares runs
# of signatures with docs (R) at other lengths, so pairs cross every pass boundary from both sides.
create_join_table($node, 'other');
# (The R-S matcher's structures take more than the self-join's: the limits are larger.)
for my $case ([ 'docs', 'other', 0.6, 2, '64MB' ], [ 'other', 'docs', 0.8, 1, '32MB' ],
	[ 'wide', 'other', 0.5, 3, '96MB' ], [ 'docs', 'other', 0.6, 2, '1GB' ], [ 'docs', 'other', 0.3, 2, '40MB' ]) {
	my ($r, $s, $tau, $threads, $limit) = @$case;
	my $call = "spotsigs_join_rs('$r', 'id', 'sig', '$s', 'id', 'sig', $tau, $threads)";
	check_passes($call, $limit, 1000);
	next if $limit eq '1GB';
	# Both sides' first reads share the limit: R stops at it, S is then only tallied.
	my ($mb) = $limit =~ /^(\d+)MB$/;
	cmp_ok($first_read{"$call $limit"} // 1e9, '<=', $mb * 1024, "$call, limit $limit: the first read within the limit");
}
my $rs_low = "spotsigs_join_rs('docs', 'id', 'sig', 'other', 'id', 'sig', 0.3, 2)";
cmp_ok($continuing{$rs_low}, '>', 0, "$rs_low: passes over further partners ($continuing{$rs_low})");

cmp_ok($skipped_by_note, '>', 0, "passes skip out-of-line values by their noted length ($skipped_by_note)");

# An id repeated in rows of very different lengths (no pass reads both) is still an error.
$node->safe_psql('postgres', q{
	CREATE TABLE dupl AS TABLE docs;
	INSERT INTO dupl SELECT 5, ('{' || (SELECT string_agg(to_hex(900000 + j), ',') FROM generate_series(0, 400) j) || '}')::spotsig});
my ($dret, $dout, $derr) = $node->psql('postgres',
	"SET spotsigs.join_memory_limit = '12MB'; SELECT count(*) FROM spotsigs_join('dupl', 'id', 'sig', 0.9, 2)");
like($derr, qr/ERROR:  id column of relation public.dupl is not unique\nDETAIL:  The id 5 occurs more than once\./,
	'a repeated id fails in passes too');
for my $case ([ "spotsigs_clusters('dupl', 'id', 'sig', 0.9, 2)", '12MB' ],
	[ "spotsigs_join_rs('other', 'id', 'sig', 'dupl', 'id', 'sig', 0.8, 2)", '32MB' ]) {
	my ($call, $limit) = @$case;
	($dret, $dout, $derr) = $node->psql('postgres', "SET spotsigs.join_memory_limit = '$limit'; SELECT count(*) FROM $call");
	like($derr, qr/ERROR:  id column of relation public.dupl is not unique\nDETAIL:  The id 5 occurs more than once\./,
		"$call: a repeated id fails in passes too");
}

# The content measure (no threshold) past the limit: test/t/016_content_passes.pl.

# 40,000 rows of one length: the smallest pass is the whole table.
$node->safe_psql('postgres', q{
	CREATE TABLE same AS SELECT i AS id, format('{%s,%s,%s}', to_hex(i), to_hex(i + 1), to_hex(i + 2))::spotsig AS sig
	FROM generate_series(1, 40000) i});
my ($ret, $out, $err) = $node->psql('postgres',
	"SET spotsigs.join_memory_limit = '1MB'; SELECT count(*) FROM spotsigs_join('same', 'id', 'sig', 0.9, 2)",
	extra_params => [ '-v', 'VERBOSITY=verbose' ]);
isnt($ret, 0, 'a join whose smallest pass does not fit fails');
like($err, qr/ERROR:  53200: spotsigs join exceeds spotsigs.join_memory_limit \(1MB\) even in passes/,
	'with SQLSTATE 53200, naming the limit');
like($err, qr/DETAIL:  Its smallest pass, the 40000 documents of length 3, needs more than \d+ MB\. Set spotsigs\.join_memory_limit to \d+MB or more \(every pass of this join fits that\)\./,
	'saying what the smallest pass needs and which limit to set');
# The limit the message names is one the call runs under, at once (it used to name the limit
# in force, or 1 MB more, round after round).
for my $case ([ "spotsigs_clusters('same', 'id', 'sig', 0.9, 2)", '2MB' ],
	[ "spotsigs_clusters('same', 'id', 'sig', 0.9, 2)", '3MB' ],
	[ "spotsigs_clusters('same', 'id', 'sig', 0.9, 2)", '8MB' ],
	[ "spotsigs_join('same', 'id', 'sig', 0.9, 2)", '1MB' ],
	[ "spotsigs_join('same', 'id', 'sig', 0.9, 1)", '3MB' ],
	[ "spotsigs_join('docs', 'id', 'sig', 0.3, 2)", '1MB' ],
	[ "spotsigs_join_rs('docs', 'id', 'sig', 'other', 'id', 'sig', 0.6, 2)", '1MB' ]) {
	my ($call, $limit) = @$case;
	($ret, $out, $err) = $node->psql('postgres',
		"SET spotsigs.join_memory_limit = '$limit'; SELECT count(*) FROM $call");
	my ($need) = $err =~ /Set spotsigs\.join_memory_limit to (\d+)MB or more/;
	ok(defined $need, "$call under $limit fails naming a limit") or diag($err);
	($ret, $out, $err) = $node->psql('postgres',
		"SET spotsigs.join_memory_limit = '${\($need // 0)}MB'; SELECT count(*) FROM $call");
	is($ret, 0, "$call: the limit it names (${\($need // 0)}MB) is enough") or diag($err);
}

done_testing();
