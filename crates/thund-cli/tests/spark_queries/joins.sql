-- Joins of every kind, over small tables with NULL keys and duplicates.

WITH l(k, a) AS (VALUES (1, 'a'), (2, 'b'), (2, 'bb'), (NULL, 'n'), (4, 'd')),
     r(k, b) AS (VALUES (2, 'x'), (3, 'y'), (NULL, 'z'), (4, 'w'), (4, 'ww'))
SELECT l.k, a, b FROM l JOIN r ON l.k = r.k;
WITH l(k, a) AS (VALUES (1, 'a'), (2, 'b'), (2, 'bb'), (NULL, 'n'), (4, 'd')),
     r(k, b) AS (VALUES (2, 'x'), (3, 'y'), (NULL, 'z'), (4, 'w'), (4, 'ww'))
SELECT l.k AS lk, r.k AS rk, a, b FROM l LEFT JOIN r ON l.k = r.k;
WITH l(k, a) AS (VALUES (1, 'a'), (2, 'b'), (2, 'bb'), (NULL, 'n'), (4, 'd')),
     r(k, b) AS (VALUES (2, 'x'), (3, 'y'), (NULL, 'z'), (4, 'w'), (4, 'ww'))
SELECT l.k AS lk, r.k AS rk, a, b FROM l RIGHT OUTER JOIN r ON l.k = r.k;
WITH l(k, a) AS (VALUES (1, 'a'), (2, 'b'), (2, 'bb'), (NULL, 'n'), (4, 'd')),
     r(k, b) AS (VALUES (2, 'x'), (3, 'y'), (NULL, 'z'), (4, 'w'), (4, 'ww'))
SELECT l.k AS lk, r.k AS rk, a, b FROM l FULL OUTER JOIN r ON l.k = r.k;
WITH l(k, a) AS (VALUES (1, 'a'), (2, 'b'), (2, 'bb'), (NULL, 'n'), (4, 'd')),
     r(k, b) AS (VALUES (2, 'x'), (3, 'y'), (NULL, 'z'), (4, 'w'), (4, 'ww'))
SELECT * FROM l LEFT SEMI JOIN r ON l.k = r.k;
WITH l(k, a) AS (VALUES (1, 'a'), (2, 'b'), (2, 'bb'), (NULL, 'n'), (4, 'd')),
     r(k, b) AS (VALUES (2, 'x'), (3, 'y'), (NULL, 'z'), (4, 'w'), (4, 'ww'))
SELECT * FROM l LEFT ANTI JOIN r ON l.k = r.k;
WITH l(k, a) AS (VALUES (1, 'a'), (2, 'b')),
     r(k, b) AS (VALUES (2, 'x'), (3, 'y'))
SELECT * FROM l CROSS JOIN r;
WITH l(k, a) AS (VALUES (1, 'a'), (2, 'b'), (NULL, 'n')),
     r(k, b) AS (VALUES (2, 'x'), (NULL, 'z'))
SELECT a, b FROM l JOIN r ON l.k <=> r.k;
WITH l(k, a) AS (VALUES (1, 'a'), (2, 'b'), (3, 'c')),
     r(k, b) AS (VALUES (2, 'x'), (3, 'y'), (5, 'z'))
SELECT * FROM l JOIN r USING (k);
WITH l(k, a) AS (VALUES (1, 'a'), (2, 'b'), (3, 'c')),
     r(k, b) AS (VALUES (2, 'x'), (3, 'y'), (5, 'z'))
SELECT * FROM l FULL JOIN r USING (k);
WITH l(k, a) AS (VALUES (1, 'a'), (2, 'b'), (3, 'c')),
     r(k, b) AS (VALUES (2, 'x'), (3, 'y'), (5, 'z'))
SELECT * FROM l NATURAL JOIN r;
WITH l(k, v) AS (VALUES (1, 10), (2, 20), (3, 30)),
     r(lo, hi, tag) AS (VALUES (0, 15, 'low'), (15, 100, 'high'))
