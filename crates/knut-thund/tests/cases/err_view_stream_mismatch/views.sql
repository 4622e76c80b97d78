CREATE STREAMING TABLE raw AS SELECT * FROM STREAM read_files('in', format => 'json');
CREATE TEMPORARY VIEW batch_view AS SELECT id FROM raw;
CREATE TEMPORARY STREAMING LIVE VIEW stream_view AS SELECT id FROM STREAM(LIVE.raw);
-- A batch view read as a stream, and a streaming view read in batch: both refused.
CREATE STREAMING TABLE from_batch AS SELECT * FROM STREAM(batch_view);
CREATE MATERIALIZED VIEW from_stream AS SELECT count(*) AS n FROM LIVE.stream_view;
CREATE VIEW stored AS SELECT id FROM STREAM(raw);
-- As they are defined: fine.
CREATE STREAMING TABLE ok AS SELECT * FROM STREAM(stream_view);
CREATE MATERIALIZED VIEW ok2 AS SELECT * FROM batch_view;
