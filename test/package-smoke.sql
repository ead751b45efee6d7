-- What test/package-check and test/package-chroot run against an installed package (output in
-- package-smoke.out): the extension at its default version, a similarity checked by hand (two
-- texts of 8 spot signatures each, 5 shared: 5/11), and an update from 0.1.0.
CREATE EXTENSION spotsigs;
SELECT extversion = default_version AS at_default_version
FROM pg_extension, pg_available_extensions WHERE extname = 'spotsigs' AND name = 'spotsigs';
SELECT round(similarity(spotsigs('The council is expected to vote on the new budget next week. The mayor has said she can not support a budget that does not fund the library.'),
                        spotsigs('The council is expected to vote on the new budget next month. The mayor has said she can not support a budget that does not fund the pool.'))::numeric, 4);
CREATE DATABASE old;
\c old
CREATE EXTENSION spotsigs VERSION '0.1.0';
ALTER EXTENSION spotsigs UPDATE;
SELECT extversion = default_version AS updated_to_default_version
FROM pg_extension, pg_available_extensions WHERE extname = 'spotsigs' AND name = 'spotsigs';
