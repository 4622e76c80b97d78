-- Operators and functions Spark has under its own spellings: integer division, shifts, `!` and
-- `~`, raw strings, TRIM's sides, charsets and binaries, moments, NULL-skipping first/last,
-- and the session's names.

-- Integer division and shifts, with their precedence
SELECT 7 div 2 * 3 AS a, 2 << 1 + 1 AS b, 1 | 2 << 1 AS c, 4 >>> 1 & 3 AS d;
SELECT x div y AS q FROM VALUES (7, 2), (-7, 2), (5, 0), (CAST(NULL AS INT), 1) AS t(x, y);
SELECT -9223372036854775808L div -1 AS q;
SELECT CAST(5 AS TINYINT) div CAST(2 AS TINYINT) AS q, 9223372036854775807L div 2 AS r;
SELECT x << 3 AS l, x >> 1 AS r, x >>> 1 AS u FROM VALUES (1), (-1), (1073741824), (CAST(NULL AS INT)) AS t(x);
SELECT x << 65 AS l, x >>> 60 AS u FROM VALUES (1L), (-1L) AS t(x);
SELECT ~ x AS n, ! b AS nb FROM VALUES (5, true), (-1, false), (CAST(NULL AS INT), CAST(NULL AS BOOLEAN)) AS t(x, b);
SELECT -9223372036854775808L AS least_bigint, -5L AS m;
-- Raw strings and TRIM's sides
SELECT r'\\abc' AS a, R'a\nb' AS b, r"x\y" AS c, regexp_replace('100-200', r'(\d+)', 'n') AS d;
SELECT trim(BOTH FROM s) AS b, trim(LEADING FROM s) AS l, trim(TRAILING FROM s) AS t FROM VALUES ('  a b  '), (NULL) AS v(s);
-- Positions, numbers
SELECT locate('b', s, p) AS l, position('b', s, p) AS q FROM VALUES ('abcabc', 1), ('abcabc', 3), ('abcabc', 0), ('abcabc', NULL), ('aéb', 2), (NULL, 1) AS t(s, p);
SELECT locate('', 'abc', 5) AS e, locate('c', 'abcabc', 4) AS f;
SELECT log1p(x) AS l FROM VALUES (0.0D), (1e-20D), (-1.0D), (-2.0D), (CAST(NULL AS DOUBLE)) AS t(x);
SELECT rint(12.3456) AS a, rint(-2.5) AS b, rint(CAST(2.5 AS FLOAT)) AS c, rint(3) AS d;
SELECT factorial(x) AS f FROM VALUES (0), (5), (20), (21), (-1), (CAST(NULL AS INT)) AS t(x);
SELECT positive(1) AS a, positive(-2.5) AS b, positive(CAST(1 AS TINYINT)) AS c;
-- Collections
SELECT sort_array(a, true) AS up, sort_array(a, false) AS down FROM VALUES (array(3, NULL, 1)), (array(2)) AS t(a);
SELECT reverse(a) AS r, nvl(CAST(NULL AS ARRAY<INT>), a) AS n, concat(a, a) AS c FROM VALUES (array(1, NULL, 3)) AS t(a);
-- First and last values, NULLs skipped or not
SELECT first(x, true) AS f, last(x, true) AS l, first(x, false) AS f0, any_value(x, true) AS a FROM VALUES (NULL), (5), (20), (NULL) AS t(x);
SELECT k, first(x, true) AS f, last(x, true) AS l FROM VALUES (1, NULL), (1, 4), (2, NULL) AS t(k, x) GROUP BY k;
SELECT x, first_value(x, true) OVER (ORDER BY i ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS f FROM VALUES (1, NULL), (2, 7), (3, NULL) AS t(i, x);
SELECT a, b, rank(b) OVER (PARTITION BY a ORDER BY b) AS r, percent_rank(b) OVER (PARTITION BY a ORDER BY b) AS p FROM VALUES ('A1', 2), ('A1', 1), ('A2', 3), ('A1', 1) AS t(a, b);
-- Moments
SELECT skewness(x) AS s, kurtosis(x) AS k FROM VALUES (-10), (-20), (100), (1000) AS t(x);
SELECT g, skewness(x) AS s, kurtosis(x) AS k FROM VALUES (1, 1.5), (2, 10.0), (1, 2.5), (2, 10.0), (1, 10.25), (3, NULL) AS t(g, x) GROUP BY g;
SELECT skewness(id) AS s, kurtosis(id * id) AS k FROM range(1000);
-- Charsets and binaries
SELECT hex(encode(s, 'utf-16')) AS a, hex(encode(s, 'UTF-16LE')) AS b, hex(encode(s, 'utf-32')) AS c, hex(encode(s, 'ISO-8859-1')) AS d FROM VALUES ('aé'), (NULL) AS t(s);
SELECT encode('é', 'US-ASCII') AS e;
SELECT decode(b, 'utf-8') AS u, decode(b, 'iso-8859-1') AS l FROM VALUES (x'61C3A9'), (NULL) AS t(b);
SELECT decode(x'FEFF0061', 'UTF-16') AS a, decode(x'0061', 'UTF-16') AS b, decode(x'6100', 'utf-16le') AS c;
SELECT decode(x'80', 'utf-8') AS d;
SELECT to_binary(s, f) AS b FROM VALUES ('abc', 'utf-8'), ('616263', 'hex') AS t(s, f);
SELECT to_binary(s, 'hex') AS h, to_binary(s, 'UTF-8') AS u, to_binary(s) AS d FROM VALUES ('616263'), ('abc'), (NULL) AS t(s);
SELECT to_binary('YWJj', 'base64') AS b, to_binary('zz', 'hex') AS z;
SELECT try_to_binary('a!', 'base64') AS a, try_to_binary('6g', 'hex') AS b, to_binary('6162') AS c;
SELECT validate_utf8(x'61') AS a, try_validate_utf8(x'80') AS b, validate_utf8('é') AS c;
SELECT octet_length(x) AS o, bit_length(x) AS b FROM VALUES (x'0102'), (x''), (NULL) AS t(x);
SELECT octet_length('é') AS o, bit_length('é') AS b;
SELECT startswith(b, x'01') AS s, endswith(b, x'03') AS e, contains(b, x'0203') AS c FROM VALUES (x'010203'), (x''), (NULL) AS t(b);
SELECT substr(b, 2) AS a, substring(b, -2, 1) AS c, substr(b, 0, 2) AS d, left(b, 2) AS e, left(b, -1) AS f FROM VALUES (x'0102030405'), (NULL) AS t(b);
-- The session
SELECT current_catalog() AS c, current_database() AS d, current_schema() AS s;
-- Number formats
SELECT to_number(s, '99,999.9S') AS n, try_to_number(s, '99,999.9S') AS t FROM VALUES ('12,454.8-'), ('1.5+'), ('4'), (NULL) AS v(s);
SELECT try_to_number(s, '$999.99') AS t FROM VALUES ('$78.12'), ('78.12'), ('$1234'), ('x') AS v(s);
SELECT to_number('<45>', '999PR') AS a, to_number(' 4 5 ', '999') AS b, to_number('0045', '0999') AS c;
SELECT to_number('4545', '999') AS n;
SELECT to_number('45', 'x99') AS n;
SELECT to_char(x, '99G999D9S') AS a, to_char(x, '00000.00') AS b, to_char(x, '999MI') AS c, to_char(x, '999PR') AS d FROM VALUES (CAST(-12454.8 AS DECIMAL(7,1))), (CAST(0.5 AS DECIMAL(7,1))), (CAST(999.9 AS DECIMAL(7,1))), (NULL) AS t(x);
SELECT to_char(x, '$9,999') AS a, to_varchar(x, 'S999') AS b FROM VALUES (5), (-5), (12345) AS t(x);
SELECT to_char(x, 'base64') AS b, to_char(x, 'HEX') AS h, to_varchar(x, 'utf-8') AS u FROM VALUES (x'537061726b'), (x''), (NULL) AS t(x);
-- Timestamps from a date and a time, LIKE with an escape, NTZ parsing
SELECT make_timestamp(d, t) AS a, make_timestamp(d, t, 'Europe/Oslo') AS b, make_timestamp_ntz(d, t) AS c FROM VALUES (DATE'2024-03-31', TIME'02:30:00'), (DATE'2024-10-27', TIME'02:30:00'), (NULL, TIME'01:00:00') AS v(d, t);
SELECT make_timestamp(DATE'2014-12-28') AS a, try_make_timestamp(DATE'2014-12-28', TIME'6:30:45.887', 'CET') AS b;
SELECT s LIKE '/%a/_%' ESCAPE '/' AS l, s ILIKE '/%A%' ESCAPE '/' AS i, s NOT LIKE 'x//%' ESCAPE '/' AS n FROM VALUES ('%a_b'), ('%ab'), ('x/y'), (NULL) AS t(s);
SELECT to_timestamp_ntz(s) AS a, to_timestamp_ltz(s, 'yyyy-MM-dd HH:mm') AS b FROM VALUES ('2016-12-31 00:12'), (NULL) AS t(s);
SELECT dateadd(DATE'2016-07-30', 1) AS a, dateadd('2016-02-28', x) AS b FROM VALUES (1), (-1) AS t(x);
-- array_insert and sequence
SELECT array_insert(a, p, 9) AS r FROM VALUES (array(1, 2, 3), 1), (array(1, 2, 3), 4), (array(1, 2, 3), 6), (array(1, 2, 3), -1), (array(1, 2, 3), -4), (array(1, 2, 3), -6), (CAST(NULL AS ARRAY<INT>), 1) AS t(a, p);
SELECT array_insert(array('a', 'b'), 2, NULL) AS a, array_insert(array(1L, 2L), 1, 0) AS b;
SELECT array_insert(array(1, 2), 0, 9) AS r;
SELECT sequence(a, b) AS s, sequence(a, b, 2) AS t FROM VALUES (1, 5), (5, 1), (3, 3), (-2, 2) AS v(a, b);
SELECT sequence(a, b, -1) AS s FROM VALUES (1, 5) AS v(a, b);
SELECT sequence(DATE'2018-01-31', DATE'2018-05-01', INTERVAL 1 MONTH) AS m, sequence(DATE'2018-01-03', DATE'2018-01-01') AS d, sequence(DATE'2018-01-01', DATE'2018-01-10', INTERVAL 4 DAYS) AS w;
-- Text read as a TIMESTAMP, as Spark's cast reads it
SELECT CAST(s AS TIMESTAMP) AS t, to_timestamp(s) AS u, try_cast(s AS TIMESTAMP) AS v FROM VALUES ('2016-12-31 00:12'), (' 2016-12-31T01:02:03.5+01:00 '), ('2016'), ('2016-2'), ('2016-12-31 '), ('2016-12-31 01:02:03Z'), ('2016-12-31 01:02:03 UTC+1'), ('2024-03-31 02:30:00 Europe/Oslo'), ('2016-12-31 01:02:03.1234567'), (NULL) AS x(s);
SELECT CAST(s AS TIMESTAMP) AS t FROM VALUES ('2016-02-30'), ('2016-12-31 25:00'), ('bogus'), ('16-12-31') AS x(s);
SELECT to_timestamp(s) AS t FROM VALUES ('2016-12-31 1:2:3'), ('+2016-01-01'), ('2016-12-31T00:00:00-08:00') AS x(s);
-- Bitmaps, and lpad/rpad/overlay/trim of binaries
SELECT k, bitmap_count(bitmap_construct_agg(bitmap_bit_position(v))) AS n, hex(substring(bitmap_or_agg(b), 1, 3)) AS o, hex(substring(bitmap_and_agg(b), 1, 3)) AS a FROM VALUES (1, 1L, X'0102FF'), (1, 5L, X 'F0'), (2, 3L, NULL), (1, 5L, X'03'), (2, 7L, X'FFFF') AS t(k, v, b) GROUP BY k ORDER BY k;
SELECT hex(substring(bitmap_construct_agg(v), 1, 3)) AS c, length(bitmap_or_agg(b)) AS l, hex(substring(bitmap_and_agg(b), 1, 2)) AS a FROM VALUES (0L, CAST(NULL AS BINARY)), (9L, NULL), (NULL, NULL) AS t(v, b);
SELECT bitmap_construct_agg(v) AS c FROM VALUES (32768L) AS t(v);
SELECT bitmap_count(b) AS n FROM VALUES (X '1010'), (X'FFFF'), (X '0'), (X''), (NULL) AS t(b);
SELECT hex(lpad(b, n)) AS l, hex(rpad(b, n)) AS r, hex(lpad(b, n, p)) AS lp, hex(rpad(b, n, p)) AS rp FROM VALUES (unhex('aabb'), 5, unhex('1122')), (unhex('aabbcc'), 2, unhex('')), (unhex('aabb'), -1, unhex('11')), (NULL, 3, unhex('11')), (unhex('aa'), 3, NULL) AS t(b, n, p);
SELECT overlay(b PLACING r FROM p) AS o, overlay(b PLACING r FROM p FOR n) AS f FROM VALUES (encode('Spark SQL', 'utf-8'), encode('_', 'utf-8'), 6, 0), (encode('Spark', 'utf-8'), encode('XY', 'utf-8'), 0, -1), (encode('Spark', 'utf-8'), encode('XY', 'utf-8'), -2, 10), (encode('Spark', 'utf-8'), encode('XY', 'utf-8'), 10, 2) AS t(b, r, p, n);
SELECT btrim(b) AS t, btrim(b, encode('SL', 'utf-8')) AS u, ltrim(b) AS l, rtrim(b) AS r FROM VALUES (encode('  SSparkSQLS  ', 'utf-8')), (NULL) AS t(b);
-- hash (Murmur3) and xxhash64 of every type Spark hashes
SELECT hash(x) AS h, xxhash64(x) AS x FROM VALUES (CAST(1 AS TINYINT)), (CAST(-1 AS TINYINT)), (NULL) AS t(x);
SELECT hash(x) AS h, xxhash64(x) AS x FROM VALUES (0.0D), (-0.0D), (1.5D), (CAST('NaN' AS DOUBLE)) AS t(x);
SELECT hash(x) AS h, xxhash64(x) AS x FROM VALUES (0.0F), (-0.0F), (1.5F) AS t(x);
SELECT hash(x) AS h, xxhash64(x) AS x FROM VALUES ('a'), ('abcd'), ('abcdefg'), (''), ('héllo wörld ✓') AS t(x);
SELECT hash(x) AS h, xxhash64(x) AS x FROM VALUES (CAST(12.34 AS DECIMAL(10,2))), (CAST(-12345678901234567890.5 AS DECIMAL(30,1))), (CAST(127 AS DECIMAL(20,0))), (CAST(128 AS DECIMAL(20,0))) AS t(x);
SELECT hash(d, t) AS h, xxhash64(d, t) AS x FROM VALUES (DATE'2024-01-01', TIMESTAMP'2024-01-01 10:00:00'), (NULL, NULL) AS v(d, t);
SELECT hash(true, false) AS a, xxhash64(true, false) AS b, hash(X'0102FF') AS c, xxhash64(X'0102FF') AS d, hash(CAST(5 AS SMALLINT), -5, 9223372036854775807L) AS e, xxhash64(CAST(1 AS SMALLINT), -5) AS f;
SELECT hash(named_struct('a', 1, 'b', 'x')) AS a, xxhash64(named_struct('a', 1, 'b', 'x')) AS b, hash(array(array(1, 2), NULL, array(3))) AS c, xxhash64(array(array(1, 2), NULL, array(3))) AS d, hash(array('a', NULL, 'b')) AS e, hash('Spark', array(123), 2) AS f;
SELECT k, hash(k) % 4 AS bucket, xxhash64(concat(k, '|', CAST(v AS STRING))) AS key FROM VALUES ('a', 1), ('b', 2), ('c', NULL) AS t(k, v) ORDER BY k;
-- conv, convert_timezone, aes
SELECT conv(s, 10, 16) AS a, conv(s, 10, -16) AS b, conv(s, 16, 2) AS c FROM VALUES ('100'), ('-1'), ('ff'), (' 10'), ('1.5'), ('x'), (''), (NULL), ('18446744073709551615') AS t(s);
SELECT conv(n, 10, 2) AS a, conv(n, 36, 10) AS b, conv(CAST(n AS STRING), 2, 37) AS c FROM VALUES (255), (-255), (0) AS t(n);
SELECT conv('18446744073709551616', 10, 16) AS o;
SELECT convert_timezone('Europe/Brussels', 'America/Los_Angeles', t) AS a, convert_timezone('Europe/Oslo', 'UTC', t) AS b, convert_timezone('+01:00', t) AS c FROM VALUES (timestamp_ntz'2021-12-06 00:00:00'), (timestamp_ntz'2024-03-31 02:30:00'), (timestamp_ntz'2024-10-27 02:30:00'), (NULL) AS v(t);
SELECT convert_timezone('UTC', 'Europe/Oslo', timestamp'2024-03-31 01:30:00') AS a, convert_timezone('UTC', 'Asia/Kolkata', DATE'2024-01-01') AS b;
SELECT base64(aes_encrypt(s, '1234567890abcdef', 'ECB', 'PKCS')) AS e, base64(aes_encrypt(s, 'abcdefghijklmnop12345678ABCDEFGH', 'CBC', 'DEFAULT', unhex('000102030405060708090a0b0c0d0e0f'))) AS c, base64(aes_encrypt(s, '0000111122223333', 'GCM', 'DEFAULT', unhex('000000000000000000000000'), 'aad')) AS g FROM VALUES ('Spark SQL'), (''), (NULL) AS t(s);
SELECT CAST(aes_decrypt(aes_encrypt(s, k), k) AS STRING) AS round_trip, CAST(aes_decrypt(aes_encrypt(s, k, 'CBC'), k, 'CBC') AS STRING) AS cbc FROM VALUES ('secret', '0000111122223333'), ('x', 'abcdefghijklmnop12345678') AS t(s, k);
SELECT try_aes_decrypt(unhex('0011'), '0000111122223333', 'GCM') AS a, try_aes_decrypt(X'00', '0000111122223333', 'CTR') AS b;
SELECT aes_encrypt('Spark', '0123456789abcde') AS k;
SELECT aes_decrypt(unbase64('AAAAAAAAAAAAAAAAQiYi+sTLm7KD9UcZ2nlRdYDe/PX4'), 'abcdefghijklmnop12345678ABCDEFGH', 'GCM', 'DEFAULT', 'wrong aad') AS d;
SELECT array_prepend(a, e) AS p FROM VALUES (array('b', 'd'), 'x'), (CAST(NULL AS ARRAY<STRING>), 'y'), (array('c'), NULL) AS t(a, e);
-- json_tuple in the SELECT list and in a LATERAL VIEW; exact percentiles
SELECT json_tuple(j, 'a', 'b') FROM VALUES ('{"a":1, "b":"x"}'), ('{"a":{"c":[1,2]}}'), ('not json'), (NULL) AS t(j);
SELECT id, a, b FROM VALUES (1, '{"a":true, "b":2.50}'), (2, '{"b":null}') AS t(id, j) LATERAL VIEW json_tuple(j, 'a', 'b') v AS a, b ORDER BY id;
SELECT k, percentile(x, 0.5) AS m, percentile(x, array(0.0, 0.25, 1.0)) AS q, percentile_disc(0.6) WITHIN GROUP (ORDER BY x) AS d, percentile_disc(0.6) WITHIN GROUP (ORDER BY x DESC) AS e FROM VALUES (1, 1.5D), (1, NULL), (1, 3D), (1, -2D), (2, 7D), (3, NULL) AS t(k, x) GROUP BY k ORDER BY k;
SELECT percentile(x, array(0.25, 0.75)) AS a, percentile_disc(0.25) WITHIN GROUP (ORDER BY x) AS b, percentile(CAST(x AS DECIMAL(5,1)), 0.3) AS c FROM VALUES (0), (10) AS t(x);
SELECT percentile(x, 1.5) AS a FROM VALUES (1) AS t(x);
-- Lateral column aliases: a later item reads an earlier one's value, unless the FROM clause has the name.
SELECT a + 1 AS b, b * 2 AS c, c + b AS d FROM VALUES (1), (2) t(a);
SELECT a + 1 AS a, a * 2 AS c FROM VALUES (1), (2) t(a);
SELECT g, sum(a) AS s, s * 2 AS d FROM VALUES (1, 1), (2, 1), (5, 2) t(a, g) GROUP BY g;
SELECT upper(n) AS N2, concat(n2, '!') AS shout FROM VALUES ('x') t(n);
SELECT '\\abc' AS s, s ILIKE r'\\abc' AS a, s LIKE '\\\\abc' AS b, upper(s) AS c FROM VALUES (1) t(x);
-- The sum of a VOID column is a DOUBLE NULL.
SELECT sum(col) AS s, typeof(sum(col)) AS t, sum(x) AS sx FROM VALUES (NULL, 1), (NULL, 2) AS tab(col, x);
SELECT schema_of_json('{"a": 007, "b": [00.5, 1], "c": "01"}', map('allowNumericLeadingZeros', 'true')) AS s;
SELECT json_array_length(2) AS a;
SELECT json_object_keys(2) AS a;
SELECT json_array_length(NULL) AS a, json_array_length('[1, 2]') AS b;
SELECT count() AS n;
SELECT regexp_extract_all('1a 2b 14m', '(\\d+)?', 1) AS a, regexp_extract_all('abc', 'x*', 0) AS b, regexp_extract_all('héé', 'é?', 0) AS c;
SELECT regexp_substr('abc', '') AS a, regexp_substr('abc', 'x*') AS b, regexp_substr('abc', 'b+') AS c, regexp_substr('abc', 'z') AS d;
SELECT split('abc', '') AS a, split('a,b,,', ',') AS b, split('abc', '', 2) AS c, split('a1b22c', '\\d*') AS d, split('a1b', '\\d*', -1) AS e;
SELECT regexp_replace('1a 22b', '\\d*', '-') AS a, regexp_replace('abc', 'b*', 'X') AS b, regexp_count('1a 22b', '\\d*') AS c, regexp_instr('abc', 'x*') AS d;
SELECT regexp_replace('2024-01-05', '(\\d+)-(\\d+)-(\\d+)', '$3/$2/$1') AS a, regexp_replace('abc', '(b)', '[$1$10]') AS b, regexp_replace('a.b', '\\.', '\\$') AS c, regexp_replace(NULL, 'a', 'b') AS e;
SELECT regexp_replace('abc', 'b', '$2') AS a;
SELECT regexp_count('aaa', 'a*') AS a, regexp_count('', '') AS b, regexp_count('héllo', 'l') AS c, regexp_replace('héé', 'é?', '_') AS d;
WITH t(s) AS (VALUES ('a1'), ('b22'), (NULL), ('')) SELECT s, regexp_replace(s, '\\d', '#') AS r, regexp_count(s, '\\d') AS n, regexp_extract_all(s, '\\d*', 0) AS m FROM t;
SELECT sort_array(array(3, 1, 2), '1') AS a;
SELECT sort_array(array(3, 1, 2), true) AS a, sort_array(array(3, 1, 2), NULL) AS b, sort_array(array(3, 1, 2), NOT true) AS c;
SELECT sort_array(array(3, 1, 2), b) AS a FROM VALUES (true) t(b);
SELECT map_contains_key(map('1', 'a'), 1) AS a;
SELECT array_contains(array(1, 2), '1') AS a;
SELECT array_contains(array(1, 2), 1L) AS a, array_contains(array(1.5D), 1) AS b, array_contains(array(1), CAST(NULL AS INT)) AS c, array_contains(array('a', NULL), 'a') AS d;
SELECT array_contains(array('a'), NULL) AS a;
SELECT map_contains_key(map(1, 'a'), NULL) AS a;
SELECT array_contains(array(DATE'2024-01-01'), '2024-01-01') AS a;
-- The variances and standard deviations in Spark's formulas: one infinite value is NaN, not 0.0.
SELECT var_pop(x) AS a, var_samp(x) AS b, stddev_pop(x) AS c, stddev_samp(x) AS d FROM VALUES (CAST('Infinity' AS DOUBLE)) AS t(x);
SELECT k, var_samp(x) AS a, stddev(x) AS b, var_pop(DISTINCT x) AS c, std(x) AS d, variance(x) AS e FROM VALUES (1, 1.5D), (1, 2.5D), (2, -0.0D), (2, 0.0D), (2, 4.0D), (3, CAST('NaN' AS DOUBLE)) AS t(k, x) GROUP BY k;
SELECT x, var_samp(x) OVER (ORDER BY x ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING) AS v, stddev_pop(x) OVER (ORDER BY x) AS s, skewness(x) OVER (ORDER BY x ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING) AS k FROM VALUES (1), (5), (3), (10), (-2) AS t(x) ORDER BY x;
-- A LIKE pattern's escape may only precede `_`, `%` or itself, and may not end it: Spark fails
-- the query otherwise, per row where the pattern is a column.
SELECT 'ab' LIKE 'a\\b' AS a;
SELECT 'a' LIKE 'a\\' AS a;
SELECT 'ab' ILIKE 'A\\b' AS a;
SELECT x LIKE y AS a FROM VALUES ('ab', 'a\\b') AS t(x, y);
SELECT x, x LIKE y AS a, x NOT ILIKE y AS b FROM VALUES ('a%', 'a\\%'), ('b', NULL), ('a_c', 'a\\_c'), ('A\\', 'a\\\\') AS t(x, y) ORDER BY x;
