# Databricks notebook source
# MAGIC %md
# MAGIC # Ingest
# MAGIC Orders and customer changes as Auto Loader reads them from the landing folders.

# COMMAND ----------

import dlt

source = spark.conf.get("source")

# COMMAND ----------

@dlt.table(comment="Orders as they land", table_properties={"quality": "bronze"})
def orders_raw():
    return (
        spark.readStream.format("cloudFiles")
        .option("cloudFiles.format", "json")
        .option("cloudFiles.inferColumnTypes", "true")
        .load(f"{source}/orders")
    )

# COMMAND ----------

@dlt.table(name="Customer_Changes", comment="Customer changes as they land")
def customer_changes():
    return (
        spark.readStream.format("cloudFiles")
        .option("cloudFiles.format", "json")
        .option("cloudFiles.inferColumnTypes", "true")
        .load(f"{source}/customers")
    )
