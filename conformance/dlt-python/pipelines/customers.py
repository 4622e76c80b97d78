import dlt
from pyspark.sql.functions import col, expr

dlt.create_streaming_table(
    name="customers",
    comment="the latest of each customer",
    expect_all_or_drop={"has_name": "name IS NOT NULL"},
)

dlt.apply_changes(
    target="customers",
    source="customer_changes",
    keys=["id"],
    sequence_by=col("seq"),
    apply_as_deletes=expr("op = 'DELETE'"),
    except_column_list=["op", "seq", "_rescued_data"],
    stored_as_scd_type=1,
)
