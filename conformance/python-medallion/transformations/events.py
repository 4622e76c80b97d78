from pyspark import pipelines as dp
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

spark = SparkSession.active()
root = spark.conf.get("shop.data_root")

# One flow per streaming table: Spark stores streaming tables as parquet, where a second flow's
# commits would collide with the first one's.
dp.create_streaming_table("refund_moves", comment="Refunds, signed, as they arrive.")


@dp.append_flow(target="refund_moves")
def moves_from_refunds() -> DataFrame:
    refunds = spark.readStream.format("json").schema("order_id INT, amount DECIMAL(10,2)").load(f"{root}/refunds")
    return refunds.selectExpr("order_id", "'refund' AS kind", "-amount AS delta")


@dp.table
def order_moves() -> DataFrame:
    return spark.readStream.table("orders_bronze").select(
        "order_id", F.lit("order").alias("kind"), F.col("amount").alias("delta")
    )
