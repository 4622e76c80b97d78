-- Silver and gold, in DLT's older spellings.

CREATE TEMPORARY LIVE TABLE hubs
COMMENT "The hubs and their regions"
AS SELECT * FROM VALUES ('OSL', 'east'), ('BGO', 'west'), ('TRD', 'mid') AS t(hub, region);

CREATE STREAMING LIVE VIEW scans_clean
AS SELECT scan_id, shipment_id, upper(hub) AS hub, CAST(scanned_at AS TIMESTAMP) AS scanned_at
FROM STREAM(LIVE.scans_raw)
WHERE upper(hub) <> 'TEST';

CREATE TEMPORARY STREAMING LIVE VIEW scans_with_region
AS SELECT s.*, h.region
FROM STREAM(LIVE.scans_clean) s LEFT JOIN LIVE.hubs h ON s.hub = h.hub;

CREATE OR REFRESH TEMPORARY STREAMING LIVE TABLE scans_silver
COMMENT "Scans at real hubs, typed, with the hub's region"
AS SELECT * FROM STREAM(LIVE.scans_with_region);

CREATE OR REFRESH STREAMING LIVE TABLE shipments_silver (
  CONSTRAINT positive_weight EXPECT (weight_kg > 0) ON VIOLATION DROP ROW
)
AS SELECT shipment_id, destination, CAST(weight_kg AS DOUBLE) AS weight_kg
FROM STREAM(LIVE.shipments_raw);

CREATE OR REFRESH LIVE TABLE hub_daily
AS SELECT hub, region, CAST(scanned_at AS DATE) AS day, count(*) AS scans,
          count(DISTINCT shipment_id) AS shipments
FROM LIVE.scans_silver
GROUP BY hub, region, CAST(scanned_at AS DATE);

CREATE OR REFRESH LIVE TABLE shipment_status
AS SELECT sh.shipment_id, sh.destination, sh.weight_kg, count(sc.scan_id) AS scans,
          max(sc.scanned_at) AS last_scan
FROM LIVE.shipments_silver sh LEFT JOIN LIVE.scans_silver sc ON sc.shipment_id = sh.shipment_id
GROUP BY sh.shipment_id, sh.destination, sh.weight_kg;