SELECT k, tag FROM l JOIN r ON v >= lo AND v < hi;
WITH l(k, v) AS (VALUES (1, 10), (2, 20), (3, 30)),
     r(k, w) AS (VALUES (1, 5), (2, 25), (3, 30))
SELECT l.k, v, w FROM l JOIN r ON l.k = r.k AND v > w;
WITH l(k, v) AS (VALUES (1, 10), (2, 20), (3, 30)),
     r(k, w) AS (VALUES (1, 5), (2, 25))
SELECT l.k, v, w FROM l LEFT JOIN r ON l.k = r.k AND w > 6;
WITH a(id, x) AS (VALUES (1, 'a'), (2, 'b'), (3, 'c')),
     b(id, y) AS (VALUES (1, 'p'), (3, 'q')),
     c(id, z) AS (VALUES (1, 'u'), (2, 'v'))
SELECT a.id, x, y, z FROM a LEFT JOIN b ON a.id = b.id LEFT JOIN c ON a.id = c.id;
WITH a(id, x) AS (VALUES (1, 'a'), (2, 'b'), (3, 'c')),
     b(id, y) AS (VALUES (1, 'p'), (3, 'q'))
SELECT a.id, count(b.id) AS n FROM a LEFT JOIN b ON a.id = b.id GROUP BY a.id;
WITH a(id, x) AS (VALUES (1, 'a'), (2, 'b')),
     b(id, y) AS (VALUES (1, 'p'), (1, 'q'))
SELECT a.id, collect_list(y) AS ys FROM a JOIN b ON a.id = b.id GROUP BY a.id;
WITH t(id, parent) AS (VALUES (1, NULL), (2, 1), (3, 1), (4, 2))
SELECT c.id, p.id AS parent_id FROM t c LEFT JOIN t p ON c.parent = p.id;
WITH l(k) AS (VALUES (1), (2)), r(k) AS (VALUES (CAST(1 AS BIGINT)), (3L))
SELECT l.k, r.k AS rk FROM l JOIN r ON l.k = r.k;
WITH l(k) AS (VALUES ('1'), ('2')), r(k) AS (VALUES (1), (3))
SELECT l.k, r.k AS rk FROM l JOIN r ON l.k = r.k;
WITH l(d) AS (VALUES (DATE'2024-01-01'), (DATE'2024-01-02')), r(s) AS (VALUES ('2024-01-02'))
SELECT d FROM l JOIN r ON l.d = r.s;
WITH l(k, a) AS (VALUES (1, 'a'), (2, 'b'), (3, 'c')),
     r(k) AS (VALUES (2), (NULL))
SELECT * FROM l WHERE k NOT IN (SELECT k FROM r);
WITH l(k, a) AS (VALUES (1, 'a'), (2, 'b'), (3, 'c')),
     r(k) AS (VALUES (2), (NULL))
SELECT * FROM l WHERE NOT EXISTS (SELECT 1 FROM r WHERE r.k = l.k);
WITH l(k, a) AS (VALUES (1, 'a'), (2, 'b'), (3, 'c')),
     r(k) AS (VALUES (2), (3))
