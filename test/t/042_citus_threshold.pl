# spotsigs on Citus: % and <-> on a distributed table give one node's answer (a local copy of the
# same rows on the coordinator) or the documented error, never another answer, whatever way
# spotsigs.similarity_threshold was set on the coordinator: the default 'auto' without and with
# statistics (spotsigs_analyze), a session SET, SET LOCAL, ALTER ROLE ... SET, ALTER DATABASE ...
# SET; for multi-shard and router queries, literal and subquery operands, and prepared statements
# (custom and generic plans, across a SET). The workers keep their own default ('auto', no
# statistics), which answers otherwise at every setting below. A coordinator and three workers,
# newsframes-dev distributed by id over six shards. Skips, saying why, when Citus is not
# installed or the data set is missing.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use lib 'test/t';
use CitusNodes;

my $citus_missing = citus_missing();
plan skip_all => $citus_missing if $citus_missing;
my $data = $ENV{SPOTSIGS_NEWSFRAMES} // '';
plan skip_all => "newsframes-dev not found (set SPOTSIGS_NEWSFRAMES to its pages.tsv.gz)"
  unless $data ne '' && -r $data;

# ---- the cluster (spotsigs is not preloaded: a session loads it when it first needs it)
my ($coord, @workers) = citus_nodes();
my @nodes = ($coord, @workers);

$coord->safe_psql('postgres', qq{
CREATE TABLE pages_local (id int PRIMARY KEY, cluster int, host text, kind text, html text, sig spotsig);
COPY pages_local (id, cluster, host, kind, html) FROM PROGRAM 'zcat $data';
UPDATE pages_local SET sig = spotsigs(html);
ALTER TABLE pages_local DROP COLUMN html;
CREATE INDEX ON pages_local USING spotsigs (sig);
SET citus.shard_count = 6;
CREATE TABLE pages (id int PRIMARY KEY, sig spotsig);
SELECT create_distributed_table('pages', 'id');
INSERT INTO pages SELECT id, sig FROM pages_local;
CREATE INDEX ON pages USING spotsigs (sig);
ANALYZE pages_local, pages;
CREATE VIEW pages_v AS SELECT id, sig FROM pages;
CREATE VIEW pages_local_v AS SELECT id, sig FROM pages_local;
CREATE ROLE tester LOGIN;
GRANT SELECT ON pages, pages_local, pages_v, pages_local_v TO tester;
});
# The role that runs the cases loads spotsigs when its sessions start, as docs/scale-out.md
# advises (without it, a session's first query may be planned before the library is there: the
# last block below).
$coord->safe_psql('postgres', q{ALTER ROLE tester SET session_preload_libraries = 'spotsigs'});
is($coord->safe_psql('postgres', 'SELECT count(*) FROM pages'), '1353', 'all rows distributed');

# Query rows: every 151st page.
my @qids = split /\n/, $coord->safe_psql('postgres', 'SELECT id FROM pages_local WHERE id % 151 = 1 ORDER BY id');
my %qsig = map { $_ => $coord->safe_psql('postgres', "SELECT sig FROM pages_local WHERE id = $_") } @qids;
# Router pairs: for each query row, one row per similarity band (the first row in id order whose
# similarity to it lies in the band), each asked alone by its id (a single-shard query).
my @pairs = split /\n/, $coord->safe_psql('postgres', q{
SELECT q.id || ' ' || (SELECT min(p.id) FROM pages_local p WHERE p.id <> q.id
                       AND similarity(p.sig, q.sig) >= b.lo AND similarity(p.sig, q.sig) < b.lo + 0.2)
  FROM pages_local q, (VALUES (0.1), (0.3), (0.5), (0.7)) b(lo)
 WHERE q.id % 151 = 1 ORDER BY q.id, b.lo});
@pairs = grep { /^\d+ \d+$/ } @pairs;
cmp_ok(scalar(@pairs), '>=', 12, 'router pairs');

