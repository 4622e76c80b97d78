# Databricks' Python pipeline API over pyspark's own, for definition files written for Databricks:
# the `dlt` module, the expectation decorators (`dlt.expect*`, `dp.expect*`), `dp.create_auto_cdc_flow`
# where the installed pyspark lacks it (or cannot send SCD type 2), and the `spark` global.
#
# Datasets and flows go through pyspark's `pyspark.pipelines` exactly as an SDP file's do; what
# pyspark's protocol has no place for is written to the driver's report as one JSON object per
# line, each at the user's file and line:
#   {"kind": "expectations", "dataset", "file", "line", "expectations": [{"name", "condition", "action"}]}
#   {"kind": "table", "dataset"}          a dataset defined by `table` (a materialized view over a
#                                         batch query in a Databricks project)
#   {"kind": "auto_cdc", "file", "line", "target", "source", "flow", "keys", "sequence_by", ...}
#                                         each column or condition {"sql": text} or {"proto": hex
#                                         of the Column's Spark Connect Expression}
#   {"kind": "note", "file", "line", "message"}
# The Rust side turns them into the SQL clauses a SQL file would have.
import builtins
import os
import sys
import traceback
import types

RECORDS = []


def _user_location():
    """The innermost frame outside this driver and pyspark: the user's file and line."""
    import pyspark

    pyspark_dir = os.path.dirname(os.path.abspath(pyspark.__file__))
    for frame in reversed(traceback.extract_stack()):
        name = frame.filename
        if name.startswith("<") or os.path.abspath(name).startswith(pyspark_dir):
            continue
        return name, frame.lineno or 1
    return "<python>", 1


def _caller_location(stacklevel=0):  # noqa: ARG001 - pyspark's signature
    from pyspark.pipelines.source_code_location import SourceCodeLocation

    filename, line = _user_location()
    return SourceCodeLocation(filename=filename, line_number=line)


def _record(kind, **fields):
    filename, line = _user_location()
    RECORDS.append(dict(kind=kind, file=filename, line=line, **fields))


def _note(message):
    _record("note", message=message)


ACTIONS = {"expect": "warn", "expect_or_drop": "drop", "expect_or_fail": "fail"}


def _expectations_of(func):
    return list(getattr(func, "__thund_expectations__", []))


def _expect_decorator(action, pairs):
    """A decorator adding `pairs` [(name, condition)] with `action` to the dataset it decorates,
    whether it sits below the dataset's decorator (on the function) or above it."""

    for name, condition in pairs:
        if not isinstance(name, str) or not isinstance(condition, str):
            raise TypeError("an expectation is a name and a SQL condition, both strings")

    def decorate(func):
        listed = [{"name": n, "condition": c, "action": action} for n, c in pairs]
        dataset = getattr(func, "__thund_dataset__", None)
        if dataset is not None:
            _record("expectations", dataset=dataset, expectations=listed)
            return func
        # Decorators apply bottom-up: this one's expectations come before those applied earlier.
        func.__thund_expectations__ = listed + _expectations_of(func)
        return func

    return decorate


def _expect(action):
    def one(name, condition):
        return _expect_decorator(action, [(name, condition)])

    return one


def _expect_all(action):
    def many(expectations):
        if not isinstance(expectations, dict):
            raise TypeError("expect_all takes a dict of expectation names to SQL conditions")
        return _expect_decorator(action, list(expectations.items()))

    return many


def _column(value, spark):
    """A column name, SQL text or Column as the report carries it."""
    if value is None:
        return None
    if isinstance(value, str):
        return {"sql": value}
    to_plan = getattr(value, "to_plan", None)
    if to_plan is None:
        raise TypeError(f"expected a column name or a Column, got {type(value).__name__}")
    return {"proto": to_plan(spark.client).SerializeToString().hex()}


def _columns(values, spark):
    if values is None:
        return []
    if isinstance(values, (str,)) or not hasattr(values, "__iter__"):
        values = [values]
    return [_column(v, spark) for v in values]


