# Loads a pipeline's Python definition files with pyspark's own pipeline code, against the
# loopback Spark Connect endpoint Þund serves for the duration of the load.
#
#   python - URL CATALOG DATABASE ROOT REPORT FILE...
#
# Each file is imported as `spark-pipelines` imports it; its decorators and calls register
# outputs and flows with the endpoint. What goes wrong in a file is written to REPORT as one JSON
# object per line ({"file", "line", "message"}), and the next file is loaded, so every problem is
# reported at once. Exit code 3: pyspark (with its pipelines module) is not installed.
#
# The Databricks API above this driver (`install`) is in place while the files load; what it
# records goes to REPORT too, each object with its "kind".
import json


def main():
    url, catalog, database, root, report_path = sys.argv[1:6]
    files = sys.argv[6:]
    try:
        from pyspark.sql import SparkSession
        from pyspark.pipelines.graph_element_registry import graph_element_registration_context
        from pyspark.pipelines.spark_connect_graph_element_registry import SparkConnectGraphElementRegistry
        from pyspark.pipelines.spark_connect_pipeline import create_dataflow_graph
        from pyspark.pipelines.add_pipeline_analysis_context import add_pipeline_analysis_context
        from pyspark.pipelines.block_session_mutations import block_session_mutations
    except ImportError as e:
        sys.stderr.write(f"{e}\n")
        sys.exit(3)
    import importlib.util

    problems = []
    spark = SparkSession.builder.remote(url).getOrCreate()
    graph_id = create_dataflow_graph(spark, default_catalog=catalog, default_database=database, sql_conf=None)
    registry = SparkConnectGraphElementRegistry(spark, graph_id)
    install(spark)
    os.chdir(root)
    with graph_element_registration_context(registry):
        for path in files:
            full = os.path.join(root, path)
            name = os.path.splitext(os.path.basename(path))[0]
            try:
                spec = importlib.util.spec_from_file_location(name, full)
                module = importlib.util.module_from_spec(spec)
                with add_pipeline_analysis_context(spark=spark, dataflow_graph_id=graph_id, flow_name=None):
                    with block_session_mutations():
                        spec.loader.exec_module(module)
            except SyntaxError as e:
                problems.append({"file": path, "line": e.lineno or 1, "message": f"SyntaxError: {e.msg}"})
            except BaseException as e:  # noqa: BLE001 - every failure is the user's to see
                line = 1
                for frame in traceback.extract_tb(e.__traceback__):
                    if os.path.abspath(frame.filename) == os.path.abspath(full):
                        line = frame.lineno or line
                message = str(e).strip() or type(e).__name__
                problems.append({"file": path, "line": line, "message": f"{type(e).__name__}: {message}"})
    with open(report_path, "w") as report:
        for p in problems:
            report.write(json.dumps(p) + "\n")
        for r in RECORDS:
            full = os.path.abspath(r["file"])
            if full.startswith(os.path.abspath(root) + os.sep):
                r["file"] = os.path.relpath(full, root)
            report.write(json.dumps(r) + "\n")
    sys.stdout.flush()
    # pyspark's channel threads can outlive the interpreter's teardown; nothing is left to do.
    os._exit(0)


main()
