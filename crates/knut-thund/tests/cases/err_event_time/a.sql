CREATE STREAMING TABLE src AS SELECT * FROM STREAM read_files('x', format => 'json');

CREATE STREAMING TABLE no_watermark AS
SELECT device, count(*) AS n FROM STREAM(src) GROUP BY device;

CREATE STREAMING TABLE bad_unit AS
SELECT window.start AS ws, count(*) AS n
FROM STREAM(src) WATERMARK ts DELAY OF INTERVAL 5 MINUTES
GROUP BY window(ts, '10 fortnights');

CREATE STREAMING TABLE bad_slide AS
SELECT window.start AS ws, count(*) AS n
FROM STREAM(src) WATERMARK ts DELAY OF INTERVAL 5 MINUTES
GROUP BY window(ts, '10 minutes', '20 minutes');

CREATE STREAMING TABLE distinct_devices AS
SELECT window.start AS ws, count(DISTINCT device) AS devices
FROM STREAM(src) WATERMARK ts DELAY OF INTERVAL 5 MINUTES
GROUP BY window(ts, '10 minutes');

CREATE STREAMING TABLE other_column AS
SELECT window.start AS ws, count(*) AS n
FROM STREAM(src) WATERMARK ts DELAY OF INTERVAL 5 MINUTES
GROUP BY window(received_at, '10 minutes');

-- Fine: a materialized view aggregates in batch; a watermark on a stateless query changes nothing.
CREATE MATERIALIZED VIEW per_device AS SELECT device, count(*) AS n FROM src GROUP BY device;
CREATE STREAMING TABLE passthrough AS
SELECT * FROM STREAM(src) WATERMARK ts DELAY OF INTERVAL 1 MINUTE;