# The statements of one case, over TABLE (pages or pages_local), one output line each.
my $list = q{count(*) || ':' || coalesce(string_agg(id::text, ',' ORDER BY id), '')};
my %forms = (
	'multi-shard, literal' => sub {
		map {; "SELECT $list FROM TABLE WHERE sig % '$qsig{$_}'::spotsig;" } @qids;
	},
	'multi-shard, subquery operand' => sub {
		map {; "SELECT $list FROM TABLE WHERE sig % (SELECT sig FROM pages_local WHERE id = $_);" } @qids;
	},
	'multi-shard, column on the right' => sub {
		map {; "SELECT $list FROM TABLE t WHERE (SELECT sig FROM pages_local WHERE id = $_) % t.sig;" } @qids;
	},
	'multi-shard, through a view' => sub {
		map {; "SELECT $list FROM TABLE_v v WHERE v.sig % '$qsig{$_}'::spotsig;" } @qids;
	},
	'router' => sub {
		map { my ($q, $p) = split / /; "SELECT $list FROM TABLE WHERE id = $p AND sig % '$qsig{$q}'::spotsig;" } @pairs;
	},
	'join with a local table (the issue\'s form)' => sub {
		("SELECT count(*) FROM TABLE a, (SELECT sig FROM pages_local WHERE id % 151 = 1) q WHERE a.sig % q.sig;");
	},
	'top 10 by <->' => sub {
		map {; "SELECT string_agg(id || ':' || d, ',' ORDER BY d, id) FROM (SELECT id, sig <-> '$qsig{$_}'::spotsig AS d "
			. "FROM TABLE ORDER BY sig <-> '$qsig{$_}'::spotsig, id LIMIT 10) t;" } @qids;
	},
	'prepared, custom plans' => sub {
		('SET plan_cache_mode = force_custom_plan;',
		 "PREPARE p(spotsig) AS SELECT $list FROM TABLE WHERE sig % \$1;",
		 (map {; "EXECUTE p('$qsig{$_}');" } @qids), 'DEALLOCATE p;');
	},
	# (Citus itself refuses a generic plan of a multi-shard query with parameters: a statement
	# without parameters, and a router one with.)
	'prepared, generic plans' => sub {
		('SET plan_cache_mode = force_generic_plan;',
		 (map {; "PREPARE p$_ AS SELECT $list FROM TABLE WHERE sig % (SELECT sig FROM pages_local WHERE id = $_);",
			"EXECUTE p$_;", "EXECUTE p$_;", "DEALLOCATE p$_;" } @qids),
		 "PREPARE r(int, spotsig) AS SELECT $list FROM TABLE WHERE id = \$1 AND sig % \$2;",
		 (map {; my ($q, $p) = split / /; "EXECUTE r($p, '$qsig{$q}');" } @pairs), 'DEALLOCATE r;');
	});

