CREATE MATERIALIZED VIEW formatted AS
SELECT
  id,
  date_format(to_timestamp(at_text, 'yyyy-MM-dd HH:mm:ss'), 'EEEE, d MMM yyyy hh:mm a') AS spoken,
  date_format(to_timestamp(at_text), 'yyyy/MM/dd') AS slashed,
  to_char(to_date(at_text), 'MMMM yyyy') AS month_name,
  try_to_date(day_text, 'dd/MM/yyyy') AS day,
  unix_timestamp(at_text, 'yyyy-MM-dd HH:mm:ss') AS epoch,
  from_unixtime(unix_timestamp(at_text, 'yyyy-MM-dd HH:mm:ss') + 3600, 'HH:mm') AS hour_later
FROM raw_events;

CREATE TEMPORARY VIEW payloads AS
SELECT
  id,
  from_json(payload, 'sku STRING, qty INT, tags ARRAY<STRING>') AS p,
  json_array_length(payload) AS array_length,
  array_join(json_object_keys(payload), ',') AS keys
FROM raw_events;

CREATE MATERIALIZED VIEW payload_fields AS
SELECT id, p.sku AS sku, p.qty AS qty, array_join(p.tags, '+') AS tags, p IS NULL AS no_struct, array_length, keys
FROM payloads;

CREATE MATERIALIZED VIEW payload_text AS
SELECT id, to_json(named_struct('id', id, 'sku', p.sku, 'tags', p.tags)) AS json
FROM payloads;

CREATE MATERIALIZED VIEW masked AS
SELECT id, mask(card) AS card, mask(customer, 'A', 'a', NULL, '_') AS customer, typeof(counter) AS counter_type
FROM raw_events;

CREATE MATERIALIZED VIEW counters AS
SELECT
  id,
  try_add(counter, 1000) AS plus,
  try_subtract(counter, 1000) AS minus,
  try_multiply(counter, 2) AS doubled,
  try_divide(counter, id - 4) AS divided,
  try_mod(counter, id - 4) AS remainder
FROM raw_events;

CREATE MATERIALIZED VIEW customer_list AS
SELECT
  listagg(customer, ', ') WITHIN GROUP (ORDER BY customer) AS customers,
  listagg(customer) AS no_delimiter
FROM raw_events;

CREATE MATERIALIZED VIEW parities AS
SELECT string_agg(DISTINCT CAST(id % 2 AS STRING), '|') WITHIN GROUP (ORDER BY CAST(id % 2 AS STRING) DESC) AS parities
FROM raw_events;
