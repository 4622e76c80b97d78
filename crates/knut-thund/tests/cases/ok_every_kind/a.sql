SET spark.sql.shuffle.partitions = 4;
CREATE MATERIALIZED VIEW raw AS SELECT * FROM parquet.`data/raw.parquet`;
CREATE TEMPORARY VIEW cleaned AS
WITH t AS (SELECT * FROM raw) SELECT * FROM t WHERE id IS NOT NULL;
CREATE VIEW published AS SELECT * FROM raw;
CREATE STREAMING TABLE events AS SELECT * FROM STREAM read_files('in/', format => 'json');
CREATE STREAMING TABLE all_events;
CREATE FLOW from_events AS INSERT INTO all_events BY NAME SELECT * FROM STREAM events;
CREATE FLOW backfill AS INSERT INTO ONCE all_events BY NAME SELECT * FROM csv.`old/`;
CREATE SINK out USING parquet OPTIONS (path '/tmp/out', 'compression' = 'zstd');
CREATE FLOW to_out AS INSERT INTO out SELECT * FROM STREAM(all_events);
CREATE MATERIALIZED VIEW summary (
  id BIGINT NOT NULL COMMENT 'the key',
  n BIGINT
) USING delta PARTITIONED BY (id) TBLPROPERTIES ('pipelines.reset.allowed' = 'false')
AS SELECT id, count(*) AS n FROM cleaned GROUP BY id;
