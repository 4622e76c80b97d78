-- Higher-order functions over the same arrays and maps.
CREATE MATERIALIZED VIEW order_totals AS
SELECT
  order_id,
  aggregate(items, CAST(0 AS DECIMAL(10,2)), (acc, i) -> CAST(acc + i.qty * i.price AS DECIMAL(10,2))) AS total,
  size(filter(items, i -> i.qty > 1)) AS bulk_lines,
  array_join(transform(items, (i, n) -> concat(n, ':', i.sku)), ',') AS skus,
  exists(items, i -> i.sku = 'B2') AS has_b2,
  forall(tags, t -> t IS NOT NULL) AS all_tags_set,
  array_join(zip_with(tags, array('x', 'y'), (a, b) -> concat(coalesce(a, '?'), b)), '|') AS zipped,
  reduce(transform(items, i -> i.qty), 0, (acc, q) -> acc + q, acc -> acc * 100) AS qty_pct,
  array_join(map_keys(map_filter(attributes, (k, v) -> k != 'coupon')), ',') AS kept_keys,
  array_join(map_values(transform_values(attributes, (k, v) -> upper(v))), ',') AS upper_values,
  array_join(map_keys(transform_keys(attributes, (k, v) -> concat(k, '_'))), ',') AS renamed_keys
FROM orders;