# Runs the statements of form $f in one session as $user after $before, on both tables; returns
# (distributed, local) outputs, or the error of the distributed run.
sub run_case {
	my ($before, $f, $user, $after) = @_;
	$after //= '';
	my @out;
	for my $table (qw(pages pages_local)) {
		my $sql = join("\n", $before, (map { s/TABLE/$table/gr } $forms{$f}->()), $after);
		my ($ret, $stdout, $stderr) = $coord->psql('postgres', $sql, extra_params => [ '-U', $user // 'tester', '-v', 'ON_ERROR_STOP=1' ]);
		push @out, $ret == 0 ? $stdout : "ERROR: $stderr";
	}
	return @out;
}

# Each way of setting the threshold, with what the statements above must see.
my @settings = (
	[ 'the default (auto)', '' ],
	[ 'SET 0.9', 'SET spotsigs.similarity_threshold = 0.9;' ],
	[ 'SET 0.3', 'SET spotsigs.similarity_threshold = 0.3;' ],
	[ 'SET LOCAL 0.9', "BEGIN;\nSET LOCAL spotsigs.similarity_threshold = 0.9;", 'COMMIT;' ],
	[ 'ALTER ROLE SET 0.5', '', undef, 'role' ],
	[ 'ALTER DATABASE SET 0.7', '', undef, 'database' ]);

sub check_settings {
	my ($label) = @_;
	my %seen;
	for my $s (@settings) {
		my ($name, $before, $after, $how) = @$s;
		if (($how // '') eq 'role') {
			# not propagated by Citus: the workers keep their default
			$coord->safe_psql('postgres', 'SET citus.enable_alter_role_set_propagation = off; '
				. 'ALTER ROLE tester SET spotsigs.similarity_threshold = 0.5');
		}
		if (($how // '') eq 'database') {
			$coord->safe_psql('postgres', 'ALTER DATABASE postgres SET spotsigs.similarity_threshold = 0.7');
		}
		for my $f (sort keys %forms) {
			my ($d, $l) = run_case($before, $f, 'tester', $after);
			is($d, $l, "$label, $name, $f: distributed = single node");
			$seen{$f}{$l} = 1;
		}
		$coord->safe_psql('postgres', 'SET citus.enable_alter_role_set_propagation = off; ALTER ROLE tester RESET spotsigs.similarity_threshold')
			if ($how // '') eq 'role';
		$coord->safe_psql('postgres', 'ALTER DATABASE postgres RESET spotsigs.similarity_threshold')
			if ($how // '') eq 'database';
	}
	# The settings do change the answers of % (so the equalities above are not vacuous).
	for my $f (grep { !/<->/ } sort keys %forms) {
		cmp_ok(scalar(keys %{ $seen{$f} }), '>=', 4, "$label, $f: the settings give different answers");
	}
}

# The workers' own setting answers otherwise: what a query shipped without its threshold would get.
is($workers[0]->safe_psql('postgres', "LOAD 'spotsigs'; SHOW spotsigs.similarity_threshold"), 'auto', "a worker's own setting is auto");

check_settings('without statistics');

# ---- with statistics: spotsigs_analyze on both tables (the distributed one's template is kept on
# the coordinator; the workers have none), the same template.
$coord->safe_psql('postgres', q{SELECT spotsigs_analyze('pages', 'sig'); SELECT spotsigs_analyze('pages_local', 'sig')});
is($coord->safe_psql('postgres', q{SELECT count(DISTINCT template::text) || ' ' || min(template_size) FROM spotsigs_stats
	WHERE relation IN ('pages'::regclass, 'pages_local'::regclass)}) =~ s/ \d+$//r, '1',
	'the distributed table and the local copy have the same template');
is($workers[0]->safe_psql('postgres', 'SELECT count(*) FROM spotsigs_stats'), '0', 'a worker has no statistics');
check_settings('with statistics');

# The content query constructors, named with the table: the coordinator's template.
{
	my ($d, $l) = map {
		my $t = $_;
		$coord->safe_psql('postgres', join("\n", map {;
			"SELECT $list FROM $t WHERE sig % spotsig_content_query('$qsig{$_}'::spotsig, '$t', 'sig');",
			"SELECT string_agg(id || ':' || d, ',' ORDER BY d, id) FROM (SELECT id, sig <-> spotsig_content_query('$qsig{$_}'::spotsig, '$t', 'sig') AS d "
			. "FROM $t ORDER BY 2, id LIMIT 10) s;",
			"SELECT $list FROM $t WHERE sig % spotsig_auto_query('$qsig{$_}'::spotsig, '$t', 'sig');" } @qids))
	} qw(pages pages_local);
	is($d, $l, '% and <-> with spotsig_content_query(q, table, column), spotsig_auto_query: distributed = single node');
}

# A prepared statement's generic plan follows a later SET and a later analyze.
{
	my $q = $qids[0];
	my @out = map {
		my $t = $_;
		$coord->safe_psql('postgres', qq{
SET plan_cache_mode = force_generic_plan;
PREPARE p AS SELECT $list FROM $t WHERE sig % (SELECT sig FROM pages_local WHERE id = $q);
EXECUTE p;
SET spotsigs.similarity_threshold = 0.9;
EXECUTE p;
SET spotsigs.similarity_threshold = 0.3;
EXECUTE p;
RESET spotsigs.similarity_threshold;
EXECUTE p;
}, extra_params => [ '-U', 'tester' ])
	} qw(pages pages_local);
	is($out[0], $out[1], 'a generic plan across SETs: distributed = single node');
	# A PL/pgSQL function's statement (a plan it keeps for the session) follows a SET too.
	$coord->safe_psql('postgres', join "\n", map { qq{
CREATE FUNCTION hits_$_(q spotsig) RETURNS text LANGUAGE plpgsql AS \$\$
BEGIN RETURN (SELECT $list FROM $_ WHERE sig % q); END \$\$;} } qw(pages pages_local));
	my @fn = map {
		my $t = $_;
		$coord->safe_psql('postgres', join("\n", map {; "SET spotsigs.similarity_threshold = $_;",
			"SELECT hits_$t(sig) FROM pages_local WHERE id = $q;" } qw(0.3 0.9 0.5 0.3)), extra_params => [ '-U', 'tester' ])
	} qw(pages pages_local);
	is($fn[0], $fn[1], 'a PL/pgSQL function across SETs: distributed = single node');
	my @fl = split /\n/, $fn[1];
	isnt($fl[0], $fl[1], 'the SET changed its answer');
	my @lines = split /\n/, $out[1];
	isnt($lines[0], $lines[1], 'the SET changed its answer');
	isnt($lines[1], $lines[2], 'and the next SET too');
}

# ---- a bare % that reaches a shard without its threshold is refused there. A new session whose
# first statement needs the library only once the coordinator plans it (no literal of the type):
# the library comes too late for the query to be rewritten, so the worker refuses; the session's
# next statement is rewritten and answers as one node.
{
	my $sql = "SET spotsigs.similarity_threshold = 0.9;\n"
		. "SELECT $list FROM pages WHERE sig % (SELECT sig FROM pages_local WHERE id = $qids[1]);\n";
	my ($ret, $out, $err) = $coord->psql('postgres', $sql . "SELECT $list FROM pages WHERE sig % (SELECT sig FROM pages_local WHERE id = $qids[1]);",
		on_error_stop => 0, extra_params => [ '-v', 'VERBOSITY=verbose' ]);
	my $want = $coord->safe_psql('postgres', "SET spotsigs.similarity_threshold = 0.9; SELECT $list FROM pages_local WHERE sig % (SELECT sig FROM pages_local WHERE id = $qids[1])");
	my @lines = split /\n/, $out;
	if ($err =~ /ERROR/) {
		like($err, qr/ERROR:  0A000: a bare % on the Citus shard public\.pages_\d+ arrived without its threshold/,
			'first statement of a session: the documented error');
		is($lines[-1], $want, 'the next statement: the single-node answer');
	} else {
		is(join("\n", @lines), "$want\n$want", 'first statement of a session: the single-node answer');
	}
	# A bare % sent to a shard by hand: refused.
	my $shard = $coord->safe_psql('postgres', q{SELECT shard_name('pages', shardid, false) FROM citus_shards
		WHERE table_name = 'pages'::regclass AND nodeport = } . $workers[0]->port . ' ORDER BY shardid LIMIT 1');
	($ret, $out, $err) = $workers[0]->psql('postgres', "SET citus.override_table_visibility = off; "
		. "SELECT count(*) FROM $shard WHERE sig % '$qsig{$qids[0]}'::spotsig", extra_params => [ '-v', 'VERBOSITY=verbose' ]);
	like($err, qr/ERROR:  0A000: a bare % on the Citus shard \Q$shard\E arrived without its threshold/, 'a bare % on a shard is refused');
}

$_->stop for @nodes;
done_testing();
