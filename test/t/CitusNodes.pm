# A Citus cluster for the TAP tests: a coordinator and n workers on this machine, each with
# Citus preloaded (and the libraries named in preload), the workers added to the coordinator and
# spotsigs created there (Citus propagates it to the workers).
package CitusNodes;

use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use Exporter 'import';

our @EXPORT = qw(citus_nodes citus_missing);

# Why the Citus tests cannot run here, or undef: Citus 13 supports PostgreSQL 15 to 17, and it
# must be installed in the server's library directory.
sub citus_missing {
	my $libdir = `pg_config --pkglibdir`;
	chomp $libdir;
	my ($pgmajor) = `pg_config --version` =~ /PostgreSQL (\d+)/;
	return "Citus 13, the version these tests use, supports PostgreSQL 15 to 17; this is $pgmajor"
	  if $pgmajor > 17;
	return "Citus is not installed in $libdir (test/citus/build-citus builds it from ../shared/vendor)"
	  unless -f "$libdir/citus.so";
	return undef;
}

# citus_nodes(workers => 3, preload => 'citus', max_connections => 80): ($coordinator, @workers)
sub citus_nodes {
	my %o = (workers => 3, preload => 'citus', max_connections => 80, @_);
	my @nodes;
	for my $name ('coordinator', map { "worker$_" } 1 .. $o{workers}) {
		my $n = PostgreSQL::Test::Cluster->new($name);
		$n->init;
		$n->append_conf('postgresql.conf', qq{
shared_preload_libraries = '$o{preload}'
listen_addresses = 'localhost'
max_connections = $o{max_connections}
fsync = off
synchronous_commit = off
citus.enable_statistics_collection = off
});
		$n->start;
		$n->safe_psql('postgres', 'CREATE EXTENSION citus');
		push @nodes, $n;
	}
	my ($coord, @workers) = @nodes;
	$coord->safe_psql('postgres', "SELECT citus_set_coordinator_host('localhost', " . $coord->port . ')');
	$coord->safe_psql('postgres', "SELECT citus_add_node('localhost', " . $_->port . ')') for @workers;
	$coord->safe_psql('postgres', 'CREATE EXTENSION spotsigs');
	return ($coord, @workers);
}

1;
