-- DataSketches (KLL, HyperLogLog, Theta): the sketches' bytes where Spark's do not depend on how
-- rows are split between partitions, and their answers; each compared with Spark in both modes.
SELECT hex(hll_sketch_agg(col)) AS h, hll_sketch_estimate(hll_sketch_agg(col)) AS e FROM VALUES (1), (2), (3), (2), (NULL) AS t(col);
SELECT hex(hll_sketch_agg(col)) AS h, hll_sketch_estimate(hll_sketch_agg(col, 10)) AS e FROM VALUES ('a'), ('b'), (''), (NULL), ('a') AS t(col);
SELECT hex(hll_sketch_agg(col)) AS h FROM VALUES (X'61'), (X''), (X'62') AS t(col);
SELECT hex(hll_sketch_agg(col)) AS h FROM VALUES (CAST(NULL AS INT)) AS t(col);
SELECT hll_sketch_estimate(hll_sketch_agg(id, 10)) AS e, hll_sketch_estimate(hll_sketch_agg(CAST(id AS STRING))) AS s FROM range(0, 60);
SELECT hex(hll_union(hll_sketch_agg(a), hll_sketch_agg(b))) AS u, hll_sketch_estimate(hll_union(hll_sketch_agg(a), hll_sketch_agg(b, 10), true)) AS e FROM VALUES (1, 4), (2, 5), (3, 6), (3, 1) AS t(a, b);
SELECT k, hll_sketch_estimate(hll_union_agg(s)) AS e FROM (SELECT k, v, hll_sketch_agg(x) AS s FROM VALUES (1, 1, 10), (1, 2, 11), (1, 2, 10), (2, 1, 5) AS t(k, v, x) GROUP BY k, v) GROUP BY k ORDER BY k;
SELECT hex(theta_sketch_agg(col)) AS h, theta_sketch_estimate(theta_sketch_agg(col)) AS e FROM VALUES (1), (2), (3), (NULL), (1) AS t(col);
SELECT hex(theta_sketch_agg(col)) AS h FROM VALUES (1.0D), (-0.0D), (0.0D) AS t(col);
SELECT hex(theta_sketch_agg(col)) AS h FROM VALUES ('a'), ('b'), (''), (NULL) AS t(col);
SELECT hex(theta_sketch_agg(CAST(col AS FLOAT))) AS b FROM VALUES (1.0D) AS t(col);
SELECT hex(theta_sketch_agg(col)) AS h FROM VALUES (array(1, 2)) AS t(col);
SELECT hex(theta_sketch_agg(col)) AS h FROM VALUES (array(1L, 2L)), (CAST(array() AS ARRAY<BIGINT>)) AS t(col);
SELECT hex(theta_sketch_agg(col)) AS h FROM VALUES (CAST(NULL AS BIGINT)) AS t(col);
SELECT theta_sketch_estimate(theta_sketch_agg(id, 5)) AS e, hex(theta_sketch_agg(id, 5)) AS h FROM range(0, 100);
SELECT hex(theta_union(x, y)) AS u, hex(theta_intersection(x, y)) AS i, hex(theta_difference(x, y)) AS d, theta_sketch_estimate(theta_union(x, y, 16)) AS e FROM (SELECT theta_sketch_agg(a) AS x, theta_sketch_agg(b) AS y FROM VALUES (1, 2), (2, 3), (3, 4) AS t(a, b));
SELECT hex(theta_union_agg(s)) AS u, hex(theta_intersection_agg(s)) AS i FROM (SELECT k, theta_sketch_agg(v) AS s FROM VALUES (1, 1), (1, 2), (2, 2), (2, 3) AS t(k, v) GROUP BY k);
SELECT hex(theta_union_agg(s)) AS u FROM (SELECT theta_sketch_agg(v) AS s FROM VALUES (1) AS t(v) WHERE v > 1);
SELECT kll_sketch_get_n_bigint(s) AS n, kll_sketch_get_quantile_bigint(s, 0.5) AS q, kll_sketch_get_quantile_bigint(s, array(0.1, 0.4, 0.41, 0.99)) AS qs, kll_sketch_get_rank_bigint(s, 3) AS r, kll_sketch_get_rank_bigint(s, array(0, 2, 10)) AS rs FROM (SELECT kll_sketch_agg_bigint(col) AS s FROM VALUES (1), (2), (3), (4), (5), (NULL) AS t(col));
SELECT kll_sketch_get_n_double(s) AS n, kll_sketch_get_quantile_double(s, 1.0) AS mx, kll_sketch_get_quantile_double(s, 0.0) AS mn, kll_sketch_get_rank_double(s, 0.5D) AS r FROM (SELECT kll_sketch_agg_double(c) AS s FROM VALUES (1.5D), (CAST('NaN' AS DOUBLE)), (NULL), (-2.0D) AS t(c));
SELECT hex(kll_sketch_agg_bigint(c)) AS one, hex(kll_sketch_agg_bigint(c, 8)) AS small FROM VALUES (7) AS t(c);
SELECT hex(kll_sketch_agg_float(c)) AS h, kll_sketch_get_n_float(kll_sketch_agg_float(c)) AS n FROM VALUES (CAST(NULL AS FLOAT)) AS t(c);
SELECT kll_sketch_to_string_double(kll_sketch_agg_double(c)) AS s FROM VALUES (1.0D), (2.5D), (3.0D) AS t(c);
SELECT kll_sketch_to_string_bigint(kll_sketch_agg_bigint(c, 8)) AS s FROM range(0, 100) AS t(c) WHERE c < 1;
SELECT kll_sketch_get_n_bigint(kll_sketch_merge_bigint(a, b)) AS n, kll_sketch_get_quantile_bigint(kll_sketch_merge_bigint(a, b), 0.5) AS q FROM (SELECT kll_sketch_agg_bigint(x) AS a, kll_sketch_agg_bigint(y, 50) AS b FROM VALUES (1, 10), (2, 20) AS t(x, y));
SELECT kll_sketch_get_n_float(kll_merge_agg_float(s)) AS n, kll_sketch_get_quantile_float(kll_merge_agg_float(s), 0.5) AS q FROM (SELECT k, kll_sketch_agg_float(v) AS s FROM VALUES (1, 1.0F), (1, 2.0F), (2, 3.0F) AS t(k, v) GROUP BY k);
SELECT k, kll_sketch_get_quantile_double(kll_sketch_agg_double(v), 0.5) AS q FROM VALUES (1, 1.0D), (1, 3.0D), (2, 2.0D), (2, 2.5F) AS t(k, v) GROUP BY k ORDER BY k;
