# Out-of-line signatures in spotsigs_join: values read after the rows by one scan of their toast
# relation (or detoasted one by one) give exactly the pairs of a plain SQL nested loop over
# similarity(), through deletes, updates, VACUUM and chunks stored out of order; the scan is
# used only when the values make up most of the toast relation.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('join_toast');
$node->init;
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION spotsigs');

# 40 base documents of 300-500 random 52-bit hashes (about 3-4 KB stored: out of line, and
# incompressible), five variants of each with up to a fifth of the hashes replaced, and small rows
# stored inline. $1: the table, $2: the id offset.
sub fill {
	my ($table, $offset) = @_;
	return qq{
		INSERT INTO $table
		SELECT $offset + b * 10 + v,
		       ('{' || array_to_string(ARRAY(
		          SELECT CASE WHEN random() < 0.05 * v THEN to_hex((random() * 4e15)::bigint) ELSE h END
		          FROM unnest(hs) h), ',') || '}')::spotsig
		FROM (SELECT b, ARRAY(SELECT to_hex((random() * 4e15)::bigint + g * 0)
		                      FROM generate_series(1, 300 + b * 5) g) AS hs
		      FROM generate_series(1, 40) b) base, generate_series(0, 4) v;
		INSERT INTO $table
		SELECT $offset + 1000 + i, ('{' || (i % 3) || ',' || (i % 5 + 10) || ',ff}')::spotsig
		FROM generate_series(1, 30) i;
	};
}

$node->safe_psql('postgres', "SELECT setseed(0.25); CREATE TABLE pages (id int, sig spotsig);"
	. "ALTER TABLE pages ALTER COLUMN sig SET STORAGE EXTERNAL;" . fill('pages', 0));

# The pairs of spotsigs_join on $table at $tau with $threads threads that a nested loop over
# similarity() does not give, and the other way round; and how many there are.
sub compare {
	my ($table, $tau, $threads) = @_;
	my $join = "SELECT id1, id2, similarity FROM spotsigs_join('$table', 'id', 'sig', $tau, $threads)";
	my $loop = "SELECT a.id::bigint, b.id::bigint, similarity(a.sig, b.sig) FROM $table a JOIN $table b "
		. "ON a.id < b.id WHERE similarity(a.sig, b.sig) >= $tau";
	return $node->safe_psql('postgres',
		"SELECT (SELECT count(*) FROM ($join EXCEPT $loop) x) || ' ' || (SELECT count(*) FROM ($loop EXCEPT $join) y)"
		. " || ' ' || (SELECT count(*) FROM ($join) z)");
}

# How many out-of-line values a join read after the rows, and how many of them by the scan.
sub deferred {
	my ($table) = @_;
	my ($ret, $out, $err) = $node->psql('postgres',
		"SET client_min_messages = debug1; SELECT count(*) FROM spotsigs_join('$table', 'id', 'sig', 0.5, 2)");
	return $err =~ /(\d+) out-of-line values read after the rows, (\d+) of them by one scan/ ? "$1 $2" : 'none';
}

sub check_all {
	my ($table, $what) = @_;
	for my $tau (0.3, 0.6, 0.8) {
		for my $threads (1, 2) {
			my ($extra, $missing, $pairs) = split / /, compare($table, $tau, $threads);
			is("$extra $missing", '0 0', "$what, tau $tau, $threads threads: the nested loop's pairs");
			cmp_ok($pairs, '>', 50, "$what, tau $tau, $threads threads: pairs found ($pairs)");
		}
	}
}

my $stored = $node->safe_psql('postgres', 'SELECT count(*) FROM pages WHERE pg_column_size(sig) > 2000');
is($stored, '200', 'the 200 large signatures are stored out of line');
is(deferred('pages'), '200 200', 'all 200 out-of-line values come from the scan of the toast relation');
check_all('pages', 'fresh table');

