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
