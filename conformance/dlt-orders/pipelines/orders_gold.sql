-- Gold: what the business reads.

CREATE OR REFRESH LIVE TABLE daily_revenue
COMMENT "Revenue of completed orders per day"
AS SELECT order_date, count(*) AS orders, sum(amount) AS revenue
FROM live.orders_silver
WHERE status = 'completed'
GROUP BY order_date;

CREATE OR REFRESH LIVE TABLE customer_totals
COMMENT "Every customer with their orders so far"
AS SELECT
  c.customer_id,
  c.name,
  c.country,
  count(o.order_id) AS orders,
  coalesce(sum(o.amount), 0) AS spent
FROM LIVE.customers_clean c
LEFT JOIN LIVE.orders_silver o ON o.customer_id = c.customer_id
GROUP BY c.customer_id, c.name, c.country;
