# The tables the join tests under a small spotsigs.join_memory_limit share (012_join_passes.pl,
# 017_sql_join_first_read.pl):
#   docs:  40,000 rows of lengths 3 to 62; each shares a run of signatures with its neighbours, so
#          pairs exist at every threshold and straddle any length boundary;
#   other: 30,000 rows sharing runs with docs at other lengths (pairs cross every pass boundary
#          of an R-S join from both sides);
#   wide:  docs, 200 long rows stored out of line and two empty signatures.
package JoinTables;

use strict;
use warnings;
use Exporter 'import';

our @EXPORT = qw(create_join_table);

my %sql = (
	docs => q{
	CREATE TABLE docs AS
	  SELECT i AS id,
	         ('{' || (SELECT string_agg(to_hex(i / 7 + j), ',') FROM generate_series(0, 2 + i % 60) j) || '}')::spotsig AS sig
	  FROM generate_series(1, 40000) i},
	other => q{
	CREATE TABLE IF NOT EXISTS other AS
	  SELECT i AS id,
	         ('{' || (SELECT string_agg(to_hex(i / 5 + j), ',') FROM generate_series(0, 2 + (3 * i) % 60) j) || '}')::spotsig AS sig
	  FROM generate_series(1, 30000) i},
	wide => q{
	CREATE TABLE wide (id int, sig spotsig);
	ALTER TABLE wide ALTER COLUMN sig SET STORAGE EXTERNAL;
	INSERT INTO wide SELECT * FROM docs;
	INSERT INTO wide SELECT 100000 + i,
	  ('{' || (SELECT string_agg(to_hex(i * 1000 + j), ',') FROM generate_series(0, 300 + i % 7) j) || '}')::spotsig
	  FROM generate_series(1, 200) i;
	INSERT INTO wide VALUES (200001, '{}'), (200002, '{}')},
);

# create_join_table($node, 'docs'): creates that table in the database postgres (wide after docs;
# other only if it is not there yet).
sub create_join_table {
	my ($node, $name) = @_;
	$node->safe_psql('postgres', $sql{$name});
}

1;
