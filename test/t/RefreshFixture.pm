# The SQL the trigger refresh tests share (022_trigger_refresh_concurrent.pl,
# 023_trigger_refresh_background.pl; sql/trigger_refresh.sql builds the same pages):
#   rw, rstory, rsite: pages of stories in copies on 3 sites, each page a site template of 25
#     sentences and a story of 30 whose copies differ in every k-th sentence (k from 2 to 6);
#   wrong(rel): the rows of rel whose (dup, sim) differ from the brute force with rel's stored
#     template, the best match of smaller id at content similarity >= 0.4 (ties to the smallest id).
package RefreshFixture;

use strict;
use warnings;
use Exporter 'import';

our @EXPORT = qw($refresh_fixture_sql);

our $refresh_fixture_sql = q{
CREATE FUNCTION rw(a int, b int) RETURNS text LANGUAGE sql IMMUTABLE AS
$$ SELECT 'w' || substr(md5(a::text || ':' || b::text), 1, 6) $$;
CREATE FUNCTION rstory(s int, variant int) RETURNS text LANGUAGE sql IMMUTABLE AS $$
SELECT string_agg('the ' || rw(s, i) || ' is a ' ||
       CASE WHEN (i + variant) % (2 + s % 5) = 0 THEN rw(s * 1000 + variant, i) ELSE rw(s + 100000, i) END ||
       ' that the ' || rw(s + 200000, i), ' . ' ORDER BY i) FROM generate_series(1, 30) i $$;
CREATE FUNCTION rsite(k int) RETURNS text LANGUAGE sql IMMUTABLE AS $$
SELECT string_agg('the ' || rw(-k, i) || ' is a ' || rw(-k - 10, i) || ' that the ' || rw(-k - 20, i), ' . ' ORDER BY i)
FROM generate_series(1, 25) i $$;
CREATE FUNCTION wrong(rel regclass) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE n bigint;
BEGIN
  EXECUTE format($q$
    WITH t AS (SELECT template AS t FROM spotsigs_stats WHERE relation = %L::regclass),
    ref AS (SELECT n.id, b.id AS dup, b.s FROM %s n CROSS JOIN t LEFT JOIN LATERAL (
      SELECT o.id, similarity(spotsig_remove(n.sig, t.t), spotsig_remove(o.sig, t.t)) AS s FROM %s o
      WHERE o.id < n.id AND similarity(spotsig_remove(n.sig, t.t), spotsig_remove(o.sig, t.t)) >= 0.4
      ORDER BY 2 DESC, o.id LIMIT 1) b ON true)
    SELECT count(*) FROM ref JOIN %s p USING (id) WHERE ref.dup IS DISTINCT FROM p.dup OR ref.s IS DISTINCT FROM p.sim
  $q$, rel, rel, rel, rel) INTO n;
  RETURN n;
END $$;
};

1;