def install(spark):
    from pyspark import pipelines as dp
    from pyspark.pipelines import api

    # Locations name the user's line, not this driver's, when a wrapper below calls pyspark.
    api.get_caller_source_code_location = _caller_location

    sdp_table, sdp_mv, sdp_view = dp.table, dp.materialized_view, dp.temporary_view
    sdp_streaming_table = dp.create_streaming_table
    sdp_auto_cdc = getattr(dp, "create_auto_cdc_flow", None)

    def dataset_decorator(define, kind, query_function, kwargs, known):
        for key in list(kwargs):
            if key not in known:
                _ignored(key, kwargs.pop(key), kind)

        def outer(func):
            name = kwargs.get("name") or func.__name__
            expectations = _expectations_of(func)
            define(**kwargs)(func)
            if kind == "table":
                _record("table", dataset=name)
            if expectations:
                _record("expectations", dataset=name, expectations=expectations)
            func.__thund_dataset__ = name
            return func

        return outer(query_function) if query_function is not None else outer

    STORED = {"name", "comment", "spark_conf", "table_properties", "partition_cols", "cluster_by", "schema", "format"}

    def table(query_function=None, **kwargs):
        return dataset_decorator(sdp_table, "table", query_function, kwargs, STORED)

    def materialized_view(query_function=None, **kwargs):
        return dataset_decorator(sdp_mv, "materialized_view", query_function, kwargs, STORED)

    def temporary_view(query_function=None, **kwargs):
        return dataset_decorator(sdp_view, "view", query_function, kwargs, {"name", "comment", "spark_conf"})

    def create_streaming_table(name, **kwargs):
        expectations = []
        for key, action in (("expect_all", "warn"), ("expect_all_or_drop", "drop"), ("expect_all_or_fail", "fail")):
            given = kwargs.pop(key, None) or {}
            expectations += [{"name": n, "condition": c, "action": action} for n, c in given.items()]
        for key in list(kwargs):
            if key not in STORED - {"name", "spark_conf"}:
                _ignored(key, kwargs.pop(key), "create_streaming_table")
        sdp_streaming_table(name, **kwargs)
        if expectations:
            _record("expectations", dataset=name, expectations=expectations)

    def auto_cdc(
        target,
        source,
        keys,
        sequence_by,
        where=None,
        ignore_null_updates=False,
        apply_as_deletes=None,
        apply_as_truncates=None,
        column_list=None,
        except_column_list=None,
        stored_as_scd_type=1,
        track_history_column_list=None,
        track_history_except_column_list=None,
        flow_name=None,
        name=None,
        once=False,
    ):
        if where is not None:
            raise ValueError("`where` of apply_changes is not supported: filter the source view instead")
        if once:
            raise ValueError("`once=True` of apply_changes is not supported: an AUTO CDC flow reads its source as a stream")
        if str(stored_as_scd_type) not in ("1", "2"):
            raise ValueError(f"stored_as_scd_type is 1 or 2, not {stored_as_scd_type!r}")
        _record(
            "auto_cdc",
            target=target,
            source=source,
            flow=flow_name or name,
            keys=_columns(keys, spark),
            sequence_by=_column(sequence_by, spark),
            ignore_null_updates=bool(ignore_null_updates),
            apply_as_deletes=_column(apply_as_deletes, spark),
            apply_as_truncates=_column(apply_as_truncates, spark),
            column_list=_columns(column_list, spark),
            except_column_list=_columns(except_column_list, spark),
            scd_type=int(stored_as_scd_type),
            track_history_column_list=_columns(track_history_column_list, spark),
            track_history_except_column_list=_columns(track_history_except_column_list, spark),
        )

    def create_auto_cdc_flow(*args, **kwargs):
        # pyspark's own where it can send the call (4.3+); Databricks' meaning everywhere else.
        scd2 = str(kwargs.get("stored_as_scd_type", 1)) == "2"
        if sdp_auto_cdc is not None and not (scd2 and not _protocol_has_scd2()):
            return sdp_auto_cdc(*args, **kwargs)
        return auto_cdc(*args, **kwargs)

    def read(name):
        return spark.read.table(_live(name))

    def read_stream(name):
        return spark.readStream.table(_live(name))

    def append_flow(target, name=None, spark_conf=None, comment=None, once=False):
        if once:
            raise ValueError("`once=True` of append_flow: write the flow as `INSERT INTO ONCE` in SQL")
        if comment is not None:
            _note("`comment` of a flow is not kept")
        register = dp.append_flow(target=target, name=name, spark_conf=spark_conf)

        def outer(func):
            if _expectations_of(func):
                raise ValueError(f"expectations belong to a dataset: declare them on `{target}`")
            register(func)
            return func

        return outer

    for attr, value in (
        ("table", table),
        ("materialized_view", materialized_view),
        ("temporary_view", temporary_view),
        ("create_streaming_table", create_streaming_table),
        ("create_auto_cdc_flow", create_auto_cdc_flow),
    ):
        setattr(dp, attr, value)
    for action in ACTIONS:
        setattr(dp, action, _expect(ACTIONS[action]))
        setattr(dp, action.replace("expect", "expect_all"), _expect_all(ACTIONS[action]))

    dlt = types.ModuleType("dlt")
    dlt.__doc__ = "Databricks' pipeline API, over pyspark.pipelines"
    members = dict(
        table=table,
        materialized_view=materialized_view,
        view=temporary_view,
        temporary_view=temporary_view,
        read=read,
        read_stream=read_stream,
        create_streaming_table=create_streaming_table,
        create_target_table=create_streaming_table,
        create_streaming_live_table=create_streaming_table,
        apply_changes=auto_cdc,
        create_auto_cdc_flow=auto_cdc,
        append_flow=append_flow,
        create_sink=dp.create_sink,
    )
    for action in ACTIONS:
        members[action] = _expect(ACTIONS[action])
        members[action.replace("expect", "expect_all")] = _expect_all(ACTIONS[action])
    for key, value in members.items():
        setattr(dlt, key, value)
    sys.modules["dlt"] = dlt
    # Databricks gives every definition file a `spark`; pyspark's runner gives none.
    builtins.spark = spark


def _live(name):
    """`LIVE.x` is DLT's spelling of the pipeline's own `x`."""
    return name[5:] if name[:5].lower() == "live." else name


def _ignored(key, value, kind):
    if key in ("temporary", "private") and value:
        _note(f"`{key}=True` of `{kind}`: the table is written to the pipeline's storage like any other")
    elif key == "path":
        _note(f"`path` of `{kind}` has no meaning here: the table lives in the pipeline's storage")
    elif value is not None:
        raise TypeError(f"{kind}() got an argument it does not take here: `{key}`")


def _protocol_has_scd2():
    try:
        from pyspark.sql.connect.proto import pipelines_pb2

        return "SCD_TYPE_2" in pipelines_pb2.PipelineCommand.DefineFlow.ScdType.keys()
    except (ImportError, AttributeError):
        return False
