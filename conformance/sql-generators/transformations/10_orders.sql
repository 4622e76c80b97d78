-- Orders with their line items as an array of structs, tags as an array and attributes as a map.
CREATE TEMPORARY VIEW orders AS
SELECT * FROM VALUES
  (1, 'alice', array(named_struct('sku', 'A1', 'qty', 2, 'price', 9.50), named_struct('sku', 'B2', 'qty', 1, 'price', 20.00)),
      array('new', 'gift'), map('channel', 'web', 'coupon', 'X10')),
  (2, 'bob', array(named_struct('sku', 'A1', 'qty', 5, 'price', 9.50)), array(), map('channel', 'store')),
  (3, 'carol', array(), CAST(NULL AS ARRAY<STRING>), map()),
  (4, 'dave', CAST(NULL AS ARRAY<STRUCT<sku: STRING, qty: INT, price: DECIMAL(10,2)>>), array('vip', NULL, 'vip'),
      CAST(NULL AS MAP<STRING, STRING>))
AS t(order_id, customer, items, tags, attributes);
