from pyspark import pipelines as dp
from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

spark = SparkSession.active()


@dp.materialized_view(name="order_facts")
def facts() -> DataFrame:
    o = spark.read.table("orders_bronze").alias("o")
    c = spark.read.table("customers").alias("c")
    return (
        o.join(c, F.col("o.customer_id") == F.col("c.customer_id"), "left")
        .where(F.col("o.status") != "cancelled")
        .select(
            F.col("o.order_id"),
            F.col("c.name"),
            F.coalesce(F.col("c.country"), F.lit("??")).alias("country"),
            F.col("o.amount"),
            F.to_date(F.col("o.ordered_at")).alias("day"),
        )
    )


@dp.materialized_view
def revenue_by_country() -> DataFrame:
    return (
        spark.read.table("order_facts")
        .groupBy("country")
        .agg(
            F.sum("amount").alias("revenue"),
            F.count("*").alias("orders"),
            F.count("amount").alias("priced"),
            F.max("day").alias("last_day"),
        )
    )


@dp.materialized_view
def top_orders() -> DataFrame:
    w = Window.partitionBy("country").orderBy(F.col("amount").desc_nulls_last(), "order_id")
    return (
        spark.read.table("order_facts")
        .select("order_id", "country", "amount", F.rank().over(w).alias("rank_in_country"))
        .where("rank_in_country <= 2")
    )


@dp.materialized_view
def paid_customers() -> DataFrame:
    # Spark analyses a Deduplicate's input when the flow is defined, before `order_facts` exists,
    # so `.distinct()` here would fail on Spark: the names are grouped instead.
    facts = spark.read.table("order_facts")
    return facts.where(F.col("name").isNotNull()).groupBy("name").agg(F.count("*").alias("paid_orders"))


@dp.temporary_view
def pt_customers() -> DataFrame:
    return spark.sql("SELECT name, country FROM customers WHERE country = 'PT'")


@dp.materialized_view
def paid_or_portuguese() -> DataFrame:
    portuguese = spark.read.table("pt_customers").select("name")
    return spark.read.table("paid_customers").select("name").union(portuguese).orderBy("name")
