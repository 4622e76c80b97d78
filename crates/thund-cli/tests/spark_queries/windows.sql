-- Window functions and frames.

WITH e(id, dept, pay) AS (VALUES (1, 'eng', 100), (2, 'eng', 120), (3, 'eng', 120), (4, 'ops', 90), (5, 'ops', 95))
SELECT id, row_number() OVER (PARTITION BY dept ORDER BY pay DESC, id) AS rn FROM e;
WITH e(id, dept, pay) AS (VALUES (1, 'eng', 100), (2, 'eng', 120), (3, 'eng', 120), (4, 'ops', 90), (5, 'ops', 95))
SELECT id, rank() OVER (PARTITION BY dept ORDER BY pay DESC) AS r, dense_rank() OVER (PARTITION BY dept ORDER BY pay DESC) AS dr FROM e;
WITH e(id, dept, pay) AS (VALUES (1, 'eng', 100), (2, 'eng', 120), (3, 'eng', 120), (4, 'ops', 90), (5, 'ops', 95))
SELECT id, percent_rank() OVER (ORDER BY pay) AS pr, cume_dist() OVER (ORDER BY pay) AS cd FROM e;
WITH e(id, dept, pay) AS (VALUES (1, 'eng', 100), (2, 'eng', 120), (3, 'eng', 120), (4, 'ops', 90), (5, 'ops', 95))
SELECT id, ntile(2) OVER (ORDER BY id) AS bucket FROM e;
WITH e(id, dept, pay) AS (VALUES (1, 'eng', 100), (2, 'eng', 120), (3, 'eng', 120), (4, 'ops', 90), (5, 'ops', 95))
SELECT id, sum(pay) OVER (PARTITION BY dept) AS dept_total FROM e;
WITH e(id, dept, pay) AS (VALUES (1, 'eng', 100), (2, 'eng', 120), (3, 'eng', 120), (4, 'ops', 90), (5, 'ops', 95))
SELECT id, sum(pay) OVER (ORDER BY id) AS running FROM e;
WITH e(id, dept, pay) AS (VALUES (1, 'eng', 100), (2, 'eng', 120), (3, 'eng', 120), (4, 'ops', 90), (5, 'ops', 95))
SELECT id, sum(pay) OVER (ORDER BY pay) AS running_by_pay FROM e;
WITH e(id, dept, pay) AS (VALUES (1, 'eng', 100), (2, 'eng', 120), (3, 'eng', 120), (4, 'ops', 90), (5, 'ops', 95))
SELECT id, sum(pay) OVER (ORDER BY id ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING) AS moving FROM e;
WITH e(id, dept, pay) AS (VALUES (1, 'eng', 100), (2, 'eng', 120), (3, 'eng', 120), (4, 'ops', 90), (5, 'ops', 95))
SELECT id, avg(pay) OVER (ORDER BY id ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS mean_so_far FROM e;
WITH e(id, dept, pay) AS (VALUES (1, 'eng', 100), (2, 'eng', 120), (3, 'eng', 120), (4, 'ops', 90), (5, 'ops', 95))
SELECT id, count(*) OVER (ORDER BY pay RANGE BETWEEN 10 PRECEDING AND CURRENT ROW) AS near FROM e;
WITH e(id, dept, pay) AS (VALUES (1, 'eng', 100), (2, 'eng', 120), (3, 'eng', 120), (4, 'ops', 90), (5, 'ops', 95))
SELECT id, max(pay) OVER (PARTITION BY dept ORDER BY id ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING) AS max_after FROM e;
WITH e(id, dept, pay) AS (VALUES (1, 'eng', 100), (2, 'eng', 120), (3, 'eng', 120), (4, 'ops', 90), (5, 'ops', 95))
SELECT id, lag(pay) OVER (ORDER BY id) AS prev, lead(pay, 2) OVER (ORDER BY id) AS next2 FROM e;
WITH e(id, dept, pay) AS (VALUES (1, 'eng', 100), (2, 'eng', 120), (3, 'eng', 120), (4, 'ops', 90), (5, 'ops', 95))
SELECT id, lag(pay, 1, 0) OVER (PARTITION BY dept ORDER BY id) AS prev FROM e;
WITH e(id, dept, pay) AS (VALUES (1, 'eng', 100), (2, 'eng', 120), (3, 'eng', 120), (4, 'ops', 90), (5, 'ops', 95))
SELECT id, first_value(pay) OVER (PARTITION BY dept ORDER BY id) AS first_pay, last_value(pay) OVER (PARTITION BY dept ORDER BY id) AS last_pay FROM e;
WITH e(id, dept, pay) AS (VALUES (1, 'eng', 100), (2, 'eng', 120), (3, 'eng', 120), (4, 'ops', 90), (5, 'ops', 95))
SELECT id, nth_value(pay, 2) OVER (PARTITION BY dept ORDER BY id ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) AS second FROM e;
WITH e(id, dept, pay) AS (VALUES (1, 'eng', 100), (2, 'eng', 120), (3, 'eng', 120), (4, 'ops', 90), (5, 'ops', 95))
SELECT id, pay - avg(pay) OVER (PARTITION BY dept) AS delta FROM e;
WITH e(id, dept, pay) AS (VALUES (1, 'eng', 100), (2, 'eng', 120), (3, 'eng', 120), (4, 'ops', 90), (5, 'ops', 95))
SELECT * FROM (SELECT id, dept, row_number() OVER (PARTITION BY dept ORDER BY pay DESC, id) AS rn FROM e) WHERE rn = 1;
WITH e(id, dept, pay) AS (VALUES (1, 'eng', 100), (2, 'eng', 120), (3, 'eng', 120), (4, 'ops', 90), (5, 'ops', 95))
SELECT id, count(*) OVER w AS n, sum(pay) OVER w AS total FROM e WINDOW w AS (PARTITION BY dept);
WITH e(id, dept, pay) AS (VALUES (1, 'eng', 100), (2, 'eng', NULL), (3, 'eng', 120), (4, 'ops', NULL))
SELECT id, sum(pay) OVER (PARTITION BY dept ORDER BY id) AS running, count(pay) OVER (PARTITION BY dept) AS n FROM e;
WITH e(id, pay) AS (VALUES (1, 100), (2, NULL), (3, 120))
SELECT id, rank() OVER (ORDER BY pay) AS r FROM e;
WITH e(id, pay) AS (VALUES (1, 100), (2, NULL), (3, 120))
SELECT id, rank() OVER (ORDER BY pay DESC) AS r FROM e;
WITH e(id, d) AS (VALUES (1, DATE'2024-01-01'), (2, DATE'2024-01-03'), (3, DATE'2024-01-10'))
SELECT id, datediff(d, lag(d) OVER (ORDER BY d)) AS gap FROM e;
WITH e(id, dept, pay) AS (VALUES (1, 'eng', 100), (2, 'eng', 120), (3, 'ops', 90))
SELECT dept, sum(pay) AS total, rank() OVER (ORDER BY sum(pay) DESC) AS r FROM e GROUP BY dept;
WITH e(id, pay) AS (VALUES (1, 100.50), (2, 120.25), (3, 90.00))
SELECT id, avg(pay) OVER (ORDER BY id ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) AS m FROM e;
WITH s(k, v) AS (VALUES ('a', 1), ('a', 2), ('b', 3), (NULL, 4)) SELECT k, v, sum(v) OVER (w) AS t FROM s WINDOW w AS (PARTITION BY k);
WITH s(k, v) AS (VALUES ('a', 1), ('a', 2), ('b', 3), (NULL, 4)) SELECT k, v, sum(v) OVER (w) AS t, count(*) OVER w AS n FROM s WINDOW w AS (PARTITION BY k ORDER BY v);
WITH s(k, v) AS (VALUES ('a', 1), ('a', 2), ('b', 3), (NULL, 4)) SELECT k, v, row_number() OVER (w) AS r FROM s WINDOW w AS (PARTITION BY k ORDER BY v DESC);
WITH s(k, v) AS (VALUES ('a', 1), ('a', 2), ('b', 3), (NULL, 4)) SELECT k, v, sum(v) OVER (w ORDER BY v) AS t FROM s WINDOW w AS (PARTITION BY k);
SELECT k, v, rank() OVER (PARTITION BY k ORDER BY v) AS r FROM VALUES ('a', 0.0D), ('a', -0.0D), ('b', 1.0D) AS t(k, v);
SELECT k, count(*) OVER (PARTITION BY v) AS n FROM VALUES ('a', 0.0D), ('b', -0.0D), ('c', 1.5D) AS t(k, v);
SELECT k, v, sum(v) OVER (PARTITION BY k ORDER BY v RANGE BETWEEN 1 PRECEDING AND CURRENT ROW) AS s FROM VALUES ('a', 0.0D), ('a', -0.0D), ('a', 1.0D) AS t(k, v);
SELECT k, v, dense_rank() OVER (ORDER BY CAST(v AS FLOAT)) AS r FROM VALUES ('a', 0.0D), ('b', -0.0D), ('c', 2.0D) AS t(k, v);
-- Spark refuses a ranking or offset function over an unordered window, FILTER over a window, and median over an ordered one
SELECT x, row_number() OVER () AS r FROM VALUES (1), (2) AS t(x);
SELECT x, rank() OVER (PARTITION BY x) AS r FROM VALUES (1), (2) AS t(x);
SELECT x, lag(x) OVER () AS a, lead(x) OVER () AS b FROM VALUES (1), (2) AS t(x);
SELECT x, ntile(2) OVER () AS a FROM VALUES (1), (2) AS t(x);
SELECT x, nth_value(x, 1) OVER () AS a FROM VALUES (1), (2) AS t(x);
SELECT x, cume_dist() OVER () AS a, percent_rank() OVER () AS b FROM VALUES (1), (2) AS t(x);
SELECT count(*) FILTER (WHERE x > 0) OVER () AS n FROM VALUES (1), (2) AS t(x);
SELECT x, median(x) OVER (ORDER BY x) AS m FROM VALUES (1), (2) AS t(x);
SELECT x, median(x) OVER (PARTITION BY x) AS m, percentile(x, 0.5) OVER (ORDER BY x) AS p, mode(x) OVER (ORDER BY x) AS o FROM VALUES (1), (1), (2) AS t(x);
-- Spark refuses an aggregate over DISTINCT values in a window; DataFusion answered.
SELECT k, count(DISTINCT x) OVER (PARTITION BY k) AS n FROM VALUES (1, 1), (1, 1), (2, 3) AS t(k, x);
SELECT k, sum(DISTINCT x) OVER (ORDER BY k) AS n FROM VALUES (1, 1), (1, 1), (2, 3) AS t(k, x);
