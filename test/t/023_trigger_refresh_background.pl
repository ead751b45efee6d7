# The content trigger's statistics refresh in a background worker (spotsigs.trigger_refresh =
# background): the inserting statement never analyzes or re-flags; a worker waits for the inserting
# transaction to end, then refreshes. Once the workers have finished, every flag equals the brute
# force with the stored template (the best match of smaller id at content similarity >= 0.4),
# whether the rows came in one transaction, in random order, or one per transaction. A role that
# does not own the table launches nothing; a cancelled worker leaves the table as it was, and the
# next due insert launches another; without a free worker slot the statement refreshes itself.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use lib 'test/t';
use RefreshFixture;

my $node = PostgreSQL::Test::Cluster->new('trigger_refresh_background');
$node->init;
$node->append_conf('postgresql.conf', "spotsigs.trigger_refresh = background\n");
$node->start;

# 100 stories in 1-4 copies on 3 sites (the fixture of sql/trigger_refresh.sql), ids in a
# scrambled order of the rows.
$node->safe_psql('postgres', 'CREATE EXTENSION spotsigs;' . $refresh_fixture_sql . q{
CREATE TABLE src AS
SELECT row_number() OVER (ORDER BY md5(s::text || ':' || v::text))::int AS id,
       spotsigs(rsite((s + v) % 3) || ' . ' || rstory(s, v)) AS sig
FROM generate_series(1, 100) s, generate_series(1, 1 + s % 4) v;
CREATE FUNCTION make_docs(t text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format('CREATE TABLE %I (id int PRIMARY KEY, sig spotsig, dup int, sim float8)', t);
  EXECUTE format('CREATE INDEX ON %I USING spotsigs (sig)', t);
  EXECUTE format('CREATE TRIGGER flag BEFORE INSERT ON %I FOR EACH ROW '
                 'EXECUTE FUNCTION spotsigs_flag_duplicates(''sig'', ''dup'', ''sim'')', t);
END $$;
SELECT make_docs('one_xact');
SELECT make_docs('one_by_one');
SELECT make_docs('cancelled');
});
my $total = $node->safe_psql('postgres', 'SELECT count(*) FROM src');
is($total, '250', 'the fixture has 250 rows');

sub analyzed {
    my ($t) = @_;
    return $node->safe_psql('postgres',
        "SELECT coalesce((SELECT rows_analyzed FROM spotsigs_stats WHERE relation = '$t'::regclass), 0)");
}

sub workers {
    return $node->safe_psql('postgres', q{SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'spotsigs refresh'});
}

# Waits (at most 60 s) until no refresh worker has been seen for a second (a worker registered
# at the end of a statement shows in pg_stat_activity only once it has started); true when so.
sub wait_workers {
    my $quiet = 0;
    for (1 .. 600) {
        $quiet = workers() == 0 ? $quiet + 1 : 0;
        return 1 if $quiet >= 10;
        usleep(100_000);
    }
    return 0;
}

# Waits (at most 60 s) until the stored statistics of table $t were computed on $n rows.
sub wait_analyzed {
    my ($t, $n) = @_;
    for (1 .. 600) {
        return 1 if analyzed($t) eq $n;
        usleep(100_000);
    }
    return 0;
}

# 1. Every row in one transaction, in random order: the statement analyzes nothing (the worker
# waits for the commit), then one refresh sees every row.
my $b = $node->background_psql('postgres');
$b->query_safe(q{BEGIN; INSERT INTO one_xact SELECT id, sig FROM src ORDER BY md5(id::text);});
is(analyzed('one_xact'), '0', 'the inserting transaction analyzed nothing');
my $waiting = 0;
for (1 .. 600) {
    $waiting = $node->safe_psql('postgres',
        q{SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'spotsigs refresh' AND wait_event = 'transactionid'});
    last if $waiting ne '0';
    usleep(100_000);
}
is($waiting, '1', 'one worker launched, waiting for the inserting transaction');
# Meanwhile a due insert from another connection (one row per connection is a common load)
# launches no second worker for the table: the first holds the table's refresh lock. (Another
# session holds the table's SHARE UPDATE EXCLUSIVE lock meanwhile, so that a second worker would
# stay, waiting for it, where the count sees it.)
my $l = $node->background_psql('postgres');
$l->query_safe(q{BEGIN; LOCK TABLE one_xact IN SHARE UPDATE EXCLUSIVE MODE;});
$node->safe_psql('postgres', q{INSERT INTO one_xact SELECT 1000, sig FROM src WHERE id = 1});
my $most = 0;
for (1 .. 20) {
    my $n = workers();
    $most = $n if $n > $most;
    usleep(100_000);
}
is($most, '1', 'a due insert from another connection launched no second worker');
$l->query_safe('COMMIT');
$l->quit;
$b->query_safe('COMMIT');
ok(wait_analyzed('one_xact', $total + 1), 'the worker analyzed every committed row');
ok(wait_workers(), 'the worker finished');
is($node->safe_psql('postgres', q{SELECT wrong('one_xact')}), '0', 'every flag equals the brute force after the worker');
$node->safe_psql('postgres', q{
CREATE TABLE one_xact_before AS SELECT * FROM one_xact;
SELECT spotsigs_flag_batch('one_xact', 'id', 'sig', 'dup', 'sim', NULL, 1);});
is($node->safe_psql('postgres', q{
SELECT count(*) FROM one_xact a JOIN one_xact_before b USING (id) WHERE (a.dup, a.sim) IS DISTINCT FROM (b.dup, b.sim)}),
    '0', 'spotsigs_flag_batch with the stored template changes no flag');
is($node->safe_psql('postgres', q{SELECT wrong('one_xact')}), '0', 'and they still equal the brute force');

# 2. One row per transaction, in id order: refreshes run while rows keep arriving; after the
# last worker, a refresh saw at least four fifths of the rows, and every flag equals the brute
# force with its template (rows of ascending id flagged on arrival by the stored template agree
# with the batch under that template).
for my $lo (1 .. $total) {
    $node->safe_psql('postgres', "INSERT INTO one_by_one SELECT id, sig FROM src WHERE id = $lo");
}
ok(wait_workers(), 'the workers finished');
my $seen = analyzed('one_by_one');
cmp_ok($seen * 5, '>=', $total * 4, "the last refresh saw $seen of $total rows (at least four fifths)");
is($node->safe_psql('postgres', q{SELECT wrong('one_by_one')}), '0', 'every flag equals the brute force');

# 3. A role that does not own the table launches nothing (as the in-statement refresh).
$node->safe_psql('postgres', q{
CREATE ROLE writer LOGIN;
GRANT SELECT, INSERT ON cancelled TO writer;
GRANT USAGE ON SCHEMA public TO writer;
GRANT SELECT ON src TO writer;
});
$node->safe_psql('postgres', q{SET ROLE writer; INSERT INTO cancelled SELECT id, sig FROM src WHERE id <= 40;});
ok(wait_workers(), 'no worker left');
is(analyzed('cancelled'), '0', 'a non-owner launched no refresh');

# 4. A worker cancelled while it waits for the table's lock (held by another session) changes
# nothing; the owner's next due insert launches another, which refreshes.
my $h = $node->background_psql('postgres');
$h->query_safe(q{BEGIN; LOCK TABLE cancelled IN SHARE UPDATE EXCLUSIVE MODE;});
$node->safe_psql('postgres', q{INSERT INTO cancelled SELECT id, sig FROM src WHERE id = 41});
my $pid;
for (1 .. 600) {
    $pid = $node->safe_psql('postgres',
        q{SELECT pid FROM pg_stat_activity WHERE backend_type = 'spotsigs refresh' AND wait_event = 'relation'});
    last if $pid ne '';
    usleep(100_000);
}
isnt($pid, '', 'the worker waits for the table lock');
is($node->safe_psql('postgres', "SELECT pg_cancel_backend($pid)"), 't', 'cancelled');
ok(wait_workers(), 'the cancelled worker exited');
$h->query_safe('COMMIT');
is(analyzed('cancelled'), '0', 'the cancelled worker left no statistics');
$node->safe_psql('postgres', q{INSERT INTO cancelled SELECT id, sig FROM src WHERE id = 42});
ok(wait_analyzed('cancelled', '42'), 'the next due insert refreshed');
ok(wait_workers(), 'the next worker finished');
is($node->safe_psql('postgres', q{SELECT wrong('cancelled')}), '0', 'every flag equals the brute force');

$b->quit;
$h->quit;
$node->stop;

# 5. No worker slot to be had (max_worker_processes = 0): the refresh runs in the statement, as
# with spotsigs.trigger_refresh = on.
my $full = PostgreSQL::Test::Cluster->new('trigger_refresh_no_slot');
$full->init;
$full->append_conf('postgresql.conf', "spotsigs.trigger_refresh = background\nmax_worker_processes = 0\n");
$full->start;
$full->safe_psql('postgres', q{
CREATE EXTENSION spotsigs;
CREATE TABLE docs (id int PRIMARY KEY, sig spotsig, dup int, sim float8);
CREATE INDEX ON docs USING spotsigs (sig);
CREATE TRIGGER flag BEFORE INSERT ON docs FOR EACH ROW EXECUTE FUNCTION spotsigs_flag_duplicates('sig', 'dup', 'sim');
});
is($full->safe_psql('postgres', q{
BEGIN;
INSERT INTO docs SELECT i, spotsigs('the page ' || i || ' is a page that the site ' || (i % 3) || ' shows')
FROM generate_series(1, 20) i;
SELECT rows_analyzed FROM spotsigs_stats WHERE relation = 'docs'::regclass;
COMMIT;}), '16', 'without a worker slot the 17th row refreshed in its statement');
$full->stop;
done_testing();
