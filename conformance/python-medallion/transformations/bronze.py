from pyspark import pipelines as dp
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

spark = SparkSession.active()
root = spark.conf.get("shop.data_root")


@dp.table(comment="Orders as they arrive, one file per batch.")
def orders_bronze() -> DataFrame:
    return (
        spark.readStream.format("json")
        .schema("order_id INT, customer_id INT, amount DECIMAL(10,2), ordered_at STRING, status STRING")
        .load(f"{root}/orders")
    )


@dp.materialized_view
def customers() -> DataFrame:
    return spark.read.format("json").schema("customer_id INT, name STRING, country STRING").load(f"{root}/customers")


@dp.materialized_view
def customer_names() -> DataFrame:
    # Operations whose meaning depends on the input's columns, over files: Spark analyses their
    # input when the flow is defined, which a file source allows (a pipeline dataset does not
    # exist yet then).
    raw = spark.read.format("json").schema("customer_id INT, name STRING, country STRING").load(f"{root}/customers")
    return (
        raw.withColumn("name", F.upper("name"))
        .withColumn("has_country", F.col("country").isNotNull())
        .withColumnRenamed("customer_id", "id")
        .withColumnRenamed("no_such_column", "ignored")
        .drop("country", "no_such_column")
        .dropDuplicates(["id"])
    )
