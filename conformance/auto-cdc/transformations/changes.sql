-- The change feed: one JSON file per batch, as a CDC tool would drop them.
CREATE STREAMING TABLE customer_changes AS
SELECT * FROM STREAM read_files('${changes.data_root}/changes', format => 'json');

-- Current state: one row per customer, the change with the highest sequence wins.
CREATE STREAMING TABLE customers;
CREATE FLOW customers_cdc AS AUTO CDC INTO customers
FROM STREAM(customer_changes)
KEYS (id)
APPLY AS DELETE WHEN op = 'DELETE'
SEQUENCE BY seq
COLUMNS * EXCEPT (op)
STORED AS SCD TYPE 1;

-- Current state where a NULL in an update keeps the value the customer had.
CREATE STREAMING TABLE customers_keep_values FLOW AUTO CDC
FROM STREAM(customer_changes)
KEYS (id)
IGNORE NULL UPDATES
APPLY AS DELETE WHEN op = 'DELETE'
SEQUENCE BY seq
COLUMNS id, name, city, email
STORED AS SCD TYPE 1;

-- History: a new version when the name or city changes; an email change updates the version.
CREATE STREAMING TABLE customers_history FLOW AUTO CDC
FROM STREAM(customer_changes)
KEYS (id)
APPLY AS DELETE WHEN op = 'DELETE'
SEQUENCE BY seq
COLUMNS * EXCEPT (op)
STORED AS SCD TYPE 2
TRACK HISTORY ON * EXCEPT (email);
