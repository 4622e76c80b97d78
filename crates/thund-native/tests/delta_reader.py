"""A Delta table reader written from the protocol alone, for tables with deletion vectors: replays
the JSON commits of `_delta_log` (adds and removes keyed by path and deletion vector), reads each
live file with pyarrow, drops the rows its deletion vector names, and prints the rows as JSON
lines. Shares no code with delta-rs.

    python delta_reader.py <table folder>
    python delta_reader.py --from-checkpoint <table folder>

With `--from-checkpoint` the live files are those of the checkpoint `_delta_log/_last_checkpoint`
names (a single-part parquet file of actions), then the commits after it, as a reader that
trusts the checkpoint would see them; the commits before it are not read.
"""
import json
import os
import struct
import sys
import uuid
import zlib

import pyarrow.parquet as pq
from pyroaring import BitMap

Z85 = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"
MAGIC = 1681511377


def z85_decode(text):
    out = bytearray()
    for i in range(0, len(text), 5):
        value = 0
        for c in text[i:i + 5]:
            value = value * 85 + Z85.index(c)
        out += value.to_bytes(4, "big")
    return bytes(out)


def treemap(data):
    """A RoaringBitmapArray: magic, count, then (high 32 bits, 32-bit portable bitmap) pairs."""
    (magic,) = struct.unpack_from("<I", data, 0)
    assert magic == MAGIC, f"bad magic {magic}"
    (count,) = struct.unpack_from("<Q", data, 4)
    at, rows = 12, set()
    # Rows of one file fit in 32 bits: one bitmap (where it ends would need a second parser).
    assert count <= 1, f"{count} bitmaps"
    for _ in range(count):
        (high,) = struct.unpack_from("<I", data, at)
        at += 4
        bitmap = BitMap.deserialize(data[at:])
        rows.update((high << 32) | low for low in bitmap)
    return rows


def deleted_rows(table, dv):
    kind = dv["storageType"]
    if kind == "i":
        return treemap(z85_decode(dv["pathOrInlineDv"]))
    assert kind == "u", f"storage type {kind}"
    encoded = dv["pathOrInlineDv"]
    prefix, ident = encoded[:-20], encoded[-20:]
    name = f"deletion_vector_{uuid.UUID(bytes=z85_decode(ident))}.bin"
    with open(os.path.join(table, prefix, name), "rb") as f:
        blob = f.read()
    offset, size = dv.get("offset", 1), dv["sizeInBytes"]
    (stored,) = struct.unpack_from(">I", blob, offset)
    assert stored == size, (stored, size)
    data = blob[offset + 4: offset + 4 + size]
    (crc,) = struct.unpack_from(">I", blob, offset + 4 + size)
    assert crc == zlib.crc32(data), "checksum"
    rows = treemap(data)
    assert len(rows) == dv["cardinality"], (len(rows), dv["cardinality"])
    return rows


def file_key(a):
    """A file's identity: its path and its vector's id (type, path or data, offset)."""
    dv = a.get("deletionVector")
    return (a["path"], f"{dv['storageType']}{dv['pathOrInlineDv']}@{dv.get('offset')}" if dv else None)


def main(table, from_checkpoint=False):
    log = os.path.join(table, "_delta_log")
    commits = sorted(n for n in os.listdir(log) if n.endswith(".json"))
    assert [int(n[:-5]) for n in commits] == list(range(len(commits))), "a commit file is missing"
    live = {}
    if from_checkpoint:
        with open(os.path.join(log, "_last_checkpoint")) as f:
            version = json.load(f)["version"]
        actions = pq.read_table(os.path.join(log, f"{version:020}.checkpoint.parquet")).to_pylist()
        for action in actions:
            a = action.get("add")
            if a:
                a = {k: v for k, v in a.items() if v is not None}
                live[file_key(a)] = a
        assert live, "the checkpoint has no files"
        commits = [n for n in commits if int(n[:-5]) > version]
    for name in commits:
        with open(os.path.join(log, name)) as f:
            for line in f:
                action = json.loads(line)
                for kind in ("remove", "add"):
                    if kind in action:
                        a = action[kind]
                        if kind == "add":
                            live[file_key(a)] = a
                        else:
                            live.pop(file_key(a), None)
    for add in live.values():
        rows = pq.read_table(os.path.join(table, add["path"])).to_pylist()
        dead = deleted_rows(table, add["deletionVector"]) if add.get("deletionVector") else set()
        for i, row in enumerate(rows):
            if i not in dead:
                print(json.dumps(row, default=str))


if __name__ == "__main__":
    if sys.argv[1] == "--from-checkpoint":
        main(sys.argv[2], from_checkpoint=True)
    else:
        main(sys.argv[1])
