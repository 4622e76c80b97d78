CREATE MATERIALIZED VIEW a AS
SELECT * FROM read_files('${source_root}/x', format => 'json');
