-- Subqueries: scalar, correlated, IN, EXISTS, in FROM and in SELECT; CTEs.

WITH e(id, dept, pay) AS (VALUES (1, 'eng', 100), (2, 'eng', 120), (3, 'ops', 90), (4, 'ops', 95))
SELECT id FROM e WHERE pay > (SELECT avg(pay) FROM e);
WITH e(id, dept, pay) AS (VALUES (1, 'eng', 100), (2, 'eng', 120), (3, 'ops', 90), (4, 'ops', 95))
SELECT id FROM e o WHERE pay = (SELECT max(pay) FROM e i WHERE i.dept = o.dept);
WITH e(id, dept, pay) AS (VALUES (1, 'eng', 100), (2, 'eng', 120), (3, 'ops', 90), (4, 'ops', 95))
SELECT id, (SELECT count(*) FROM e i WHERE i.pay > o.pay) AS higher FROM e o;
WITH e(id, dept, pay) AS (VALUES (1, 'eng', 100), (2, 'eng', 120), (3, 'ops', 90), (4, 'ops', 95)),
     d(dept, boss) AS (VALUES ('eng', 'kim'), ('hr', 'lee'))
SELECT dept FROM d WHERE EXISTS (SELECT 1 FROM e WHERE e.dept = d.dept);
WITH e(id, dept, pay) AS (VALUES (1, 'eng', 100), (2, 'eng', 120), (3, 'ops', 90), (4, 'ops', 95)),
     d(dept, boss) AS (VALUES ('eng', 'kim'), ('hr', 'lee'))
