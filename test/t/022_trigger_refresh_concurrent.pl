# The content trigger's statistics refresh (spotsigs.trigger_refresh) with two inserting sessions:
# a refresh holds the table's SHARE UPDATE EXCLUSIVE lock to the end of its transaction; the other
# session neither waits for it nor refreshes meanwhile (its rows keep the template it had), then
# refreshes once the first has committed. Neither session waits on the other at any point
# (lock_timeout would turn a wait into an error), and after the last refresh every flag equals
# the brute force with the stored template.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use lib 'test/t';
use RefreshFixture;

my $node = PostgreSQL::Test::Cluster->new('trigger_refresh_concurrent');
$node->init;
# The schedule below is laid out on refreshes at each doubling (16, 32, 64 rows ...).
$node->append_conf('postgresql.conf', "spotsigs.trigger_refresh_growth = 2\n");
$node->start;

# 100 stories in 1-4 copies on 3 sites (the fixture of sql/trigger_refresh.sql): ids 1-100 for
# the first copies, 100 * copy + story for the others.
$node->safe_psql('postgres', 'CREATE EXTENSION spotsigs;' . $refresh_fixture_sql . q{
CREATE TABLE src AS SELECT 1000 * v + s AS id, spotsigs(rsite((s + v) % 3) || ' . ' || rstory(s, v)) AS sig
FROM generate_series(1, 100) s, generate_series(0, s % 4) v;
CREATE TABLE docs (id int PRIMARY KEY, sig spotsig, dup int, sim float8);
CREATE INDEX ON docs USING spotsigs (sig);
CREATE TRIGGER dedup BEFORE INSERT ON docs FOR EACH ROW EXECUTE FUNCTION spotsigs_flag_duplicates('sig', 'dup', 'sim');
});

my $rows_analyzed = q{SELECT coalesce((SELECT rows_analyzed FROM spotsigs_stats WHERE relation = 'docs'::regclass), 0)};

# A refreshes at its 17th row and keeps its transaction open.
my $a = $node->background_psql('postgres');
$a->query_safe(q{BEGIN; INSERT INTO docs SELECT id, sig FROM src WHERE id <= 20 ORDER BY id;});
is($a->query_safe($rows_analyzed), '16', 'session A refreshed at 16 rows (uncommitted)');

# B inserts 30 rows meanwhile: past 16 rows of its own it finds the lock taken and goes on.
my ($rc, $out, $err) = $node->psql('postgres', qq{
SET lock_timeout = '2s';
BEGIN;
INSERT INTO docs SELECT id, sig FROM src WHERE id BETWEEN 1001 AND 1999 ORDER BY id LIMIT 30;
$rows_analyzed;
COMMIT;});
is($rc, 0, 'session B inserts without waiting while A holds the refresh lock') or diag($err);
is($out, '0', 'and does not refresh (A has not committed)');

# A goes on past 32 rows of its own (B's are committed now: A counts them) and refreshes again,
# holding the lock it already has; then commits.
$a->query_safe(q{INSERT INTO docs SELECT id, sig FROM src WHERE id BETWEEN 21 AND 40 ORDER BY id;});
my $a_rows = $a->query_safe($rows_analyzed);
cmp_ok($a_rows, '>=', 32, "session A refreshed again within its transaction ($a_rows rows)");
$a->query_safe('COMMIT');

# B's next row finds A's statistics and refreshes when the rows reach twice their count.
($rc, $out, $err) = $node->psql('postgres', qq{
SET lock_timeout = '2s';
INSERT INTO docs SELECT id, sig FROM src WHERE id NOT IN (SELECT id FROM docs) ORDER BY id;
$rows_analyzed;});
is($rc, 0, 'session B inserts the rest') or diag($err);
my $total = $node->safe_psql('postgres', 'SELECT count(*) FROM docs');
my $last = $out;
ok($last > $a_rows && $last <= $total, "B refreshed on the committed rows ($last of $total)");

# The rows after the last refresh were inserted in ascending id order, so every flag equals the
# brute force with the stored template: the best earlier-id match at content similarity >= 0.4.
is($node->safe_psql('postgres', q{SELECT wrong('docs')}), '0',
    'every flag equals the brute force with the stored template');
cmp_ok($node->safe_psql('postgres', q{SELECT count(dup) FROM docs}), '>', 0, 'some rows are flagged');

$a->quit;
$node->stop;
done_testing();
