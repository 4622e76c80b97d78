#!/usr/bin/env python3
"""Prints, as JSON, every message field (name -> [number, type, proto3 optional]) and enum value of the Spark
Connect protocol shipped in the installed pyspark wheel, keyed by full name. Used by the
protocol drift test to compare our .proto subset with each target Spark version."""
import importlib
import json
import sys

MODULES = ["base", "commands", "relations", "pipelines", "common", "expressions", "types"]


def walk_enum(prefix, e, out):
    out["enums"][f"{prefix}{e.name}"] = {v.name: v.number for v in e.values}


def walk_message(prefix, m, out):
    name = f"{prefix}{m.name}"
    fields = {}
    for f in m.fields:
        kind = f.message_type.full_name if f.message_type else (f.enum_type.full_name if f.enum_type else f.type)
        # A proto3 `optional` scalar lives in a synthetic oneof named after it: its presence is
        # on the wire (an explicit 0 is sent), so ours must say `optional` exactly where theirs does.
        optional = f.containing_oneof is not None and f.containing_oneof.name == "_" + f.name
        fields[f.name] = [f.number, str(kind), optional]
    out["messages"][name] = fields
    for n in m.nested_types:
        walk_message(name + ".", n, out)
    for e in m.enum_types:
        walk_enum(name + ".", e, out)


def main():
    out = {"messages": {}, "enums": {}}
    mods = [importlib.import_module(f"pyspark.sql.connect.proto.{m}_pb2") for m in MODULES]
    mods += [importlib.import_module("google.rpc.status_pb2"), importlib.import_module("google.rpc.error_details_pb2")]
    for mod in mods:
        fd = mod.DESCRIPTOR
        prefix = fd.package + "."
        for m in fd.message_types_by_name.values():
            walk_message(prefix, m, out)
        for e in fd.enum_types_by_name.values():
            walk_enum(prefix, e, out)
    import pyspark
    out["version"] = pyspark.__version__
    json.dump(out, sys.stdout, sort_keys=True)


if __name__ == "__main__":
    main()