SELECT * FROM l WHERE k IN (SELECT k FROM r) ORDER BY k;
WITH l(k, a) AS (VALUES (1, 'a'), (2, 'b')), r(k, b) AS (VALUES (1, 'x'))
SELECT l.*, r.b FROM l LEFT JOIN r ON l.k = r.k WHERE r.b IS NULL;
SELECT * FROM VALUES (1L) a(k) JOIN VALUES ('b'), ('1') b(k) USING (k);
SELECT * FROM VALUES (1L, 'x') a(k, s) LEFT JOIN VALUES ('1.0', 'y'), ('x', 'z') b(k, t) USING (k);
SELECT * FROM VALUES (1, 'x'), (2, 'w') a(k, s) RIGHT JOIN VALUES ('1', 'y'), ('3', 'z') b(k, t) USING (k);
SELECT * FROM VALUES (DATE'2024-01-01') a(k) JOIN VALUES ('2024-01-01'), ('x') b(k) USING (k);
SELECT * FROM VALUES (true, 1) a(k, v) LEFT SEMI JOIN VALUES ('true'), ('no') b(k) USING (k);
-- NATURAL joins: the keys first, in the left side's order, then either side's other columns; a
-- right join's key is the right side's, a full join's the one that is not NULL.
WITH l(a, k) AS (VALUES ('a', 1), ('b', 2), ('c', 3)),
     r(b, k) AS (VALUES ('x', 2), ('y', 3), ('z', 5))
SELECT * FROM l NATURAL JOIN r;
WITH l(a, k) AS (VALUES ('a', 1), ('b', 2), ('c', 3)),
     r(b, k) AS (VALUES ('x', 2), ('y', 3), ('z', 5))
SELECT * FROM l NATURAL FULL OUTER JOIN r;
WITH l(a, k) AS (VALUES ('a', 1), ('b', 2), ('c', 3)),
     r(b, k) AS (VALUES ('x', 2), ('y', 3), ('z', 5))
SELECT * FROM l NATURAL RIGHT JOIN r;
WITH l(a, k) AS (VALUES ('a', 1), ('b', 2), ('c', 3)),
     r(b, k) AS (VALUES ('x', 2), ('y', 3), ('z', 5))
SELECT k, a, b FROM l AS x NATURAL RIGHT OUTER JOIN r AS y WHERE k > 1;
WITH l(a, k) AS (VALUES ('a', 1), ('b', 2), ('c', 3)),
     r(b, k) AS (VALUES ('x', 2), ('y', 3), ('z', 5))
SELECT k, count(*) AS n FROM l NATURAL FULL JOIN r GROUP BY k;
WITH l(a, k, j) AS (VALUES ('a', 1, 1), ('b', 2, 2), ('c', 3, 0)),
     r(j, b, k) AS (VALUES (2, 'x', 2), (0, 'y', 3), (5, 'z', 5))
SELECT * FROM l NATURAL LEFT JOIN r;
WITH l(a, k) AS (VALUES ('a', 1), ('b', 2)),
     r(b, k) AS (VALUES ('x', 2), ('y', 3))
SELECT * FROM (SELECT k AS K, a FROM l) AS x NATURAL JOIN r;
WITH l(a, k) AS (VALUES ('a', 1), ('b', 2)),
     r(b, k) AS (VALUES ('x', 2), ('y', 3)),
     j AS (SELECT * FROM l NATURAL FULL JOIN r)
SELECT * FROM j NATURAL JOIN (SELECT k, 'q' AS q FROM r) AS s;
WITH l(a, k) AS (VALUES ('a', 1), ('b', 2)),
     r(b, k) AS (VALUES ('x', 2), ('y', 3))
SELECT * FROM l WHERE EXISTS (SELECT * FROM r NATURAL RIGHT JOIN (SELECT k FROM l) AS m WHERE m.k = l.k);
WITH l(k, a) AS (VALUES (1, 'a'), (2, 'b'), (2, 'bb')),
     r(k, b) AS (VALUES (2, 'x'), (3, 'y'), (3, 'yy'))
SELECT k, count(*) OVER w AS n FROM l FULL JOIN r USING (k) WINDOW w AS (PARTITION BY k);
WITH l(k, a) AS (VALUES (1, 'a'), (2, 'b')), r(k, b) AS (VALUES (2, 'x'), (3, 'y')), m(k, c) AS (VALUES (3, 'p'), (4, 'q'))
SELECT l.a, r.b FROM l FULL JOIN r USING (k) LEFT ANTI JOIN m USING (k);