# Deletes and updates leave dead chunks; VACUUM frees room that later chunks fill out of order.
$node->safe_psql('postgres', q[
	DELETE FROM pages WHERE id % 7 = 0;
	UPDATE pages SET sig = (rtrim(sig::text, '}') || ',abc}')::spotsig WHERE id % 11 = 0;
	VACUUM pages;
	SELECT setseed(0.75);
] . fill('pages', 5000));
my ($total, $scanned) = split / /, deferred('pages');
cmp_ok($scanned, '>', 300, "after deletes, updates and VACUUM the scan still reads most values ($scanned of $total)");
my $unordered = $node->safe_psql('postgres', q{
	SELECT count(DISTINCT chunk_id) FROM (
		SELECT chunk_id, chunk_seq, row_number() OVER (PARTITION BY chunk_id ORDER BY ctid) - 1 AS pos
		FROM pg_toast.pg_toast_} . $node->safe_psql('postgres', "SELECT 'pages'::regclass::oid") . q{) c
	WHERE pos <> chunk_seq});
cmp_ok($unordered, '>', 0, "some values' chunks are stored out of order ($unordered)");
check_all('pages', 'after changes');
my $stored_now = $node->safe_psql('postgres', 'SELECT count(*) FROM pages WHERE pg_column_size(sig) > 2000');

# A table whose toast relation holds mostly long texts: the values are detoasted one by one.
$node->safe_psql('postgres', q{
	CREATE TABLE texts (id int, body text, sig spotsig);
	ALTER TABLE texts ALTER COLUMN body SET STORAGE EXTERNAL, ALTER COLUMN sig SET STORAGE EXTERNAL;
	INSERT INTO texts SELECT id, repeat(md5(id::text), 1000), sig FROM pages;
});
is(deferred('texts'), "$total 0", 'values that are a small part of their toast relation are detoasted one by one');
check_all('texts', 'long texts');

# A partitioned table: each partition has its own toast relation.
$node->safe_psql('postgres', q{
	CREATE TABLE parts (id int, sig spotsig) PARTITION BY RANGE (id);
	CREATE TABLE parts_low PARTITION OF parts FOR VALUES FROM (0) TO (3000);
	CREATE TABLE parts_high PARTITION OF parts FOR VALUES FROM (3000) TO (100000);
	ALTER TABLE parts_low ALTER COLUMN sig SET STORAGE EXTERNAL;
	ALTER TABLE parts_high ALTER COLUMN sig SET STORAGE EXTERNAL;
	INSERT INTO parts SELECT * FROM pages;
});
check_all('parts', 'partitioned table');

# A view that reads every row twice: two rows share each toast value (the second of each pair
# is detoasted after the scan); every row pairs with its copy at similarity 1.
$node->safe_psql('postgres',
	'CREATE VIEW twice AS SELECT id, sig FROM pages UNION ALL SELECT id + 100000, sig FROM pages');
($total, $scanned) = split / /, deferred('twice');
is($total, 2 * $stored_now, "the view notes every out-of-line value twice ($total)");
cmp_ok($scanned, '<=', $stored_now, "the scan puts each shared value together once ($scanned)");
for my $threads (1, 2) {
	my ($extra, $missing, $pairs) = split / /, compare('twice', 0.6, $threads);
	is("$extra $missing", '0 0', "a view reading each row twice, tau 0.6, $threads threads: the nested loop's pairs");
	cmp_ok($pairs, '>', 1000, "a view reading each row twice, $threads threads: pairs found ($pairs)");
}

# The memory limit holds for values read after the rows too.
my ($ret, $out, $err) = $node->psql('postgres',
	"SET spotsigs.join_memory_limit = '1MB'; SELECT count(*) FROM spotsigs_join('pages', 'id', 'sig', 0.5, 2)",
	extra_params => [ '-v', 'VERBOSITY=verbose' ]);
isnt($ret, 0, 'a join over the memory limit fails');
like($err, qr/53200.*spotsigs join exceeds spotsigs.join_memory_limit \(1MB\)/,
	'with SQLSTATE 53200, naming the limit');

done_testing();
