CREATE STREAMING TABLE events AS
SELECT event_id, device, CAST(ts AS TIMESTAMP) AS ts, value FROM STREAM(events_bronze);
