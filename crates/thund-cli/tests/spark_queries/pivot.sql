-- PIVOT and UNPIVOT, QUALIFY-like filters, and more nested data.

WITH s(region, quarter, amount) AS (VALUES ('n', 'q1', 10), ('n', 'q2', 20), ('s', 'q1', 5), ('s', 'q1', 7))
SELECT * FROM s PIVOT (sum(amount) FOR quarter IN ('q1', 'q2'));
WITH s(region, quarter, amount) AS (VALUES ('n', 'q1', 10), ('n', 'q2', 20), ('s', 'q1', 5), ('s', 'q1', 7))
SELECT * FROM s PIVOT (sum(amount) AS total, count(amount) AS n FOR quarter IN ('q1' AS first, 'q2' AS second));
WITH w(region, q1, q2) AS (VALUES ('n', 10, 20), ('s', 12, NULL))
SELECT * FROM w UNPIVOT (amount FOR quarter IN (q1, q2));
WITH w(region, q1, q2) AS (VALUES ('n', 10, 20), ('s', 12, NULL))
SELECT * FROM w UNPIVOT INCLUDE NULLS (amount FOR quarter IN (q1, q2));
WITH s(region, quarter, amount) AS (VALUES ('n', 'q1', 10), ('n', 'q2', 20), ('s', 'q1', 5))
SELECT region, sum(CASE WHEN quarter = 'q1' THEN amount END) AS q1, sum(CASE WHEN quarter = 'q2' THEN amount END) AS q2 FROM s GROUP BY region;
WITH t(id, tags) AS (VALUES (1, array('a', 'b')), (2, array('b')), (3, CAST(NULL AS ARRAY<STRING>)))
SELECT tag, count(*) AS n FROM t LATERAL VIEW explode(tags) e AS tag GROUP BY tag;
WITH t(id, tags) AS (VALUES (1, array('a', 'b')), (2, array('b')))
SELECT id, pos, tag FROM t LATERAL VIEW posexplode(tags) e AS pos, tag;
WITH t(id, m) AS (VALUES (1, map('x', 1, 'y', 2)), (2, map('z', 3)))
SELECT id, k, v FROM t LATERAL VIEW explode(m) e AS k, v;
WITH t(id, s) AS (VALUES (1, named_struct('a', 1, 'b', named_struct('c', 'deep'))))
SELECT s.b.c AS c, s.a + 1 AS a1 FROM t;
WITH t(id, arr) AS (VALUES (1, array(named_struct('k', 'a', 'v', 1), named_struct('k', 'b', 'v', 2))))
SELECT id, transform(arr, x -> x.v * 10) AS vs, filter(arr, x -> x.k = 'b')[0].v AS b FROM t;
WITH t(id, xs) AS (VALUES (1, array(3, 1, 2)), (2, array()))
SELECT id, array_max(xs) AS hi, array_min(xs) AS lo, array_distinct(array_union(xs, array(1, 9))) AS u FROM t;
WITH t(k, v) AS (VALUES ('a', 1), ('a', 2), ('b', 3))
SELECT k, map_from_entries(collect_list(struct(v, v * v))) AS squares FROM t GROUP BY k;
WITH t(ts) AS (VALUES (TIMESTAMP'2024-03-30 23:30:00'), (TIMESTAMP'2024-03-31 00:30:00'), (TIMESTAMP'2024-03-31 01:30:00'), (TIMESTAMP'2024-03-31 02:30:00'))
SELECT ts, from_utc_timestamp(ts, 'Europe/Berlin') AS berlin, date_format(from_utc_timestamp(ts, 'Europe/Berlin'), 'HH:mm') AS hhmm FROM t;
WITH t(ts) AS (VALUES (TIMESTAMP'2024-10-27 00:30:00'), (TIMESTAMP'2024-10-27 01:30:00'))
SELECT ts, to_utc_timestamp(from_utc_timestamp(ts, 'Europe/London'), 'Europe/London') AS round_trip FROM t;
WITH t(d) AS (VALUES (DATE'2024-03-09'), (DATE'2024-03-10'), (DATE'2024-03-11'))
SELECT d, to_utc_timestamp(CAST(d AS TIMESTAMP), 'America/Los_Angeles') AS midnight_la FROM t;
WITH e(id, dept, pay) AS (VALUES (1, 'eng', 100), (2, 'eng', 120), (3, 'ops', 90), (4, 'ops', 95))
SELECT dept, max(pay) - min(pay) AS spread, round(avg(pay), 1) AS mean FROM e GROUP BY dept HAVING count(*) > 1 ORDER BY dept;
WITH e(id, dept, pay) AS (VALUES (1, 'eng', 100), (2, 'eng', 120), (3, 'ops', 90))
SELECT dept, pay, sum(pay) OVER (PARTITION BY dept ORDER BY pay RANGE BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) AS total FROM e;
WITH t(x) AS (VALUES (1), (2), (3), (4), (5), (6))
SELECT x % 3 AS r, collect_list(x) AS xs FROM (SELECT x FROM t ORDER BY x) GROUP BY x % 3;
WITH a(id) AS (VALUES (1), (2)), b(id) AS (VALUES (2), (3)), c(id) AS (VALUES (3), (4))
SELECT id FROM a UNION SELECT id FROM b EXCEPT SELECT id FROM c;
WITH a(id) AS (VALUES (1), (2), (3)), b(id) AS (VALUES (2))
(SELECT id FROM a EXCEPT SELECT id FROM b) UNION ALL (SELECT id FROM b INTERSECT SELECT id FROM a);
WITH t(k, c, v, d) AS (VALUES (1, 'a', 10, 'x'), (1, 'b', 20, 'y'), (2, 'a', 30, 'x'), (2, 'a', NULL, 'z'), (3, NULL, 5, 'w'))
SELECT * FROM t PIVOT (count(v) FOR c IN ('a', 'b', 'q'));
WITH t(k, c, v, d) AS (VALUES (1, 'a', 10, 'x'), (1, 'b', 20, 'y'), (2, 'a', 30, 'x'), (2, 'a', NULL, 'z'), (3, NULL, 5, 'w'))
SELECT * FROM t PIVOT (count(*) FOR c IN ('a', 'b'));
WITH t(k, c, v, d) AS (VALUES (1, 'a', 10, 'x'), (1, 'b', 20, 'y'), (2, 'a', 30, 'x'), (2, 'a', NULL, 'z'), (3, NULL, 5, 'w'))
SELECT * FROM t PIVOT (count(v) AS n, sum(v) FOR c IN ('a' AS aa, 'b'));
WITH t(k, c, v, d) AS (VALUES (1, 'a', 10, 'x'), (1, 'b', 20, 'y'), (2, 'a', 30, 'x'), (2, 'a', NULL, 'z'), (3, NULL, 5, 'w'))
SELECT * FROM t PIVOT (sum(v) FOR c IN (NULL, 'a'));
WITH t(k, c, v, d) AS (VALUES (1, 'a', 10, 'x'), (1, 'b', 20, 'y'), (2, 'a', 30, 'x'), (2, 'a', NULL, 'z'), (3, NULL, 5, 'w'))
SELECT * FROM t PIVOT (first(d) FOR c IN ('a', 'b'));
WITH t(k, c, v, d) AS (VALUES (1, 'a', 10, 'x'), (1, 'b', 20, 'y'), (2, 'a', 30, 'x'), (2, 'a', NULL, 'z'), (3, NULL, 5, 'w'))
SELECT * FROM t PIVOT (sum(v) + 1 AS s FOR c IN ('a'));
WITH t(k, c, v, d) AS (VALUES (1, 'a', 10, 'x'), (1, 'b', 20, 'y'), (2, 'a', 30, 'x'), (2, 'a', NULL, 'z'), (3, NULL, 5, 'w'))
SELECT * FROM t PIVOT (sum(v) FOR (c, d) IN (('a', 'x') AS ax, ('b', 'y')));
WITH t(k, c, v, d) AS (VALUES (1, 'a', 10, 'x'), (1, 'b', 20, 'y'), (2, 'a', 30, 'x'), (2, 'a', NULL, 'z'), (3, NULL, 5, 'w'))
SELECT * FROM t PIVOT (sum(v) FOR k IN (1, 2.0, '3'));
WITH t(k, c, v, d) AS (VALUES (1, 'a', 10, 'x'), (1, 'b', 20, 'y'), (2, 'a', 30, 'x'), (2, 'a', NULL, 'z'), (3, NULL, 5, 'w'))
SELECT * FROM t PIVOT (avg(v), max(d) FOR c IN ('a'));
WITH t(k, c, v, d) AS (VALUES (1, 'a', 10, 'x'), (1, 'b', 20, 'y'), (2, 'a', 30, 'x'), (2, 'a', NULL, 'z'), (3, NULL, 5, 'w'))
SELECT * FROM t PIVOT (collect_list(v) FOR c IN ('a'));
WITH t(k, c, v, d) AS (VALUES (1, 'a', 10, 'x'), (1, 'b', 20, 'y'), (2, 'a', 30, 'x'), (2, 'a', NULL, 'z'), (3, NULL, 5, 'w'))
SELECT * FROM t PIVOT (sum(v) FILTER (WHERE v > 10) FOR C IN ('a', 'A'));
WITH t(k, c, v, d) AS (VALUES (1, 'a', 10, 'x'), (1, 'b', 20, 'y'), (2, 'a', 30, 'x'), (2, 'a', NULL, 'z'), (3, NULL, 5, 'w'))
SELECT * FROM t PIVOT (sum(DISTINCT v) FOR c IN ('a'));
WITH t(k, c, v, d) AS (VALUES (1, 'a', 10, 'x'), (1, 'b', 20, 'y'), (2, 'a', 30, 'x'), (2, 'a', NULL, 'z'), (3, NULL, 5, 'w'))
SELECT p.k, a FROM t AS p PIVOT (sum(v) FOR c IN ('a', 'b')) WHERE p.k > 1;
WITH t(k, c, v, d) AS (VALUES (1, 'a', 10, 'x'), (1, 'b', 20, 'y'), (2, 'a', 30, 'x'), (2, 'a', NULL, 'z'), (3, NULL, 5, 'w'))
SELECT * FROM (SELECT k, c, v FROM t) PIVOT (sum(v) FOR c IN ('a', 'b')) AS p;
WITH t(k, c, v, d) AS (VALUES (1, 'a', 10, 'x'), (1, 'b', 20, 'y'), (2, 'a', 30, 'x'), (2, 'a', NULL, 'z'), (3, NULL, 5, 'w')), s(k) AS (VALUES (1), (1))
SELECT * FROM s, t PIVOT (sum(v) FOR c IN ('a', 'b'));
WITH t(k, c, v, d) AS (VALUES (1, 'a', 10, 'x'), (1, 'b', 20, 'y'), (2, 'a', 30, 'x'), (2, 'a', NULL, 'z'), (3, NULL, 5, 'w'))
SELECT * FROM t PIVOT (v FOR c IN ('a'));
WITH t(k, c, v, d) AS (VALUES (1, 'a', 10, 'x'), (1, 'b', 20, 'y'), (2, 'a', 30, 'x'), (2, 'a', NULL, 'z'), (3, NULL, 5, 'w'))
SELECT * FROM t PIVOT (sum(v) FOR c IN (k));
WITH t(k, c, v, d) AS (VALUES (1, 'a', 10, 'x'), (1, 'b', 20, 'y'), (2, 'a', 30, 'x'), (2, 'a', NULL, 'z'), (3, NULL, 5, 'w'))
SELECT * FROM t PIVOT (sum(v) FOR c IN ('a', 'a'));
WITH t(k, x) AS (VALUES (1, 1.5D), (1, CAST('NaN' AS DOUBLE)), (2, -0.0D))
SELECT * FROM t PIVOT (max(x) AS hi, min(x) FOR k IN (1 AS one, 2 AS two));
WITH u(k, a, b, s, d) AS (VALUES (1, 10, 20, 'p', 2.5), (2, NULL, 40, 'q', NULL), (3, NULL, NULL, 'r', 1.0))
SELECT * FROM u UNPIVOT INCLUDE NULLS (v FOR c IN (a AS x, B));
WITH u(k, a, b, s, d) AS (VALUES (1, 10, 20, 'p', 2.5), (2, NULL, 40, 'q', NULL), (3, NULL, NULL, 'r', 1.0))
SELECT * FROM u UNPIVOT (v FOR c IN (a, d));
WITH u(k, a, b, s, d) AS (VALUES (1, 10, 20, 'p', 2.5), (2, NULL, 40, 'q', NULL), (3, NULL, NULL, 'r', 1.0))
SELECT * FROM u UNPIVOT (v FOR c IN (a, s));
WITH u(k, a, b, s, d) AS (VALUES (1, 10, 20, 'p', 2.5), (2, NULL, 40, 'q', NULL), (3, NULL, NULL, 'r', 1.0))
SELECT * FROM u UNPIVOT ((v1, v2) FOR c IN ((a, b), (d, k) AS z));
WITH u(k, a, b, s, d) AS (VALUES (1, 10, 20, 'p', 2.5), (2, NULL, 40, 'q', NULL), (3, NULL, NULL, 'r', 1.0))
SELECT q.* FROM u UNPIVOT (v FOR c IN (u.a, u.b)) AS q WHERE q.k < 3;
WITH u(k, a, b, s, d) AS (VALUES (1, 10, 20, 'p', 2.5), (2, NULL, 40, 'q', NULL), (3, NULL, NULL, 'r', 1.0))
SELECT * FROM u UNPIVOT (v FOR c IN (a, b)) PIVOT (sum(v) FOR c IN ('a', 'b'));
WITH u(k, a, b, s, d) AS (VALUES (1, 10, 20, 'p', 2.5), (2, NULL, 40, 'q', NULL), (3, NULL, NULL, 'r', 1.0))
SELECT * FROM u UNPIVOT (k FOR c IN (a, b));
WITH u(k, a, b, s, d) AS (VALUES (1, 10, 20, 'p', 2.5), (2, NULL, 40, 'q', NULL), (3, NULL, NULL, 'r', 1.0))
SELECT c, count(*) AS n, sum(v) AS total FROM u UNPIVOT (v FOR c IN (a, b, k)) GROUP BY c;
