USE SCHEMA silver;
CREATE STREAMING TABLE changes (
  CONSTRAINT has_id EXPECT (id IS NOT NULL) ON VIOLATION DROP ROW,
  CONSTRAINT valid_op EXPECT (op IN ('I', 'U', 'D')) ON VIOLATION FAIL UPDATE,
  CONSTRAINT sane_ts EXPECT (ts > 0)
) TBLPROPERTIES ('pipelines.outputMode' = 'append')
AS SELECT * FROM STREAM read_files('cdc/', format => 'json') ;
CREATE STREAMING TABLE customers;
CREATE FLOW apply_changes AS AUTO CDC INTO customers
FROM STREAM(changes) KEYS (id) APPLY AS DELETE WHEN op = 'D'
SEQUENCE BY ts COLUMNS * EXCEPT (op) STORED AS SCD TYPE 2 TRACK HISTORY ON name;
CREATE STREAMING TABLE windows AS
SELECT window.start AS ws, count(*) AS n FROM STREAM(changes)
WATERMARK ts DELAY OF INTERVAL 5 MINUTES GROUP BY window(ts, '10 minutes');
