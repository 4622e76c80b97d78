-- Raw events as they arrive: text timestamps in two layouts, a JSON payload (one of them not
-- JSON, one of another shape), a card number and a customer name.
CREATE TEMPORARY VIEW raw_events AS
SELECT * FROM VALUES
  (1, '2024-03-05 14:07:09', '05/03/2024', '{"sku": "A1", "qty": 2, "tags": ["new", "gift"]}', '4111-1111-1111-1111', 'Alice Smith', 2147483000),
  (2, '2024-12-31 23:59:59', '31/12/2024', '{"sku": "B2", "qty": 5}', '5500 0000 0000 0004', 'bob', 2147483647),
  (3, '2025-01-01 00:00:00', '1/1/2025', 'not json', NULL, NULL, -2147483648),
  (4, NULL, NULL, '[1, 2]', '3400-0000-0000-009', 'Ünïcode Name', 0)
AS t(id, at_text, day_text, payload, card, customer, counter);
