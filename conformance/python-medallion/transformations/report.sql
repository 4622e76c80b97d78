-- SQL over Python datasets, in the same pipeline.
CREATE MATERIALIZED VIEW net_by_order AS
SELECT order_id, sum(delta) AS net, count(*) AS moves
FROM (SELECT * FROM order_moves UNION ALL SELECT * FROM refund_moves)
GROUP BY order_id;
