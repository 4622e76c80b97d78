from pyspark import pipelines as dp
from pyspark.sql import DataFrame, SparkSession

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
