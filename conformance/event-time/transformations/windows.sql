-- Counts per device and 10-minute window; a window's row is written once, when it closes.
CREATE STREAMING TABLE device_counts_10m AS
SELECT window.start AS window_start, window.end AS window_end, device,
       count(*) AS events, sum(value) AS total, min(value) AS low, max(value) AS high,
       round(avg(value), 4) AS mean
FROM STREAM(events) WATERMARK ts DELAY OF INTERVAL 5 MINUTES
GROUP BY window(ts, '10 minutes'), device;

-- Hopping windows: 20 minutes long, one every 10 minutes, so each event counts twice.
CREATE STREAMING TABLE counts_20m_every_10m AS
SELECT window.start AS window_start, window.end AS window_end, count(*) AS events, sum(value) AS total
FROM STREAM(events) WATERMARK ts DELAY OF INTERVAL 5 MINUTES
GROUP BY window(ts, '20 minutes', '10 minutes');

-- A session per device: events at most 5 minutes apart.
CREATE STREAMING TABLE device_sessions AS
SELECT device, session_window.start AS session_start, session_window.end AS session_end,
       count(*) AS events, max(value) AS high
FROM STREAM(events) WATERMARK ts DELAY OF INTERVAL 5 MINUTES
GROUP BY device, session_window(ts, '5 minutes');
