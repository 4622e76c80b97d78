-- Aggregation: GROUP BY, HAVING, GROUPING SETS, ROLLUP, CUBE, DISTINCT aggregates, FILTER.

WITH s(region, product, qty) AS (VALUES ('n', 'a', 1), ('n', 'b', 2), ('s', 'a', 3), ('s', 'a', 4), ('e', NULL, 5))
SELECT region, sum(qty) AS total, count(*) AS n FROM s GROUP BY region;
WITH s(region, product, qty) AS (VALUES ('n', 'a', 1), ('n', 'b', 2), ('s', 'a', 3), ('s', 'a', 4), ('e', NULL, 5))
SELECT region, product, sum(qty) AS total FROM s GROUP BY ROLLUP (region, product);
WITH s(region, product, qty) AS (VALUES ('n', 'a', 1), ('n', 'b', 2), ('s', 'a', 3), ('s', 'a', 4), ('e', NULL, 5))
SELECT region, product, sum(qty) AS total FROM s GROUP BY CUBE (region, product);
WITH s(region, product, qty) AS (VALUES ('n', 'a', 1), ('n', 'b', 2), ('s', 'a', 3), ('s', 'a', 4), ('e', NULL, 5))
SELECT region, product, sum(qty) AS total FROM s GROUP BY GROUPING SETS ((region), (product), ());
WITH s(region, product, qty) AS (VALUES ('n', 'a', 1), ('n', 'b', 2), ('s', 'a', 3), ('s', 'a', 4), ('e', NULL, 5))
SELECT region, product, sum(qty) AS total, grouping_id() AS g FROM s GROUP BY ROLLUP (region, product);
WITH s(region, product, qty) AS (VALUES ('n', 'a', 1), ('n', 'b', 2), ('s', 'a', 3), ('s', 'a', 4), ('e', NULL, 5))
SELECT region, sum(qty) AS total FROM s GROUP BY region HAVING sum(qty) > 2;
WITH s(region, product, qty) AS (VALUES ('n', 'a', 1), ('n', 'b', 2), ('s', 'a', 3), ('s', 'a', 4), ('e', NULL, 5))
SELECT region, count(DISTINCT product) AS products FROM s GROUP BY region;
WITH s(region, product, qty) AS (VALUES ('n', 'a', 1), ('n', 'b', 2), ('s', 'a', 3), ('s', 'a', 4), ('e', NULL, 5))
SELECT count(product) AS with_product, count(*) AS all_rows, count(DISTINCT region) AS regions FROM s;
WITH s(region, product, qty) AS (VALUES ('n', 'a', 1), ('n', 'b', 2), ('s', 'a', 3), ('s', 'a', 4), ('e', NULL, 5))
SELECT region, sum(qty) FILTER (WHERE product = 'a') AS a_qty FROM s GROUP BY region;
WITH s(region, qty) AS (VALUES ('n', 1), ('n', 2), ('s', 3))
SELECT region, avg(qty) AS mean, min(qty) AS lo, max(qty) AS hi FROM s GROUP BY region;
WITH s(region, amount) AS (VALUES ('n', 1.25), ('n', 2.50), ('s', 3.10))
SELECT region, sum(amount) AS total, avg(amount) AS mean FROM s GROUP BY region;
WITH s(x) AS (VALUES (1), (2), (3), (4))
SELECT stddev(x) AS sd, variance(x) AS var, stddev_pop(x) AS sdp, var_pop(x) AS vp FROM s;
WITH s(k, x) AS (VALUES (1, NULL), (1, NULL), (2, 5))
SELECT k, sum(x) AS total, avg(x) AS mean, count(x) AS n FROM s GROUP BY k;
WITH s(x) AS (SELECT * FROM VALUES (1) AS v(x) WHERE x > 5)
SELECT sum(x) AS total, count(*) AS n, max(x) AS hi FROM s;
WITH s(k, v) AS (VALUES ('a', 3), ('a', 1), ('b', 2))
SELECT k, max_by(v, v) AS top, min_by(k, v) AS low_key FROM s GROUP BY k;
WITH s(k, b) AS (VALUES ('a', true), ('a', false), ('b', true))
SELECT k, bool_and(b) AS every_b, bool_or(b) AS some_b, count_if(b) AS n FROM s GROUP BY k;
WITH s(k, v) AS (VALUES ('a', 3), ('a', 1), ('b', 2))
SELECT k, sort_array(collect_list(v)) AS vs FROM s GROUP BY k;
WITH s(k, v) AS (VALUES ('a', 3), ('a', 3), ('b', 2))
SELECT k, sort_array(collect_set(v)) AS vs FROM s GROUP BY k;
WITH s(k, v) AS (VALUES (1, 10), (2, 20), (3, 30))
SELECT k % 2 AS parity, sum(v) AS total FROM s GROUP BY k % 2;
WITH s(k, v) AS (VALUES (1, 10), (2, 20), (3, 30))
SELECT k % 2 AS parity, sum(v) AS total FROM s GROUP BY 1;
WITH s(k, v) AS (VALUES (1, 10), (2, 20), (3, 30))
SELECT sum(v) AS total FROM s GROUP BY ALL;
WITH s(k, v) AS (VALUES ('a', 10), ('b', 20), ('a', 30))
SELECT k, sum(v) AS total FROM s GROUP BY ALL ORDER BY k;
WITH s(k, v) AS (VALUES ('a', 10), ('b', 20), ('a', 30))
SELECT DISTINCT k FROM s;
WITH s(a, b) AS (VALUES (1, 2), (1, 2), (2, 1))
SELECT DISTINCT a, b FROM s;
WITH s(k, v) AS (VALUES ('a', 10L), ('b', 20L))
SELECT sum(v) AS total, avg(v) AS mean FROM s;
WITH s(k, v) AS (VALUES ('a', 1.5D), ('b', 2.5D))
SELECT sum(v) AS total, avg(v) AS mean FROM s;
WITH s(k, v) AS (VALUES ('a', 10), ('b', 20))
SELECT first(k) AS f, last(v) AS l, any_value(k) IS NOT NULL AS has FROM (SELECT * FROM s ORDER BY k);
-- mode: the most frequent value; ties broken only when asked
SELECT k, mode(v) AS m FROM VALUES (1, 10), (1, 10), (1, 20), (2, NULL), (3, 5) AS t(k, v) GROUP BY k;
SELECT mode(v, true) AS least, mode() WITHIN GROUP (ORDER BY v) AS asc_, mode() WITHIN GROUP (ORDER BY v DESC) AS desc_ FROM VALUES (0), (10), (10), (20), (20) AS t(v);
SELECT k, mode(s, true) AS m FROM VALUES (1, 'b'), (1, 'a'), (1, 'b'), (2, 'x') AS t(k, s) GROUP BY k;
SELECT k, percentile(v, 0.25) AS p, percentile(v, 0.5) AS q FROM VALUES (1, 1), (1, 2), (1, 3), (1, 4), (2, 7) AS t(k, v) GROUP BY k;
SELECT name, height, grouping_id() AS g, grouping_id(name, height) AS hn, grouping(name) AS gn, sum(age) AS s FROM VALUES (2, 'Alice', 165), (5, 'Bob', 180), (7, 'Bob', 165) AS people(age, name, height) GROUP BY cube(name, height) ORDER BY g, name, height;
SELECT a, b, grouping_id() AS g, grouping(b) AS gb, count(*) AS n FROM VALUES (1, 'x'), (1, 'y'), (2, 'x') AS t(a, b) GROUP BY ROLLUP(a, b) HAVING grouping_id() < 3 ORDER BY g, a, b;
SELECT a, b, grouping_id() AS g, sum(a) AS s FROM VALUES (1, 'x'), (1, 'y'), (2, 'x') AS t(a, b) GROUP BY GROUPING SETS ((b), (a, b), ()) ORDER BY g, a, b;
-- collect_set answers its elements in the order Spark's hash set gives them.
SELECT collect_set(col) FROM VALUES (17), (1), (33), (-1), (16), (100000), (-5) AS tab(col);
SELECT collect_set(col) FROM VALUES ('a'), ('b'), ('c'), ('spark'), ('') AS tab(col);
SELECT collect_set(col) FROM (SELECT id AS col FROM range(30));
SELECT collect_set(col) FROM VALUES (5000000000L), (1L), (-3L) AS tab(col);
SELECT collect_set(col) FROM VALUES (true), (false) AS tab(col);
SELECT collect_set(col) FROM VALUES (DATE'2024-01-01'), (DATE'1970-01-02') AS tab(col);
SELECT collect_set(col) FROM VALUES (TIMESTAMP'2024-01-01 00:00:00'), (TIMESTAMP'1970-01-01 00:00:01') AS tab(col);
SELECT k, collect_set(v) FROM VALUES (1, 'x'), (1, 'y'), (2, 'z'), (1, 'x') AS t(k, v) GROUP BY k;
-- From 12 elements on, Spark's order of a set depends on how its rows were partitioned: refused
-- natively unless what reads the set does not depend on its order.
SELECT collect_set(x) AS s FROM VALUES (1), (2), (3), (4), (5), (6), (7), (8), (9), (10), (11), (12) AS t(x);
SELECT array_sort(collect_set(x)) AS s, size(collect_set(x)) AS n, array_contains(collect_set(x), 7) AS c, array_max(collect_set(x)) AS m FROM (SELECT id AS x FROM range(40));
SELECT k, sort_array(collect_set(v), false) AS s FROM (SELECT id % 2 AS k, id AS v FROM range(50)) GROUP BY k;
-- Sets of values whose hash is not computed here (structs, DECIMALs) are refused natively.
SELECT collect_set(named_struct('a', x)) AS s FROM VALUES (1), (2), (3) AS t(x);
SELECT collect_set(CAST(x AS DECIMAL(5, 2))) AS s FROM VALUES (1), (2), (3) AS t(x);
SELECT collect_set(CAST(x AS DECIMAL(5, 2))) AS s FROM VALUES (1), (1) AS t(x);
-- Spark 4.2 keys a DOUBLE set on the value's bits (SPARK-57298), 4.1 on the boxed value: their
-- orders agree for some sets and not for others.
SELECT collect_set(x) AS s FROM VALUES (1D), (2D), (3D) AS t(x);
SELECT collect_set(x) AS s FROM VALUES (1D), (2D), (3D), (4D), (100D) AS t(x);
SELECT collect_set(x) AS s FROM VALUES (-0.0D) AS t(x);
SELECT collect_set(col) AS s FROM VALUES (1.5D), (2.0D), (1e20D), (-3.25D), (NULL) AS tab(col);
SELECT k, collect_set(v) AS s FROM (SELECT id % 3 AS k, concat('v', CAST(id % 17 AS STRING)) AS v FROM range(200)) GROUP BY k;
SELECT collect_set(x) AS a, collect_set(y) AS b FROM VALUES (7S, 7.5F), (-7S, -7F), (7000S, 1e30F), (3S, 0.1F) AS tab(x, y);
WITH s(region, product, qty) AS (VALUES ('n', 'a', 1), ('n', 'b', 2), ('s', 'a', 3), ('s', 'a', 4), ('e', NULL, 5))
SELECT region, product, sum(qty) AS total FROM s GROUP BY region, product WITH ROLLUP;
WITH s(region, product, qty) AS (VALUES ('n', 'a', 1), ('n', 'b', 2), ('s', 'a', 3), ('s', 'a', 4), ('e', NULL, 5))
SELECT region, product, sum(qty) AS total, grouping_id() AS g FROM s GROUP BY region, product WITH CUBE;
WITH s(region, product, qty) AS (VALUES ('n', 'a', 1), ('n', 'b', 2), ('s', 'a', 3), ('s', 'a', 4), ('e', NULL, 5))
SELECT region, product, sum(qty) AS total FROM s GROUP BY region, product GROUPING SETS ((region), ());
WITH s(region, product, qty) AS (VALUES ('n', 'a', 1), ('n', 'b', 2), ('s', 'a', 3), ('s', 'a', 4), ('e', NULL, 5))
SELECT region, product, sum(qty) AS total, grouping_id() AS g, grouping(product) AS gp FROM s GROUP BY region, product GROUPING SETS ((region), ());
WITH s(region, product, qty) AS (VALUES ('n', 'a', 1), ('n', 'b', 2), ('s', 'a', 3), ('s', 'a', 4), ('e', NULL, 5))
SELECT product, region, sum(qty) AS total, grouping_id() AS g FROM s GROUP BY product, region GROUPING SETS ((region, product), (product));
WITH s(region, product, qty) AS (VALUES ('n', 'a', 1), ('n', 'b', 2), ('s', 'a', 3), ('s', 'a', 4), ('e', NULL, 5))
SELECT region, product, sum(qty) AS total FROM s GROUP BY region, product GROUPING SETS ((product, region), region) HAVING sum(qty) > 2;
WITH s(region, product, qty) AS (VALUES ('n', 'a', 1), ('n', 'b', 2), ('s', 'a', 3), ('s', 'a', 4), ('e', NULL, 5))
SELECT region, sum(qty) AS total FROM s GROUP BY region, product GROUPING SETS ((region), (region)) HAVING count(*) > 1;
WITH s(region, product, qty) AS (VALUES ('n', 'a', 1), ('n', 'b', 2), ('s', 'a', 3), ('s', 'a', 4), ('e', NULL, 5))
SELECT region, product, sum(qty) AS total FROM s GROUP BY GROUPING SETS (ROLLUP (region, product));
WITH s(region, product, qty) AS (VALUES ('n', 'a', 1), ('n', 'b', 2), ('s', 'a', 3), ('s', 'a', 4), ('e', NULL, 5))
SELECT region, product, count(*) AS n, grouping_id() AS g FROM s GROUP BY GROUPING SETS (CUBE (region, product), (region));
WITH s(region, product, qty) AS (VALUES ('n', 'a', 1), ('n', 'b', 2), ('s', 'a', 3), ('s', 'a', 4), ('e', NULL, 5))
SELECT upper(region) AS r, sum(qty) AS total FROM s GROUP BY upper(region), product WITH ROLLUP;
WITH s(region, product, qty) AS (VALUES ('n', 'a', 1), ('n', 'b', 2), ('s', 'a', 3), ('s', 'a', 4), ('e', NULL, 5))
SELECT * FROM (SELECT region, sum(qty) AS total FROM s GROUP BY region WITH CUBE) WHERE region IS NULL;
-- grouping() needs grouping sets on Spark
SELECT x, grouping(x) AS g FROM VALUES (1), (2) AS t(x) GROUP BY x;
SELECT x, grouping_id(x) AS g FROM VALUES (1), (2) AS t(x) GROUP BY x;
WITH t(a, b) AS (VALUES (1, 2), (1, 2), (1, NULL), (2, 3), (NULL, NULL), (2, 3))
SELECT count(DISTINCT a, b), count(a, b), count(DISTINCT a), count(DISTINCT b, a) AS n FROM t;
WITH t(a, b, c) AS (VALUES (1, 2, 1), (1, 2, 1), (1, 2, 2), (2, NULL, 1))
SELECT a, count(DISTINCT b, c) AS n, count(DISTINCT b, c) FILTER (WHERE c > 1) AS m FROM t GROUP BY a;
WITH t(x, y) AS (VALUES (0.0D, 1), (-0.0D, 1), (CAST('NaN' AS DOUBLE), 1), (-CAST('NaN' AS DOUBLE), 1))
SELECT count(DISTINCT x) AS a, count(DISTINCT named_struct('x', x)) AS b, count(DISTINCT x, y) AS c, sum(DISTINCT x) AS d FROM t;
WITH t(k, x) AS (VALUES (1, 0.0D), (1, -0.0D), (2, CAST('NaN' AS DOUBLE)), (2, -CAST('NaN' AS DOUBLE)), (2, 1.0D))
SELECT k, count(DISTINCT x) AS n, count(DISTINCT x, k) AS m FROM t GROUP BY k;
SELECT k, c, count(*) AS n FROM (SELECT x AS k, TIMESTAMP'2024-01-01 00:00:00' AS c FROM VALUES (1), (2), (2) AS t(x)) GROUP BY k, c WITH ROLLUP ORDER BY 1 DESC NULLS FIRST, 2 NULLS LAST, 3 DESC LIMIT 2;
SELECT k, c, sum(x) AS s FROM (SELECT x, x % 2 AS k, 'c' AS c FROM VALUES (1), (2), (3), (4) AS t(x)) GROUP BY CUBE (k, c) ORDER BY c NULLS FIRST, k NULLS FIRST, s LIMIT 3;
-- DISTINCT aggregates beside other aggregates (taken natively as two groupings)
WITH t(k, v, x) AS (VALUES (1, 10, 1), (1, 20, 1), (1, 30, 2), (2, 5, NULL), (2, 6, 3), (3, 1, NULL))
SELECT k, sum(v) AS s, count(DISTINCT x) AS c, count(*) AS n, avg(v) AS a, max(x) AS mx, min(v) AS mn FROM t GROUP BY k;
WITH t(k, v, x) AS (VALUES (1, CAST('9999999999999999999999999999999999.9999' AS DECIMAL(38,4)), 1), (1, CAST('9999999999999999999999999999999999.9999' AS DECIMAL(38,4)), 2), (2, CAST('1.5' AS DECIMAL(38,4)), 1), (2, CAST('2.5' AS DECIMAL(38,4)), 1))
SELECT k, sum(v) AS s, count(DISTINCT x) AS c FROM t GROUP BY k;
WITH t(k, v, x) AS (VALUES (1, CAST('4999999999999999999999999999999999.9999' AS DECIMAL(38,4)), 1), (1, CAST('4999999999999999999999999999999999.9999' AS DECIMAL(38,4)), 2), (1, CAST('-0.0001' AS DECIMAL(38,4)), 2), (2, CAST('1.5' AS DECIMAL(38,4)), 1))
SELECT k, sum(v) AS s, avg(v) AS a, count(DISTINCT x) AS c FROM t GROUP BY k;
WITH t(k, a, b) AS (VALUES (1, 1, 2), (1, 1, 2), (1, 1, NULL), (1, 2, 3), (2, NULL, NULL), (2, 2, 3))
SELECT k, count(DISTINCT a, b) AS n, sum(a) AS s, count(b) AS nb FROM t GROUP BY k;
WITH t(k, x) AS (VALUES (1, 1), (1, 1), (1, 2), (1, NULL), (2, 5), (2, 5))
SELECT k, sum(DISTINCT x) AS sd, count(DISTINCT x) AS cd, max(DISTINCT x) AS md, count(*) AS n, count(x) AS nx, sum(x) AS s FROM t GROUP BY k;
WITH t(k, v, x) AS (VALUES (1, 10, 1), (1, 20, 1))
SELECT count(DISTINCT x) AS c, sum(v) AS s, count(*) AS n, max(v) AS m FROM t WHERE k > 100;
WITH t(k, v, x) AS (VALUES (1, 10, 1), (1, 20, 1), (2, 30, 2), (3, 40, NULL))
SELECT count(DISTINCT x) AS c, sum(v) AS s, count(*) AS n FROM t;
WITH t(k, v, x) AS (VALUES (1, 10, 1), (1, 20, 2), (2, 30, 2), (2, 31, 2), (3, 5, 7), (3, 6, 8), (4, 50, 1))
SELECT k, sum(v) AS revenue, count(DISTINCT x) AS orders FROM t GROUP BY k HAVING count(DISTINCT x) > 1 ORDER BY revenue DESC, k LIMIT 2;
WITH t(k, v, x) AS (VALUES (1, 10, 1), (2, 20, 1), (3, 30, 2), (4, 4, NULL), (5, 6, 3), (6, 1, NULL))
SELECT k % 2 AS p, count(DISTINCT x + 1) AS c, sum(v * 2) AS s, bool_and(v > 5) AS b, bit_or(v) AS o FROM t GROUP BY k % 2;
WITH t(k, s) AS (VALUES ('a', 'x'), ('a', 'x'), ('a', NULL), ('b', 'y'), ('b', 'z'))
SELECT k, count(DISTINCT s) AS c, count(*) AS n, min(s) AS m, max(length(s)) AS l FROM t GROUP BY k;
WITH t(k, x) AS (VALUES (1, 0.0D), (1, -0.0D), (2, CAST('NaN' AS DOUBLE)), (2, -CAST('NaN' AS DOUBLE)), (2, 1.0D))
SELECT k, count(DISTINCT x) AS n, count(*) AS m, max(x) AS mx FROM t GROUP BY k;
WITH t(k, v, x) AS (VALUES (1, CAST('12345678901234567890123456789.5' AS DECIMAL(30,1)), 1), (1, CAST('0.2' AS DECIMAL(30,1)), 1), (2, CAST('7.1' AS DECIMAL(30,1)), NULL))
SELECT k, avg(v) AS a, sum(v) AS s, count(DISTINCT x) AS c FROM t GROUP BY k;
SELECT k, sum(v) AS s, count(DISTINCT x) AS c FROM VALUES (1, 9223372036854775807L, 1), (1, 1L, 2), (2, 3L, 1) AS t(k, v, x) GROUP BY k;
