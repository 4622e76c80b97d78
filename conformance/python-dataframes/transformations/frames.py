"""DataFrame operations over inline data, each dataset one family of them."""
import datetime

from pyspark import pipelines as dp
from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

spark = SparkSession.active()

EMPLOYEES = """SELECT * FROM VALUES
    (1, 'Ann', 'eng', 120.50, DATE'2020-01-15', 2),
    (2, 'Bob', 'eng', 99.00, DATE'2021-06-01', 1),
    (3, 'Cid', 'ops', 80.25, DATE'2019-11-30', NULL),
    (4, 'Dee', 'ops', 80.25, DATE'2022-02-28', 3),
    (5, 'Eve', NULL, 150.00, DATE'2018-07-04', 1),
    (6, 'Fay', 'eng', NULL, DATE'2023-03-03', 2)
    AS t(id, name, dept, salary, hired, manager)"""
DEPTS = "SELECT * FROM VALUES ('eng', 'Engineering', 10), ('ops', 'Operations', 20), ('hr', 'People', 30) AS d(dept, title, floor)"


@dp.temporary_view
def employees() -> DataFrame:
    return spark.sql(EMPLOYEES)


@dp.temporary_view
def depts() -> DataFrame:
    return spark.sql(DEPTS)


@dp.materialized_view
def projected() -> DataFrame:
    e = spark.sql(EMPLOYEES)
    return e.select(
        "id",
        F.upper(F.col("name")).alias("name"),
        (F.col("salary") * 2).alias("double"),
        F.when(F.col("salary") >= 100, "high").when(F.col("salary").isNull(), "none").otherwise("low").alias("band"),
        F.expr("year(hired) AS year"),
        F.coalesce("dept", F.lit("?")).alias("dept"),
        F.concat_ws("-", "name", "dept").alias("tag"),
        F.col("id").between(2, 4).alias("middle"),
        F.col("name").isin("Ann", "Eve").alias("vip"),
        F.col("name").like("%e%").alias("has_e"),
        (~(F.col("id") == 1)).alias("not_first"),
        F.col("salary").cast("int").alias("salary_int"),
        F.lit(datetime.datetime(2024, 3, 31, 1, 30, 0, 250000, tzinfo=datetime.timezone.utc)).alias("at"),
        F.lit(datetime.date(2024, 2, 29)).alias("day"),
    )


@dp.materialized_view
def filtered() -> DataFrame:
    e = spark.sql(EMPLOYEES)
    return e.filter("salary > 90").where(F.col("dept").isNotNull()).orderBy(F.desc("salary")).limit(5).select("id", "salary")


@dp.materialized_view
def joined() -> DataFrame:
    e = spark.sql(EMPLOYEES).alias("e")
    d = spark.sql(DEPTS).alias("d")
    m = spark.sql(EMPLOYEES).alias("m")
    return (
        e.join(d, "dept", "left")
        .join(m, F.col("e.manager") == F.col("m.id"), "left_outer")
        .select(F.col("e.id"), F.col("e.name"), F.col("e.dept"), F.col("d.title"), F.col("m.name").alias("manager"))
    )


@dp.materialized_view
def join_kinds() -> DataFrame:
    e = spark.sql(EMPLOYEES)
    d = spark.sql(DEPTS)
    semi = e.join(d, "dept", "left_semi").select(F.lit("semi").alias("kind"), "name")
    anti = e.join(d, "dept", "left_anti").select(F.lit("anti").alias("kind"), "name")
    full = e.join(d, "dept", "full_outer").select(F.lit("full").alias("kind"), F.coalesce("name", "title").alias("name"))
    right = e.join(d, "dept", "right").select(F.lit("right").alias("kind"), F.coalesce("name", "title").alias("name"))
    cross = e.where("id = 1").crossJoin(d.where("floor = 10")).select(F.lit("cross").alias("kind"), "name")
    return semi.union(anti).union(full).union(right).union(cross)


@dp.materialized_view
def aggregated() -> DataFrame:
    e = spark.sql(EMPLOYEES)
    return e.groupBy("dept").agg(
        F.count("*").alias("n"),
        F.count("salary").alias("paid"),
        F.sum("salary").alias("total"),
        F.avg("salary").alias("mean"),
        F.min("hired").alias("first_hired"),
        F.max("name").alias("last_name"),
        F.countDistinct("manager").alias("managers"),
    )


@dp.materialized_view
def grouped_by_expression() -> DataFrame:
    e = spark.sql(EMPLOYEES)
    return e.groupBy((F.col("id") % 2).alias("parity"), F.upper("dept").alias("d")).agg(F.count("*").alias("n"))


@dp.materialized_view
def rolled_up() -> DataFrame:
    e = spark.sql(EMPLOYEES)
    return e.rollup("dept").agg(F.sum("salary").alias("total"), F.count("*").alias("n"))


@dp.materialized_view
def windowed() -> DataFrame:
    e = spark.sql(EMPLOYEES)
    by_dept = Window.partitionBy("dept").orderBy(F.col("salary").desc(), "id")
    running = Window.partitionBy("dept").orderBy("id").rowsBetween(Window.unboundedPreceding, Window.currentRow)
    return e.select(
        "id",
        "dept",
        F.row_number().over(by_dept).alias("rn"),
        F.dense_rank().over(by_dept).alias("dr"),
        F.lag("salary", 1).over(by_dept).alias("prev"),
        F.sum("salary").over(running).alias("running"),
    )


@dp.materialized_view
def set_ops() -> DataFrame:
    a = spark.sql("SELECT * FROM VALUES (1, 'x'), (2, 'y'), (2, 'y'), (3, 'z') AS a(k, v)")
    b = spark.sql("SELECT * FROM VALUES (2, 'y'), (3, 'z'), (4, 'w') AS b(k, v)")
    flipped = spark.sql("SELECT * FROM VALUES ('q', 9) AS c(v, k)")
    return (
        a.intersect(b).select(F.lit("intersect").alias("op"), "k", "v")
        .union(a.subtract(b).select(F.lit("subtract").alias("op"), "k", "v"))
        .union(a.distinct().select(F.lit("distinct").alias("op"), "k", "v"))
        .union(b.unionByName(flipped).select(F.lit("byName").alias("op"), "k", "v"))
    )


@dp.materialized_view
def reshaped() -> DataFrame:
    e = spark.sql(EMPLOYEES)
    return (
        e.withColumn("salary", F.coalesce("salary", F.lit(0)))
        .withColumn("senior", F.year("hired") < 2021)
        .withColumnsRenamed({"name": "who", "dept": "team"})
        .drop("manager")
        .dropDuplicates(["team", "senior"])
        .select("team", "senior")
        .toDF("group", "is_senior")
    )
