# Spark's reference definition of events_bronze: open-source SDP SQL cannot stream files.
from pyspark import pipelines as dp
from pyspark.sql import SparkSession


@dp.table
def events_bronze():
    spark = SparkSession.active()
    root = spark.conf.get("events.data_root")
    return (spark.readStream.format("json")
            .schema("device STRING, event_id BIGINT, ts STRING, value DOUBLE")
            .option("recursiveFileLookup", "true")
            .load(root + "/events"))
