CREATE STREAMING TABLE src AS SELECT * FROM STREAM read_files('x', format => 'json');
CREATE STREAMING TABLE bad_delay AS
SELECT window.start AS ws, count(*) AS n
FROM STREAM(src) WATERMARK ts DELAY OF INTERVAL 5 FORTNIGHTS
GROUP BY window(ts, '10 minutes');
