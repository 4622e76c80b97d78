# Databricks notebook source
# MAGIC %md
# MAGIC # Landing data for development
# MAGIC Writes a few shipment and scan files into the landing folders, so the pipeline has input
# MAGIC in a development workspace. It defines no datasets.

# COMMAND ----------

import csv, io, random

landing = spark.conf.get("landing")
random.seed(7)

# COMMAND ----------

rows = [("S%d" % i, random.choice(["Oslo", "Bergen"]), round(random.uniform(0.5, 20), 2)) for i in range(100, 110)]
buf = io.StringIO()
w = csv.writer(buf)
w.writerow(["shipment_id", "destination", "weight_kg"])
w.writerows(rows)
dbutils.fs.put(f"{landing}/shipments/dev/generated.csv", buf.getvalue(), True)
