# spotsigs index: corrupt links end in a prompt ERROR XX002, never a loop or a file error. A DATA
# page whose next link points at itself makes every walk of the DATA chain (spotsigs_index_stats,
# spotsigs_index_check, VACUUM) report a cycle; a metapage that names a block past the end of the
# index reports a link outside the index. Pages are rewritten in the files while the server is down.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Fcntl qw(SEEK_SET);

my $node = PostgreSQL::Test::Cluster->new('index_links');
# The rewritten pages carry no valid checksum, and initdb enables data checksums by default from
# PostgreSQL 18 on: the server would report the checksum (XX001) before the index sees the links.
$node->init($node->pg_version >= 18 ? (extra => ['--no-data-checksums']) : ());
$node->append_conf('postgresql.conf', "autovacuum = off\n");
$node->start;
$node->safe_psql('postgres', q{
	CREATE EXTENSION spotsigs;
	CREATE FUNCTION mk(n int) RETURNS spotsig LANGUAGE sql IMMUTABLE AS $$
	  SELECT ('{' || string_agg(to_hex(n * 131 + k), ',') || '}')::spotsig FROM generate_series(0, 20) k $$;
	CREATE TABLE t (id int PRIMARY KEY, sig spotsig);
	INSERT INTO t SELECT n, mk(n) FROM generate_series(1, 3000) n;
	CREATE INDEX t_sig ON t USING spotsigs (sig);
	CREATE TABLE m (id int PRIMARY KEY, sig spotsig);
	INSERT INTO m SELECT n, mk(n) FROM generate_series(1, 100) n;
	CREATE INDEX m_sig ON m USING spotsigs (sig);
	DELETE FROM t WHERE id % 10 = 0;
	CHECKPOINT;
});
my $blcksz = $node->safe_psql('postgres', 'SHOW block_size');
my $datadir = $node->data_dir;
my $t_file = "$datadir/" . $node->safe_psql('postgres', "SELECT pg_relation_filepath('t_sig')");
my $m_file = "$datadir/" . $node->safe_psql('postgres', "SELECT pg_relation_filepath('m_sig')");
$node->stop;

# Reads block blk of file f.
sub read_block {
	my ($f, $blk) = @_;
	open(my $fh, '<:raw', $f) or die "open $f: $!";
	sysseek($fh, $blk * $blcksz, SEEK_SET) or die;
	sysread($fh, my $page, $blcksz) == $blcksz or die "short read of block $blk";
	close $fh;
	return $page;
}
# Writes block blk of file f.
sub write_block {
	my ($f, $blk, $page) = @_;
	open(my $fh, '+<:raw', $f) or die "open $f: $!";
	sysseek($fh, $blk * $blcksz, SEEK_SET) or die;
	syswrite($fh, $page) == $blcksz or die "short write of block $blk";
	close $fh;
}

# The special space of an index page: next (uint32), kind (uint16), ...; pd_special is the
# uint16 at offset 16 of the page header. Kind 2 is a DATA page. Make the first DATA page that
# links to another one link to itself.
my $nblocks = (-s $t_file) / $blcksz;
my $cycled;
for my $blk (1 .. $nblocks - 1) {
	my $page = read_block($t_file, $blk);
	my $special = unpack('v', substr($page, 16, 2));
	my ($next, $kind) = unpack('V v', substr($page, $special, 6));
	next unless $kind == 2 && $next != 0xFFFFFFFF;
	substr($page, $special, 4) = pack('V', $blk);
	write_block($t_file, $blk, $page);
	$cycled = $blk;
	last;
}
ok(defined $cycled, "a DATA page with a right sibling found (block $cycled)");

# The metapage (block 0) holds MetaData at offset 24; segment 0's root and first_data are at
# 24 + 64 and 24 + 72.
my $meta = read_block($m_file, 0);
substr($meta, 24 + 64, 4) = pack('V', 0x7FFFFFF0);
substr($meta, 24 + 72, 4) = pack('V', 0x7FFFFFF0);
write_block($m_file, 0, $meta);
$node->start;

# Runs sql with a client-side time bound; returns (stderr, timed out).
sub try_sql {
	my ($sql) = @_;
	my ($out, $err, $timed_out) = ('', '', 0);
	$node->psql('postgres', $sql, stdout => \$out, stderr => \$err, timeout => 60,
		timed_out => \$timed_out, extra_params => [ '-v', 'VERBOSITY=verbose' ]);
	$err =~ s/\n?LOCATION:.*//s;
	return ($err, $timed_out);
}

my $cycle_error = qq{psql:<stdin>:1: ERROR:  XX002: spotsigs index "t_sig" is corrupted\nDETAIL:  page chain runs in a cycle (block $cycled).};
for my $sql ("SELECT count(*) FROM spotsigs_index_stats('t_sig')", 'VACUUM t') {
	my ($err, $timed_out) = try_sql($sql);
	ok(!$timed_out, "$sql: ends within the time bound");
	my $context = $sql =~ /^VACUUM/ ? qq{\nCONTEXT:  while vacuuming index "t_sig" of relation "public.t"} : '';
	is($err, $cycle_error . $context, "$sql: XX002, a cycle in the page chain");
}
my ($err) = try_sql("SELECT spotsigs_index_check('t_sig')");
like($err, qr/XX002: spotsigs index "t_sig" is corrupted/, 'spotsigs_index_check reports the corruption');

my $outside_error = qq{psql:<stdin>:1: ERROR:  XX002: spotsigs index "m_sig" is corrupted\nDETAIL:  link to a block outside the index (block 2147483632).};
for my $sql ("SELECT count(*) FROM spotsigs_index_stats('m_sig')", "SELECT spotsigs_index_check('m_sig')",
	"SET enable_seqscan = off; SELECT count(*) FROM m WHERE sig % mk(5)") {
	my ($err, $timed_out) = try_sql($sql);
	is($err, $outside_error, "$sql: XX002 for a metapage block number past the end");
}
is($node->safe_psql('postgres', 'SELECT 1'), '1', 'the server still answers');
$node->stop('immediate');
done_testing();
