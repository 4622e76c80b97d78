CREATE STREAMING TABLE events_bronze AS
SELECT * FROM STREAM read_files('${events.data_root}/events', format => 'json');

CREATE STREAMING TABLE events AS
SELECT event_id, device, CAST(ts AS TIMESTAMP) AS ts, value FROM STREAM(events_bronze);
