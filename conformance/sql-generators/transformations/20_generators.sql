-- One row per line item: LATERAL VIEW over an array of structs, then inline's fields.
CREATE MATERIALIZED VIEW order_lines AS
SELECT o.order_id, o.customer, line.sku, line.qty, line.qty * line.price AS amount
FROM orders o
LATERAL VIEW explode(o.items) l AS line;

CREATE MATERIALIZED VIEW order_lines_inline AS
SELECT order_id, sku, qty, price
FROM orders
LATERAL VIEW inline(items) i AS sku, qty, price;

-- OUTER keeps orders with no tags (NULL or empty) as one row of NULLs; pos numbers the tags.
CREATE MATERIALIZED VIEW order_tags AS
SELECT order_id, p, tag
FROM orders
LATERAL VIEW OUTER posexplode(tags) t AS p, tag;

-- Generators in the SELECT list, with Spark's default column names.
CREATE MATERIALIZED VIEW order_attributes AS
SELECT order_id, explode(attributes) FROM orders;

CREATE MATERIALIZED VIEW tag_positions AS
SELECT order_id, posexplode_outer(tags) FROM orders;

CREATE MATERIALIZED VIEW tag_counts AS
SELECT tag, count(*) AS orders
FROM (SELECT explode(tags) AS tag FROM orders)
GROUP BY tag;

CREATE MATERIALIZED VIEW stacked AS
SELECT order_id, label, value
FROM orders
LATERAL VIEW stack(2, 'first', order_id, 'second', order_id * 10) s AS label, value;

CREATE MATERIALIZED VIEW stacked_in_select AS
SELECT stack(3, 'a', 1, 'b', 2, 'c') FROM orders WHERE order_id = 1;
