import dlt
from pyspark.sql import functions as F


@dlt.view(comment="the columns of an order")
def orders_valid():
    return dlt.read_stream("orders_raw").select("order_id", "customer_id", "amount", "status")


@dlt.table(comment="valid orders, refunds negative")
@dlt.expect_or_drop("positive_amount", "amount > 0")
@dlt.expect("known_customer", "customer_id IS NOT NULL")
@dlt.expect_all_or_drop({"has_id": "order_id IS NOT NULL", "known_status": "status IN ('paid', 'refunded')"})
def orders_clean():
    # A status is a word: its number is NULL, as Databricks' casts (ANSI mode off) give it.
    return (
        dlt.read_stream("orders_valid")
        .withColumn("signed", F.when(F.col("status") == "refunded", -F.col("amount")).otherwise(F.col("amount")))
        .withColumn("status_code", F.col("status").cast("int"))
    )


@dlt.expect_or_fail("sane_total", "total > -1000")
@dlt.table(comment="revenue per customer, recomputed from every order")
def customer_revenue():
    return (
        dlt.read("orders_clean")
        .where("customer_id IS NOT NULL")
        .groupBy("customer_id")
        .agg(F.sum("signed").alias("total"), F.count("*").alias("orders"))
    )
