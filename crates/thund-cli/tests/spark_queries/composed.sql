-- What the query generator (`spark_generated.rs`) found where operators compose, one query
-- per finding.

-- The count of no rows in a correlated scalar subquery is 0, under an expression too.
WITH t(id, k) AS (VALUES (1, 3), (2, 3), (3, 1))
SELECT id, (SELECT count(1) IS NULL FROM t AS u WHERE u.k = t.id) AS none, (SELECT count(*) + 1 FROM t AS u WHERE u.k = t.id) AS more FROM t;
WITH t(id, k) AS (VALUES (1, 3), (2, 3), (3, 1))
SELECT id FROM t WHERE (SELECT count(1) IS NULL FROM t AS u WHERE u.k = t.id) < true;
-- ROLLUP, CUBE and GROUPING SETS with an empty set give no rows for no input rows.
WITH t(k, v) AS (VALUES (1, 2), (2, 3))
SELECT k, count(*) AS n, grouping_id() AS g FROM t WHERE v > 5 GROUP BY ROLLUP (k);
WITH t(k, v) AS (VALUES (1, 2), (2, 3))
SELECT k, sum(v) AS s FROM t WHERE v > 5 GROUP BY GROUPING SETS ((k), ());
WITH t(k, v) AS (VALUES (1, 2), (2, 3))
SELECT k, sum(v) AS s FROM t WHERE v > 5 GROUP BY k WITH CUBE;
WITH t(k, v) AS (VALUES (1, 2), (2, 3))
SELECT count(*) AS n, sum(v) AS s FROM t WHERE v > 5;
-- Column names from a VALUES alias or a CTE's column list keep their case.
SELECT * FROM VALUES (1, 2) AS t(id, Name);
WITH t(a, Bc) AS (VALUES (1, 2)) SELECT * FROM t;
WITH t(a, Bc) AS (VALUES (1, 2)) SELECT bc, BC + 1 AS next FROM t;
-- avg of a DECIMAL over a window is a DECIMAL(p+4,s+4).
WITH t(k, v) AS (VALUES (1, CAST(1.5 AS DECIMAL(10,2))), (1, CAST(2.25 AS DECIMAL(10,2))), (2, CAST(NULL AS DECIMAL(10,2))))
SELECT k, avg(v) OVER (PARTITION BY k) AS a FROM t;
WITH t(id, v) AS (VALUES (1, CAST(1.5 AS DECIMAL(10,2))), (2, CAST(2.25 AS DECIMAL(10,2))), (3, CAST(3 AS DECIMAL(10,2))))
SELECT id, avg(v) OVER (ORDER BY id ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) AS a FROM t;
-- INTERSECT and EXCEPT have the types of the union of their sides.
SELECT c FROM VALUES (99), (1) AS t(c) INTERSECT SELECT CAST(99 AS DECIMAL(38,18)) FROM VALUES (1) AS u(x);
SELECT c FROM VALUES (99), (1) AS t(c) EXCEPT SELECT CAST(99 AS DECIMAL(10,2)) FROM VALUES (1) AS u(x);
SELECT c FROM VALUES (1.5D), (2.0D) AS t(c) EXCEPT SELECT CAST(2 AS DECIMAL(10,2)) FROM VALUES (1) AS u(x);
-- A DOUBLE with a DECIMAL is a DOUBLE: in conditionals, comparisons, IN, VALUES and UNION.
WITH t(id, d, m) AS (VALUES (1, CAST(0.8333333333333334 AS DOUBLE), CAST(0.1 AS DECIMAL(10,2))))
SELECT CASE WHEN id > 0 THEN d ELSE m END AS a, coalesce(d, m) AS b, greatest(d, m) AS g, IF(id > 0, d, m) AS i, nvl(m, d) AS n, d = m AS e, d IN (m) AS h FROM t;
SELECT CAST(0.1 AS DOUBLE) = CAST(0.1 AS DECIMAL(10,2)) AS e, CAST(1.0E300 AS DOUBLE) > CAST(1 AS DECIMAL(10,2)) AS big;
SELECT * FROM VALUES (CAST(0.8333333333333334 AS DOUBLE)), (CAST(1 AS DECIMAL(10,2))) AS t(x);
SELECT CAST(0.8333333333333334 AS DOUBLE) AS x UNION ALL SELECT CAST(2.5 AS DECIMAL(3,1));
-- DECIMALs of different types in common: Spark keeps the integral digits over the scale.
SELECT CAST(1 AS DECIMAL(38,0)) = CAST(1.4 AS DECIMAL(38,18)) AS a, coalesce(CAST(1 AS DECIMAL(38,0)), CAST(1.4 AS DECIMAL(38,18))) AS b, greatest(CAST(1 AS DECIMAL(38,0)), CAST(1.6 AS DECIMAL(38,18))) AS k, CAST(1 AS DECIMAL(38,0)) IN (CAST(1.4 AS DECIMAL(38,18))) AS i;
SELECT x FROM (SELECT CAST(1 AS DECIMAL(38,0)) AS x UNION ALL SELECT CAST(1.4 AS DECIMAL(38,18)));
SELECT CASE WHEN rand() < 2 THEN CAST(82 AS DECIMAL(38,0)) ELSE CAST(286.42 AS DECIMAL(38,18)) END AS c;
SELECT CAST(-214 AS DECIMAL(38,0)) AS c UNION ALL SELECT CAST(1.5 AS DECIMAL(5,3));
SELECT CAST(1 AS DECIMAL(10,2)) = 1 AS a, CAST(1.5 AS DECIMAL(3,1)) IN (1, 2) AS b, coalesce(CAST(NULL AS DECIMAL(5,2)), 7) AS c;
-- DECIMAL arithmetic: Spark's result types, exact and rounded half up.
SELECT CAST(1 AS INT) - CAST(1.5 AS DECIMAL(38,18)) AS a, CAST(1.25 AS DECIMAL(38,18)) * CAST(3.3 AS DECIMAL(38,18)) AS b, CAST(1 AS DECIMAL(10,2)) % CAST(0.3 AS DECIMAL(5,3)) AS c, CAST(10.5 AS DECIMAL(10,2)) + CAST(1.123456789012 AS DECIMAL(38,12)) AS d;
SELECT CAST(0.000001 AS DECIMAL(38,12)) * CAST(0.5 AS DECIMAL(38,12)) AS half_up, CAST(-0.000001 AS DECIMAL(38,12)) * CAST(0.5 AS DECIMAL(38,12)) AS negative;
SELECT CAST('99999999999999999999.5' AS DECIMAL(38,18)) * CAST(10 AS DECIMAL(38,18)) AS over;
SELECT CAST('99999999999999999999999999999999999999' AS DECIMAL(38,0)) + CAST(1 AS DECIMAL(38,0)) AS over;
SELECT CAST(7 AS DECIMAL(10,2)) % CAST(0 AS DECIMAL(10,2)) AS by_zero;
-- A DECIMAL sum that overflows its type fails (ANSI) or is NULL.
SELECT sum(v) AS s FROM VALUES (CAST('99999999999999999999.9' AS DECIMAL(38,18))), (CAST('99999999999999999999.9' AS DECIMAL(38,18))) AS t(v);
SELECT sum(v) AS s, count(*) AS n FROM VALUES (CAST('60000000000000000000' AS DECIMAL(38,18))), (CAST('-60000000000000000000' AS DECIMAL(38,18))) AS t(v);
SELECT k, sum(v) AS s FROM VALUES (1, CAST(12.5 AS DECIMAL(10,2))), (1, CAST(0.25 AS DECIMAL(10,2))), (2, CAST(NULL AS DECIMAL(10,2))) AS t(k, v) GROUP BY k;
-- Timestamps and numbers cast by seconds; dates and numbers do not cast.
SELECT CAST(TIMESTAMP'1969-12-31 23:59:59.5' AS BIGINT) AS a, CAST(TIMESTAMP'1969-12-31 23:59:59.5' AS DOUBLE) AS b, CAST(TIMESTAMP'1969-12-31 23:59:59.5' AS DECIMAL(38,2)) AS c, CAST(TIMESTAMP'1969-12-31 23:59:59.4' AS TINYINT) AS k;
SELECT CAST(CAST(-94.849 AS DECIMAL(5,3)) AS TIMESTAMP) AS e, CAST(1.5D AS TIMESTAMP) AS f, CAST(5 AS TIMESTAMP) AS g, CAST(TIMESTAMP'2024-01-01 00:00:00.123456' AS DECIMAL(20,6)) AS i;
SELECT CAST(CAST(1.0000005 AS DECIMAL(8,7)) AS TIMESTAMP) AS a, CAST(CAST(-1.0000005 AS DECIMAL(8,7)) AS TIMESTAMP) AS b, CAST(TIMESTAMP'1969-12-31 23:59:59.999999' AS DECIMAL(10,3)) AS f;
SELECT CAST(TIMESTAMP'2024-01-01 00:00:00' AS DECIMAL(5,2)) AS a;
SELECT CAST(TIMESTAMP'2024-01-01 00:00:00' AS SMALLINT) AS k;
SELECT CAST(CAST('NaN' AS DOUBLE) AS TIMESTAMP) AS c;
SELECT CAST(CAST(1e30D AS TIMESTAMP) AS BIGINT) AS b;
SELECT CAST(TIMESTAMP'2024-01-01 00:00:00' AS BOOLEAN) AS l, CAST(true AS TIMESTAMP) AS m;
SELECT CAST(DATE'2024-01-01' AS INT) AS a;
SELECT try_cast(DATE'2024-01-01' AS INT) AS a;
SELECT CAST(DATE'2024-01-01' AS BOOLEAN) AS a;
SELECT CAST(true AS DATE) AS a;
SELECT CAST(DATE'2024-01-01' AS DECIMAL(10,0)) AS a;
SELECT CAST(5 AS DATE) AS a;
SELECT CAST(TIMESTAMP_NTZ'2024-01-01 00:00:00' AS BIGINT) AS a;
-- A NATURAL semi or anti join is refused by Spark.
WITH t(id, k) AS (VALUES (1, 3), (2, 3)) SELECT * FROM t AS a NATURAL LEFT SEMI JOIN t AS b;
WITH t(id, k) AS (VALUES (1, 3), (2, 3)) SELECT * FROM t AS a NATURAL LEFT ANTI JOIN t AS b;
-- Text with a date in a set operation: the date in ANSI mode, text without it.
SELECT DATE'2024-01-01' AS c UNION ALL SELECT 'x';
SELECT DATE'2024-01-01' AS c UNION ALL SELECT '2024-02-01';
SELECT DATE'2024-01-01' AS c EXCEPT SELECT '2024-01-01';
SELECT TIMESTAMP'2024-01-01 10:00:00' AS c INTERSECT SELECT '2024-01-01 10:00:00';
-- USING joins: the keys first in `*`; a right join's key from the right, a full join's from either.
SELECT * FROM VALUES ('x', 1) AS a(name, id) JOIN VALUES (5, 1) AS b(total, id) USING (id);
SELECT * FROM VALUES ('x', 1), ('y', 3) AS a(name, id) LEFT JOIN VALUES (5, 1) AS b(total, id) USING (id);
SELECT id, name, total FROM VALUES ('x', 1) AS a(name, id) RIGHT JOIN VALUES (5, 1), (6, 2) AS b(total, id) USING (id);
SELECT * FROM VALUES ('x', 1) AS a(name, id) RIGHT JOIN VALUES (5, 1), (6, 2) AS b(total, id) USING (id);
SELECT * FROM VALUES ('x', 1), ('y', 3) AS a(name, id) FULL JOIN VALUES (5, 1), (6, 2) AS b(total, id) USING (id);
SELECT id, count(*) AS n FROM VALUES ('x', 1), ('y', 3) AS a(name, id) FULL JOIN VALUES (5, 1), (6, 2) AS b(total, id) USING (id) WHERE id > 0 GROUP BY id;
SELECT a.id AS l, b.id AS r, id FROM VALUES (1), (3) AS a(id) RIGHT JOIN VALUES (1), (2) AS b(id) USING (id);
-- `-x` and `abs(x)` of a DECIMAL round to 34 digits.
SELECT -CAST('12345678901234567890123456789012345678' AS DECIMAL(38,0)) AS a, abs(CAST('-12345678901234567890123456789012345678' AS DECIMAL(38,0))) AS b, -CAST(1.5 AS DECIMAL(3,1)) AS c;
SELECT abs(d) AS a FROM VALUES (CAST('12345678901234567890123456789012345678' AS DECIMAL(38,0))), (CAST('99999999999999999999999999999999999999' AS DECIMAL(38,0))), (CAST('-5' AS DECIMAL(38,0))) AS t(d) ORDER BY a;
SELECT -p AS a FROM VALUES (CAST('99999999999999999999999999999999999999' AS DECIMAL(38,0))) AS t(p);
-- A constant of a select list that fails fails the query, even where no row reaches it.
SELECT c FROM (SELECT CAST('x' AS INT) AS c FROM VALUES (1) AS t(x) ORDER BY 1 LIMIT 0);
SELECT CASE WHEN x > 5 THEN CAST('x' AS INT) END AS c, coalesce(x, 1 / 0) AS d FROM VALUES (1) AS t(x);
-- A date or timestamp is not compared with a number; a set operation does not mix them.
SELECT x < DATE'2024-01-01' AS c FROM VALUES (1) AS t(x);
SELECT TIMESTAMP'2024-01-01 00:00:00' = 5 AS c;
SELECT DATE'2024-01-01' AS c UNION ALL SELECT 5;
SELECT true AS c UNION SELECT 1;
SELECT 1 AS c EXCEPT SELECT DATE'2024-01-01';
-- DECIMAL arithmetic typed as Spark types it below an aggregate or a window.
SELECT sum(CAST(268.22 AS DECIMAL(38,18)) - x) AS s FROM VALUES (1), (2) AS t(x);
SELECT sum(CAST(360.08 AS DECIMAL(38,18)) + x) OVER () AS s FROM VALUES (CAST(1 AS DECIMAL(38,0))), (CAST(2 AS DECIMAL(38,0))) AS t(x);
SELECT avg(round(CAST(-853.25 AS DECIMAL(10,2)), 1)) AS a, avg(x / CAST(-56 AS BIGINT)) AS b FROM VALUES (CAST(10 AS DECIMAL(20,2))) AS t(x);
SELECT x * x AS p FROM VALUES (CAST(1.5 AS DECIMAL(38,18))) AS t(x) UNION ALL SELECT CAST(NULL AS BIGINT);
-- A derived table's duplicate column name is ambiguous where it is read.
SELECT s.id FROM (SELECT * FROM VALUES (1) AS a(id) CROSS JOIN VALUES (2) AS b(id)) AS s;
-- Logarithms of what is not positive are NULL; `log(x)` is the natural logarithm.
SELECT ln(x) AS a, log10(x) AS b, log2(x) AS c, log(x) AS d, log(2, x) AS e, log(x, 8) AS f FROM VALUES (-4.5D), (0D), (2D), (CAST('NaN' AS DOUBLE)), (NULL) AS t(x);
-- A DECIMAL met by floating point in `%` and `/` is computed as a DOUBLE, a zero divisor included.
SELECT CAST(29.261 AS DECIMAL(5,3)) % y AS m, CAST(29.261 AS DECIMAL(5,3)) / y AS d FROM VALUES (0D), (4.75D) AS t(y);
-- Every NaN sorts as one value above all numbers, and -0.0 with 0.0, in ORDER BY and windows.
SELECT x, rank() OVER (ORDER BY x) AS r FROM VALUES (CAST('NaN' AS DOUBLE)), (0D), (-CAST('NaN' AS DOUBLE)), (CAST('Infinity' AS DOUBLE) % CAST('Infinity' AS DOUBLE)), (1D), (CAST('-Infinity' AS DOUBLE)) AS t(x) ORDER BY x, r;
-- A CASE of INT and DOUBLE branches is a DOUBLE below a window or an aggregate, rows or none.
SELECT sum(CASE WHEN k >= id THEN id ELSE -9.5D END) OVER (PARTITION BY k) AS s FROM VALUES (1, 2), (2, 1) AS t(id, k) ORDER BY s;
SELECT sum(CASE WHEN k >= id THEN id ELSE -9.5D END) OVER (PARTITION BY k) AS s FROM VALUES (1, 2), (2, 1) AS t(id, k) WHERE id > 5;
-- Dates with timestamps in a set operation: TIMESTAMP where one is.
SELECT DATE'2024-02-29' AS c EXCEPT SELECT TIMESTAMP'2024-01-01 10:00:00';
SELECT DATE'2024-02-29' AS c UNION ALL SELECT TIMESTAMP_NTZ'2024-01-01 10:00:00';
-- A predicate on no column above an aggregate without GROUP BY removes its one row.
SELECT count(*) AS n FROM VALUES (1) AS t(x) HAVING (SELECT max(y) FROM VALUES (5) AS u(y)) > 10;
SELECT count(*) AS n FROM VALUES (1) AS t(x) HAVING 1 = 0;
SELECT s FROM (SELECT sum(x) AS s FROM VALUES (1) AS t(x) WHERE x > 5) WHERE (SELECT max(y) FROM VALUES (5) AS u(y)) = 4;
-- A grouped `avg` keeps only the rows of its FILTER.
SELECT a, avg(x) FILTER (WHERE b > 0) AS v, median(x) FILTER (WHERE b > 0) AS m, sum(x) FILTER (WHERE b > 0) AS s FROM VALUES (1, NULL, 5), (1, 2, 7), (2, NULL, 1) AS t(a, b, x) GROUP BY a ORDER BY a;
SELECT a, avg(x) FILTER (WHERE b > 0) AS v FROM VALUES (1, NULL, 5), (1, 2, 7), (2, NULL, 1) AS t(a, b, x) GROUP BY a GROUPING SETS ((a), ()) ORDER BY a;
-- `/` of integers is a DOUBLE, and a CASE of INT and DOUBLE branches one, before a set operation reads their types.
SELECT 7 / 2 AS a UNION ALL SELECT CAST(1.5 AS DECIMAL(10,2));
SELECT CASE WHEN x > 0 THEN 1 ELSE 2.5D END AS a FROM VALUES (1), (0) AS t(x) UNION ALL SELECT CAST(1.5 AS DECIMAL(10,2));
-- A predicate the optimizer finds never true, above an aggregate without GROUP BY.
SELECT * FROM (SELECT count(*) AS c FROM VALUES (1) AS t(x)) WHERE c NOT IN (CAST(NULL AS BIGINT), 47);
-- An operator after a predicate without parentheses is not read as Spark reads it: refused (parentheses are read alike).
SELECT 1 IS NULL <=> NULL AS a;
SELECT (1 IS NULL) <=> NULL AS a, (2 IN (1, 2)) = true AS b;
SELECT x IN (1, 2) = true AS a FROM VALUES (1) AS t(x);
-- `split` by an empty pattern splits between characters, with no trailing empty piece; a NULL order of `sort_array` is NULL.
SELECT split('abc', '') AS a, split('abc', '', 2) AS b, split('', '') AS c, split('aé,b', '', 0) AS d, split(s, '') AS e FROM VALUES ('xy'), (NULL) AS t(s);
SELECT sort_array(array(3, 1, 2), NULL) AS a, sort_array(array(3, 1, NULL), false) AS b, sort_array(array(3, 1, NULL)) AS c;
SELECT col FROM VALUES 1 T(col);
SELECT * FROM VALUES 1, 2, 3 AS t(a);
SELECT * FROM VALUES ('a', 1), ('b', 2);
VALUES 1, 2;
SELECT * FROM (VALUES 1, 2) t(a);
SELECT * FROM VALUES (1, 2) AS t(a, b) JOIN VALUES 1 AS s(a) USING (a);
SELECT t.col2 FROM VALUES ('a', 1.5D), ('b', 2) AS t;
SELECT * FROM VALUES CASE WHEN 1 > 0 THEN 7 END, NULL, 2 + 3 * 4 AS t(x);
SELECT * FROM VALUES NOT true IS NULL, false AS t(x);
SELECT * FROM VALUES 1.5D, 2L T(x) WHERE x > 1.6;
WITH s AS (VALUES (1, 'a')) SELECT * FROM s;
SELECT 1 AS a UNION ALL VALUES (2);
VALUES (1, 'a'), (2, 'b') ORDER BY 1 DESC;
SELECT col1 + 1 AS n FROM (VALUES (1), (2)) ORDER BY n;
SELECT N1 FROM (SELECT 1 AS n1);
SELECT N1, count(*) AS c FROM (SELECT 1 AS n1) GROUP BY N1 ORDER BY N1;
SELECT ID, id, `Id` FROM (SELECT 1 AS Id);
WITH a(d, dt) AS (VALUES ('99999999.99', '1999-12-31'), ('1.10', NULL)), b(d, dt, v) AS (VALUES (CAST(99999999.99 AS DECIMAL(10,2)), DATE'1999-12-31', 1))
SELECT * FROM a FULL JOIN b USING (d, dt);
