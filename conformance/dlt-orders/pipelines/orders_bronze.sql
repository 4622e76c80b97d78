-- Databricks notebook source
-- MAGIC %md
-- MAGIC # Bronze
-- MAGIC Orders and customers as Auto Loader reads them from the landing folders.

-- COMMAND ----------

CREATE OR REFRESH STREAMING LIVE TABLE orders_raw
COMMENT "Orders as they land, one JSON record per line"
TBLPROPERTIES ("quality" = "bronze")
AS SELECT * FROM cloud_files("${source}/orders", "json", map("cloudFiles.inferColumnTypes", "true"))

-- COMMAND ----------

CREATE OR REFRESH STREAMING LIVE TABLE customers_raw
COMMENT "Customer master data; every column a string, as Auto Loader infers CSV"
TBLPROPERTIES ("quality" = "bronze")
AS SELECT * FROM cloud_files("${source}/customers", "csv", map("header", "true"))

-- COMMAND ----------

-- MAGIC %python
-- MAGIC display(spark.read.table("orders.orders_raw"))
