-- Spark's two modes (`spark.sql.ansi.enabled`): overflow, division by zero, invalid casts,
-- out-of-range indexes and string coercion either fail the query (ANSI) or give NULL, a wrapped
-- value or another type (non-ANSI).

-- Integer overflow
SELECT 2147483647 + 1 AS v;
SELECT 9223372036854775807L + 1 AS v;
SELECT 100000 * 100000 AS v;
SELECT -2147483648 - 1 AS v;
SELECT x + 1 AS v FROM VALUES (2147483646), (2147483647) AS t(x);
SELECT x * y AS v FROM VALUES (65536, 32768), (2, 3) AS t(x, y);
SELECT CAST(127 AS TINYINT) + CAST(1 AS TINYINT) AS v;
SELECT CAST(-128 AS TINYINT) - 1 AS v;
SELECT CAST(32767 AS SMALLINT) * CAST(2 AS SMALLINT) AS v;
SELECT sum(x) AS v FROM VALUES (9223372036854775807L), (1L) AS t(x);
SELECT sum(x) AS v FROM VALUES (2147483647), (1) AS t(x);
SELECT k, sum(x) AS v FROM VALUES (1, 9223372036854775807L), (1, 1L), (2, 3L) AS t(k, x) GROUP BY k;
SELECT k, sum(x) AS v, sum(x) FILTER (WHERE x > 1) AS f FROM VALUES (1, 5L), (1, 1L), (2, NULL), (3, 2L) AS t(k, x) GROUP BY k;
SELECT x, sum(x) OVER (ORDER BY x ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) AS v FROM VALUES (9223372036854775807L), (-5L), (1L) AS t(x);
SELECT x, sum(x) OVER (ORDER BY x ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) AS v FROM VALUES (9223372036854775807L), (-5L), (-1L) AS t(x);
SELECT k, sum(x) OVER (PARTITION BY k) AS v FROM VALUES (1, 9223372036854775807L), (1, 1L), (2, 3L) AS t(k, x);
SELECT sum(x) AS v FROM VALUES (9223372036854775807L), (1L), (-2L) AS t(x);
SELECT sum(x % 7) AS v FROM range(0, 1000) AS t(x);
SELECT x % 0 AS v, x % 3 AS w FROM VALUES (5), (-7) AS t(x);
SELECT abs(x) AS v FROM VALUES (-2147483648), (-5) AS t(x);
SELECT -x AS v FROM VALUES (CAST(-128 AS TINYINT)) AS t(x);
-- Division and remainder by zero
SELECT 1 / 0 AS v;
SELECT x / y AS v FROM VALUES (1, 0), (4, 2) AS t(x, y);
SELECT 1 div 0 AS v;
SELECT x div y AS v FROM VALUES (7, 0), (7, 2) AS t(x, y);
SELECT 5 % 0 AS v;
SELECT x % y AS v FROM VALUES (5, 0), (5, 3) AS t(x, y);
SELECT pmod(5, 0) AS v;
SELECT 5.0 / 0 AS v;
SELECT 1.0 / 0.0 AS v;
SELECT CAST(1.5 AS DOUBLE) / 0 AS v;
-- Casts from strings
SELECT CAST('abc' AS INT) AS v;
SELECT CAST('1.5' AS INT) AS v;
SELECT CAST(' 12 ' AS INT) AS v;
SELECT CAST('1e3' AS INT) AS v;
SELECT CAST(s AS INT) AS v FROM VALUES ('7'), ('x'), (NULL) AS t(s);
SELECT CAST(s AS BIGINT) AS v FROM VALUES ('-9'), ('9223372036854775808') AS t(s);
SELECT CAST('abc' AS DATE) AS v;
SELECT CAST('2024-13-01' AS DATE) AS v;
SELECT CAST(s AS DATE) AS v FROM VALUES ('2024-02-29'), ('2023-02-29') AS t(s);
SELECT CAST('x' AS DOUBLE) AS v;
SELECT CAST(' 1.0 ' AS DOUBLE) AS v;
SELECT CAST('x' AS BOOLEAN) AS v;
SELECT CAST(s AS BOOLEAN) AS v FROM VALUES ('true'), ('N'), ('1'), ('yes') AS t(s);
SELECT CAST('x' AS TIMESTAMP) AS v;
SELECT CAST('2024-01-01 25:00:00' AS TIMESTAMP) AS v;
SELECT CAST('12.345' AS DECIMAL(4,1)) AS v;
SELECT CAST('12345.6' AS DECIMAL(4,1)) AS v;
-- Numeric casts that overflow
SELECT CAST(300 AS TINYINT) AS v;
SELECT CAST(2147483648L AS INT) AS v;
SELECT CAST(3e10 AS INT) AS v;
SELECT CAST(-1.9 AS INT) AS v;
SELECT CAST(1.9 AS BIGINT) AS v;
SELECT CAST(12345.678 AS DECIMAL(4,1)) AS v;
SELECT CAST(12.5 AS DECIMAL(2,0)) AS v;
SELECT CAST(x AS SMALLINT) AS v FROM VALUES (40000), (12) AS t(x);
-- Indexes out of range
SELECT array(1, 2)[5] AS v;
SELECT array(1, 2)[-1] AS v;
SELECT element_at(array(1, 2), 5) AS v;
SELECT a[i] AS v FROM VALUES (array(1, 2, 3), 1), (array(4), 3) AS t(a, i);
SELECT map(1, 2)[3] AS v;
SELECT element_at(map(1, 2), 3) AS v;
SELECT elt(5, 'a', 'b') AS v;
-- Strings met by numbers
SELECT '1' + 1 AS v;
SELECT '1.5' + 1 AS v;
SELECT 'a' + 1 AS v;
SELECT 5 - 'a' AS v;
SELECT '3' * '2' AS v;
SELECT '3' / '2' AS v;
SELECT CAST(NULL AS INT) + '2' AS v;
SELECT 1 = '1' AS v;
SELECT 1 = 'a' AS v;
SELECT 'a' < 1 AS v;
SELECT 1 IN ('1', 'a') AS v;
SELECT x FROM VALUES ('1'), ('a') AS t(x) WHERE x = 1;
SELECT s + 1 AS v FROM VALUES ('10'), ('2') AS t(s);
SELECT CASE WHEN true THEN 1 ELSE 'a' END AS v;
SELECT coalesce(1, 'a') AS v;
SELECT concat('a', 1) AS v;
SELECT '2024-01-01' = DATE'2024-01-01' AS v;
SELECT date_add('2024-01-01', '1') AS v;
-- Functions whose bad input fails or gives NULL
SELECT to_date('x') AS v;
SELECT to_date(s) AS v FROM VALUES ('2024-05-06'), ('nope') AS t(s);
SELECT to_timestamp('x') AS v;
SELECT to_date('2024/05/06', 'yyyy-MM-dd') AS v;
SELECT unix_timestamp('x', 'yyyy') AS v;
SELECT make_date(2024, 13, 1) AS v;
SELECT make_date(y, 2, 29) AS v FROM VALUES (2024), (2023) AS t(y);
SELECT next_day(DATE'2024-01-01', 'xx') AS v;
SELECT size(NULL) AS v;
SELECT size(a) AS v FROM VALUES (array(1)), (NULL) AS t(a);
WITH l(k, a) AS (VALUES (1, 'x'), (2, 'y')), r(k, s, q) AS (VALUES (5, 'true', 1), (6, '3', 2)) SELECT * FROM l LEFT JOIN r ON l.k = r.k WHERE (r.s != CAST('7' AS DOUBLE) OR r.q <> r.q);
WITH l(k) AS (VALUES (1), (2)), r(k) AS (VALUES (3)) SELECT l.k FROM l JOIN r ON l.k = r.k WHERE l.k >= CAST('a' AS INT);
WITH l(k, d) AS (VALUES (1, CAST(1 AS DECIMAL(10,2)))), r(k) AS (VALUES (3)) SELECT CAST('99999999999999999999999999999999999999' AS DECIMAL(38,0)) - coalesce(CAST('-99999999.04' AS DECIMAL(10,2)), l.d) AS c FROM l JOIN r ON l.k = r.k;
WITH l(k) AS (VALUES (1), (2)), r(k) AS (VALUES (3)) SELECT sum(CAST('a' AS DOUBLE)) OVER (PARTITION BY l.k) AS s FROM l JOIN r ON l.k = r.k;
