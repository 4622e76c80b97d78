-- Databricks notebook source
-- MAGIC %md
-- MAGIC # Bronze
-- MAGIC Shipments and hub scans as Auto Loader reads them from the landing folders.

-- COMMAND ----------

SET pipelines.trigger.interval;

-- COMMAND ----------

CREATE INCREMENTAL LIVE TABLE shipments_raw
COMMENT "Shipments as they land: CSV with a header line, every column a string"
AS SELECT * FROM cloud_files("${landing}/shipments", "csv")

-- COMMAND ----------

CREATE OR REFRESH STREAMING LIVE TABLE scans_raw (
  scan_id STRING COMMENT "one scan of a parcel at a hub",
  shipment_id STRING,
  hub STRING,
  scanned_at STRING
)
COMMENT "Hub scans; the files put their columns in another order"
AS SELECT * FROM cloud_files("${landing}/scans", "csv")
