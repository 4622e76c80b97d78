-- Silver: typed and checked.

CREATE OR REFRESH STREAMING LIVE TABLE orders_silver (
  CONSTRAINT valid_amount EXPECT (amount > 0) ON VIOLATION DROP ROW,
  CONSTRAINT known_customer EXPECT (customer_id IS NOT NULL)
)
COMMENT "Orders with a positive amount, typed"
TBLPROPERTIES ("quality" = "silver")
AS SELECT
  order_id,
  customer_id,
  CAST(amount AS DECIMAL(10, 2)) AS amount,
  CAST(substring(ts, 1, 10) AS DATE) AS order_date,
  lower(status) AS status
FROM STREAM(LIVE.orders_raw);

CREATE TEMPORARY LIVE VIEW customers_clean
COMMENT "Typed customers"
AS SELECT
  CAST(customer_id AS INT) AS customer_id,
  trim(name) AS name,
  upper(country) AS country
FROM LIVE.customers_raw;