SELECT dept FROM d WHERE dept NOT IN (SELECT dept FROM e);
WITH e(id, dept, pay) AS (VALUES (1, 'eng', 100), (2, 'eng', 120), (3, 'ops', 90), (4, 'ops', 95))
SELECT dept, total FROM (SELECT dept, sum(pay) AS total FROM e GROUP BY dept) WHERE total > 190;
WITH e(id, dept, pay) AS (VALUES (1, 'eng', 100), (2, 'eng', 120), (3, 'ops', 90), (4, 'ops', 95))
SELECT (SELECT max(pay) FROM e) - (SELECT min(pay) FROM e) AS spread;
WITH e(id, pay) AS (VALUES (1, 100)) SELECT (SELECT pay FROM e WHERE id = 2) AS missing;
WITH e(id, dept, pay) AS (VALUES (1, 'eng', 100), (2, 'eng', 120), (3, 'ops', 90), (4, 'ops', 95))
SELECT id FROM e WHERE (dept, pay) IN (SELECT dept, max(pay) FROM e GROUP BY dept);
WITH a AS (SELECT 1 AS x), b AS (SELECT x * 10 AS y FROM a), c AS (SELECT y + 1 AS z FROM b) SELECT z FROM c;
WITH e(id, dept, pay) AS (VALUES (1, 'eng', 100), (2, 'eng', 120), (3, 'ops', 90), (4, 'ops', 95))
SELECT o.id, t.total FROM e o JOIN (SELECT dept, sum(pay) AS total FROM e GROUP BY dept) t ON o.dept = t.dept;
WITH e(id, dept, pay) AS (VALUES (1, 'eng', 100), (2, 'eng', 120), (3, 'ops', 90), (4, 'ops', 95))
SELECT id FROM e o WHERE EXISTS (SELECT 1 FROM e i WHERE i.dept = o.dept AND i.pay > o.pay);
WITH e(id, dept, pay) AS (VALUES (1, 'eng', 100), (2, 'eng', 120), (3, 'ops', 90), (4, 'ops', 95))
SELECT id, pay IN (SELECT pay FROM e WHERE dept = 'ops') AS in_ops FROM e;
WITH t(x) AS (VALUES (1), (2), (3)) SELECT x FROM t WHERE x IN (1, 3, NULL);
WITH t(x) AS (VALUES (1), (2), (3)) SELECT x FROM t WHERE x NOT IN (1, NULL);
WITH t(x) AS (VALUES (1), (2), (3)) SELECT x FROM t WHERE x BETWEEN 2 AND 3;
WITH t(x) AS (VALUES (1), (2), (3)) SELECT x FROM t WHERE x NOT BETWEEN 2 AND 3;
WITH t(x, y) AS (VALUES (1, 'a'), (2, 'b'), (NULL, 'c')), s(k) AS (VALUES (1), (NULL)) SELECT y FROM t WHERE x NOT IN (SELECT k FROM s) OR y = 'a';
WITH t(x, y) AS (VALUES (1, 'a'), (2, 'b'), (NULL, 'c')), s(k) AS (VALUES (1), (3)) SELECT y FROM t WHERE x NOT IN (SELECT k FROM s) OR y = 'a';
WITH t(x, y) AS (VALUES (1, 'a'), (2, 'b'), (NULL, 'c')), s(k) AS (VALUES (1), (3)) SELECT y FROM t WHERE NOT (x IN (SELECT k FROM s)) OR y = 'c';
WITH t(x, y) AS (VALUES (1, 'a'), (2, 'b'), (NULL, 'c')), s(k) AS (VALUES (1), (3)) SELECT y FROM t WHERE NOT (x NOT IN (SELECT k FROM s) OR y = 'z');
WITH t(x, y) AS (VALUES (1, 'a'), (2, 'b'), (NULL, 'c')), s(k, v) AS (VALUES (1, 'a'), (2, NULL)) SELECT y FROM t WHERE (x, y) NOT IN (SELECT k, v FROM s) OR x IS NULL;
WITH t(x, y) AS (VALUES (1, 'a'), (2, 'b'), (NULL, 'c')), s(k) AS (VALUES (CAST(NULL AS INT))) SELECT y FROM t WHERE x NOT IN (SELECT k FROM s WHERE k > 5) OR y = 'a';
-- NOT IN conjuncts DataFusion's null-aware anti join misanswers: a constant operand, a correlated subquery.
WITH t(x, y) AS (VALUES (1, 'a'), (2, 'b')), s(k) AS (VALUES (CAST(NULL AS INT)), (2)) SELECT y FROM t WHERE 1 NOT IN (SELECT k FROM s);
WITH t(x, y) AS (VALUES (1, 'a'), (2, 'b')), s(k) AS (VALUES (3), (2)) SELECT y FROM t WHERE y > 'a' AND 1 NOT IN (SELECT k FROM s);
WITH t(x, y) AS (VALUES (1, 'a'), (2, 'b'), (NULL, 'c')), s(k, g) AS (VALUES (CAST(NULL AS INT), 1), (2, 5)) SELECT y FROM t WHERE x NOT IN (SELECT k FROM s WHERE s.g > t.x);
WITH t(x, y) AS (VALUES (1, 'a'), (2, 'b'), (NULL, 'c')), s(k, g) AS (VALUES (CAST(NULL AS INT), 'a'), (2, 'b')) SELECT y FROM t WHERE x NOT IN (SELECT k FROM s WHERE s.g = t.y);
-- An ambiguous column of a derived table read by a subquery as an outer column: Spark cannot resolve it.
SELECT count(*) AS n FROM (SELECT * FROM VALUES (1) AS a(id) FULL JOIN VALUES (2) AS b(id) ON true) AS s WHERE NOT EXISTS (SELECT 1 FROM VALUES (3) AS c(k) WHERE c.k = s.id);
-- An outer column read in another case than it was defined with, from a correlated subquery.
WITH t3 AS (SELECT * FROM VALUES (1, 2, 3), (2, 3, 2) AS t3(id, k, Ts)) SELECT T1.k, (SELECT max(T2.id) FROM t3 AS T2 WHERE T2.k = T1.ts) AS c FROM t3 AS T1;
