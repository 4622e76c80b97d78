"""gen_changes.py OUT BATCH: customer changes as JSON lines; batches 0, 1 and 2 land in separate runs.

Each change is (seq, id, op, name, city, email). Sequence order differs from arrival order:
- batch 1 has a change of customer 1 older than the one applied in run 1 (ignored by the
  current-state tables; it splits customer 1's history), a delete of customer 2 and a change of
  customer 2 older than that delete (it must not bring customer 2 back), an email-only change of
  customer 3 (its current version is updated in place) and a change with a NULL city;
- batch 2 brings customer 2 back with a change newer than the delete, has a change of customer 3
  that falls between two of its versions, deletes customer 5 and changes customer 4's city.
"""
import json, os, sys

BATCHES = {
    0: [
        (1, 1, "UPSERT", "Ann", "Oslo", "ann@a.no"),
        (2, 2, "UPSERT", "Bob", "Bergen", "bob@b.no"),
        (3, 3, "UPSERT", "Cy", "Tromsø", "cy@c.no"),
        (4, 4, "UPSERT", "Di", "Oslo", "di@d.no"),
        (5, 5, "UPSERT", "Ed", "Bodø", "ed@e.no"),
        (7, 1, "UPSERT", "Ann", "Bergen", "ann@a.no"),
        (8, 3, "UPSERT", "Cy", "Oslo", "cy@c.no"),
        (9, 1, "UPSERT", "Ann", "Bergen", "ann@new.no"),
    ],
    1: [
        (6, 1, "UPSERT", "Anne", "Oslo", "ann@a.no"),
        (12, 2, "DELETE", None, None, None),
        (10, 2, "UPSERT", "Bobby", "Bergen", "bob@b.no"),
        (13, 3, "UPSERT", "Cy", "Oslo", "cy@new.no"),
        (14, 4, "UPSERT", "Di", None, "di@new.no"),
        (15, 6, "UPSERT", "Fay", "Hamar", "fay@f.no"),
    ],
    2: [
        (18, 2, "UPSERT", "Bob", "Molde", "bob@b.no"),
        (11, 3, "UPSERT", "Cyrus", "Oslo", "cy@c.no"),
        (16, 5, "DELETE", None, None, None),
        (17, 4, "UPSERT", "Di", "Narvik", None),
        (19, 6, "UPSERT", "Fay", "Hamar", "fay@new.no"),
    ],
}

if __name__ == "__main__":
    out, b = sys.argv[1], int(sys.argv[2])
    os.makedirs(f"{out}/changes/batch{b}", exist_ok=True)
    with open(f"{out}/changes/batch{b}/part-0.json", "w") as f:
        for seq, cid, op, name, city, email in BATCHES[b]:
            f.write(json.dumps({"seq": seq, "id": cid, "op": op, "name": name, "city": city,
                                "email": email}, ensure_ascii=False) + "\n")
