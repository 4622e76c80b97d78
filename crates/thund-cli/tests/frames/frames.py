# Generated DataFrame programs, the Python half of the `spark_frames` test.
#
#   python frames.py generate FIRST_SEED COUNT DIR   writes a pipeline project into DIR
#   python frames.py spark URL DIR OUT                runs DIR's programs on Spark into OUT
#
# `generate` writes seeded random input tables, one set per block of 100 seeds (as SQL both
# sides run, and as CSV and JSON files for the readers), and one Python definition file per
# seed: a materialized view whose query function is a random DataFrame program that composes
# what users write — joins with `on` as a string, a list or a Column and every `how`, `drop` by
# name and by column, `withColumn(s)` and `withColumnRenamed` after joins, `orderBy` + `limit`,
# `union` / `unionByName`, set operations, `groupBy().agg` with pyspark's result names, window
# functions, `selectExpr`, `na.fill`, and the readers with their options. `programs.json` lists each program's body.
#
# `spark` runs each body with pyspark against a Spark Connect server, the input tables being
# temporary views of the same SQL, and writes its result as an Arrow IPC file (OUT/NAME.arrow) or
# Spark's error (OUT/NAME.err): the oracle the native run of the same project is compared with.
#
# Every program is deterministic: a `limit` sits only on an `orderBy` of every column, a window
# that depends on the order of rows orders by every column, and only whole-row `dropDuplicates`.
import json
import os
import random
import sys

TYPES = {
    "int": "INT",
    "bigint": "BIGINT",
    "double": "DOUBLE",
    "decimal": "DECIMAL(10,2)",
    "string": "STRING",
    "boolean": "BOOLEAN",
    "date": "DATE",
}
NUMERIC = ("int", "bigint", "double", "decimal")

# The input tables: name -> columns. Names overlap on purpose (joins, unionByName).
TABLES = {
    "a": [("id", "int"), ("k", "string"), ("v", "bigint"), ("x", "double"), ("d", "decimal"), ("dt", "date")],
    "b": [("id", "int"), ("k", "string"), ("w", "int"), ("flag", "boolean")],
    "c": [("id", "bigint"), ("v", "bigint"), ("k", "string"), ("x", "double")],
}


def value(rng, ty):
    if rng.random() < 0.12:
        return None
    if ty == "int":
        return rng.choice([0, 1, 2, 3, 4, -1, 7])
    if ty == "bigint":
        return rng.choice([0, 1, 2, -3, 10, 100, 2**40])
    if ty == "double":
        return rng.choice([0.0, -0.0, 1.5, 2.25, -7.125, 1e10, float("nan"), 3.0])
    if ty == "decimal":
        return rng.choice(["0.00", "1.10", "-2.50", "99999999.99", "3.33", "1.00"])
    if ty == "string":
        return rng.choice(["a", "b", "B", "", "a b", "zz", "1", "é"])
    if ty == "boolean":
        return rng.choice([True, False])
    if ty == "date":
        return rng.choice(["2024-01-01", "2024-02-29", "1999-12-31", "2026-07-13"])
    raise ValueError(ty)


def sql_literal(v, ty):
    if v is None:
        return f"CAST(NULL AS {TYPES[ty]})"
    if ty in ("int",):
        return str(v)
    if ty == "bigint":
        return f"{v}L"
    if ty == "double":
        if v != v:
            return "CAST('NaN' AS DOUBLE)"
        return f"CAST('{v!r}' AS DOUBLE)"
    if ty == "decimal":
        return f"CAST('{v}' AS DECIMAL(10,2))"
    if ty == "string":
        return "'" + v.replace("'", "''") + "'"
    if ty == "boolean":
        return "true" if v else "false"
    if ty == "date":
        return f"DATE'{v}'"
    raise ValueError(ty)


def table_rows(seed):
    rng = random.Random(seed)
    return {name: [[value(rng, ty) for _, ty in cols] for _ in range(rng.randint(3, 9))] for name, cols in TABLES.items()}


def table_sql(name, rows):
    cols = TABLES[name]
    values = ", ".join("(" + ", ".join(sql_literal(v, ty) for v, (_, ty) in zip(r, cols)) + ")" for r in rows)
    names = ", ".join(c for c, _ in cols)
    return f"SELECT * FROM VALUES {values} AS t({names})"


class Frame:
    """A DataFrame being built: the variable holding it and its columns (name, type)."""

    def __init__(self, var, cols):
        self.var = var
        self.cols = list(cols)

    def names(self):
        return [c for c, _ in self.cols]

    def unique(self):
        return len(set(n.lower() for n in self.names())) == len(self.cols)

    def of(self, ty_pred):
        return [(c, t) for c, t in self.unique_cols() if ty_pred(t)]

    def unique_cols(self):
        seen = {}
        for c, t in self.cols:
            seen[c.lower()] = seen.get(c.lower(), 0) + 1
        return [(c, t) for c, t in self.cols if seen[c.lower()] == 1]


class Program:
    def __init__(self, rng, data, block):
        self.rng = rng
        self.data = data
        # The input tables of the seed's block (`a_<block>`, …): a program's tables depend on its
        # seed alone, so one seed reruns as it ran among others.
        self.block = block
        self.lines = []
        self.n = 0

    def table_name(self, name):
        return f"{name}_{self.block}"

    def var(self):
        self.n += 1
        return f"df{self.n}"

    def emit(self, line):
        self.lines.append(line)

    # --- columns and expressions -------------------------------------------------------------
    def col(self, f, name):
        """A column reference in one of pyspark's spellings."""
        # `df.name` is not among them: it analyses the DataFrame, which a pipeline's query
        # function may not (pyspark refuses it there).
        if self.rng.random() < 0.5:
            return f'F.col("{name}")'
        return f'{f.var}["{name}"]'

    def literal(self, ty):
        rng = self.rng
        if ty in ("int", "bigint"):
            return str(rng.choice([0, 1, 2, 5, -1]))
        if ty == "double":
            return rng.choice(["1.5", "0.0", "2.0"])
        if ty == "decimal":
            return rng.choice(['F.lit(1).cast("decimal(10,2)")', "1", "2.5"])
        if ty == "string":
            return rng.choice(['"a"', '"b"', '""', '"zz"'])
        if ty == "boolean":
            return rng.choice(["True", "False"])
        if ty == "date":
            return 'F.lit("2024-01-01").cast("date")'
        raise ValueError(ty)

    def condition(self, f):
        rng = self.rng
        cols = f.unique_cols()
        name, ty = rng.choice(cols)
        c = self.col(f, name)
        r = rng.random()
        if r < 0.12:
            cond = f"{c}.isNull()"
        elif r < 0.22:
            cond = f"{c}.isNotNull()"
        elif r < 0.32 and ty in NUMERIC:
            cond = f"{c}.between(0, 3)"
        elif r < 0.42 and ty in ("int", "bigint", "string"):
            items = ", ".join(self.literal(ty) for _ in range(rng.randint(1, 3)))
            cond = f"{c}.isin({items})"
        elif r < 0.5 and ty == "string":
            cond = rng.choice([f'{c}.like("a%")', f'{c}.startswith("a")', f'{c}.contains("b")'])
        elif r < 0.56:
            # A SQL string, as `df.filter("…")` takes.
            ops = {"string": "= 'a'", "boolean": "= true", "date": "> DATE'2000-01-01'"}
            return f'"{name} {ops.get(ty, "> 1")}"'
        else:
            op = rng.choice(["==", "!=", ">", "<", ">=", "<="])
            cond = f"({c} {op} {self.literal(ty)})"
        if rng.random() < 0.2:
            cond = f"~({cond})"
        if rng.random() < 0.2:
            other = self.condition(f)
            if not other.startswith('"'):
                cond = f"({cond}) {rng.choice(['&', '|'])} ({other})"
        return cond

    def expression(self, f):
        """A new column's expression and its type."""
        rng = self.rng
        name, ty = rng.choice(f.unique_cols())
        c = self.col(f, name)
        nums = f.of(lambda t: t in NUMERIC)
        r = rng.random()
        if ty in NUMERIC and r < 0.3:
            op = rng.choice(["+", "-", "*", "/", "%"])
            other = rng.choice([self.literal(ty)] + [self.col(f, n) for n, _ in nums])
            if op in ("/", "%"):
                # By a number that is never zero: where Spark evaluates a division on rows the
                # embedded engine's plan has filtered out already, Spark fails and the engine
                # answers — the query generator's class of errors on rows not evaluated.
                other = rng.choice(["2", "-4", "F.lit(3)"])
            out = "double" if op == "/" and ty != "decimal" else ty
            return f"({c} {op} {other})", out
        if ty in NUMERIC and r < 0.4:
            return rng.choice([(f"F.abs({c})", ty), (f"F.round({c}, 1)", ty), (f"F.negate({c})", ty)])
        if ty == "string" and r < 0.4:
            return rng.choice(
                [
                    (f"F.upper({c})", "string"),
                    (f'F.concat({c}, F.lit("-"), {c})', "string"),
                    (f"F.length({c})", "int"),
                    (f"F.substring({c}, 1, 1)", "string"),
                    (f'F.concat_ws("/", {c}, F.lit("x"))', "string"),
                ]
            )
        if r < 0.55:
            return f"F.coalesce({c}, {self.lit_col(ty)})", ty
        if r < 0.7:
            return f"F.when({self.condition_column(f)}, {c}).otherwise({self.lit_col(ty)})", ty
        if r < 0.8:
            # Casts that hold every value (a narrowing cast fails on Spark for rows the engine's
            # plan may not evaluate, as a division by zero does).
            target = rng.choice(["string", "double", "decimal(30,3)", "bigint"])
            out = {"decimal(30,3)": "decimal"}.get(target, target)
            if ty in ("date", "boolean", "string") and target != "string":
                target, out = "string", "string"
            # A NaN or a too-large DOUBLE cast to BIGINT fails in ANSI mode, on rows Spark may
            # evaluate where a later `limit(0)` or join left them out natively (or the reverse):
            # whether both fail depends on each engine's order of evaluation, not on answers.
            if ty in ("double", "decimal") and target == "bigint":
                target, out = "double", "double"
            return f'{c}.cast("{target}")', out
        if r < 0.9:
            return self.condition_column(f), "boolean"
        return self.lit_col(ty), ty

    def lit_col(self, ty):
        lit = self.literal(ty)
        return lit if lit.startswith("F.") else f"F.lit({lit})"

    def condition_column(self, f):
        cond = self.condition(f)
        if cond.startswith('"'):
            return f"F.expr({cond})"
        return cond

    # --- sources ---------------------------------------------------------------------------
    def source(self):
        rng = self.rng
        v = self.var()
        r = rng.random()
        if r < 0.8:
            name = rng.choice(list(TABLES))
            self.emit(f'{v} = spark.read.table("{self.table_name(name)}")')
            return Frame(v, TABLES[name])
        name = "a"
        cols = TABLES[name]
        kind = rng.choice(["csv_header", "csv_infer", "csv_plain", "csv_schema", "json", "format_csv"])
        path = f'DATA + "/b{self.block}/{name}'
        if kind == "csv_header":
            self.emit(f'{v} = spark.read.option("header", "true").csv({path}.csv")')
            return Frame(v, [(c, "string") for c, _ in cols])
        if kind == "csv_infer":
            self.emit(f'{v} = spark.read.csv({path}.csv", header=True, inferSchema=True)')
            # Types as inferred: the test judges them; the generator only needs names.
            return Frame(v, [(c, "string") for c, _ in cols])
        if kind == "csv_plain":
            self.emit(f'{v} = spark.read.csv({path}_raw.csv")')
            return Frame(v, [(f"_c{i}", "string") for i in range(len(cols))])
        if kind == "csv_schema":
            ddl = ", ".join(f"{c} {TYPES[t]}" for c, t in cols)
            self.emit(f'{v} = spark.read.schema("{ddl}").option("header", True).csv({path}.csv")')
            return Frame(v, cols)
        if kind == "format_csv":
            self.emit(f'{v} = spark.read.format("csv").option("header", "true").load({path}.csv")')
            return Frame(v, [(c, "string") for c, _ in cols])
        self.emit(f'{v} = spark.read.json({path}.json")')
        # JSON infers: integers as BIGINT, numbers as DOUBLE, and orders columns by name.
        json_ty = {"int": "bigint", "decimal": "double", "date": "string"}
        return Frame(v, sorted(((c, json_ty.get(t, t)) for c, t in cols), key=lambda c: c[0]))

    # --- operations ------------------------------------------------------------------------
    def step(self, f):
        rng = self.rng
        ops = [
            (self.filter, 12),
            (self.select, 10),
            (self.with_column, 12),
            (self.rename, 5),
            (self.drop, 6),
            (self.join, 16),
            (self.aggregate, 10),
            (self.order_limit, 8),
            (self.distinct, 4),
            (self.union, 8),
            (self.window, 6),
            (self.select_expr, 4),
            (self.fill, 3),
        ]
        total = sum(w for _, w in ops)
        pick = rng.uniform(0, total)
        for op, w in ops:
            pick -= w
            if pick <= 0:
                return op(f)
        return ops[0][0](f)

    def filter(self, f):
        v = self.var()
        verb = self.rng.choice(["filter", "where"])
        self.emit(f"{v} = {f.var}.{verb}({self.condition(f)})")
        return Frame(v, f.cols)

    def select(self, f):
        rng = self.rng
        v = self.var()
        cols = f.unique_cols()
        picked = rng.sample(cols, rng.randint(1, len(cols)))
        items, out = [], []
        for name, ty in picked:
            if rng.random() < 0.3:
                items.append(f'"{name}"')
            else:
                items.append(self.col(f, name))
            out.append((name, ty))
        if rng.random() < 0.5:
            e, ty = self.expression(f)
            alias = rng.choice(["e1", "e2", "K"])
            if alias.lower() not in (n.lower() for n, _ in out):
                items.append(f'({e}).alias("{alias}")')
                out.append((alias, ty))
        self.emit(f"{v} = {f.var}.select({', '.join(items)})")
        return Frame(v, out)

    def with_column(self, f):
        rng = self.rng
        v = self.var()
        existing = [n for n, _ in f.unique_cols()]
        if rng.random() < 0.25:
            pairs = []
            for _ in range(rng.randint(1, 3)):
                e, ty = self.expression(f)
                name = rng.choice(existing + ["n1", "n2"])
                if name not in (p[0] for p in pairs):
                    pairs.append((name, e, ty))
            body = ", ".join(f'"{n}": {e}' for n, e, _ in pairs)
            self.emit(f"{v} = {f.var}.withColumns({{{body}}})")
        else:
            e, ty = self.expression(f)
            name = rng.choice(existing + ["n1", "n1", "N1"])
            pairs = [(name, e, ty)]
            self.emit(f'{v} = {f.var}.withColumn("{name}", {e})')
        cols = list(f.cols)
        for name, _, ty in pairs:
            at = [i for i, (c, _) in enumerate(cols) if c.lower() == name.lower()]
            if at:
                for i in at:
                    cols[i] = (cols[i][0], ty)
            else:
                cols.append((name, ty))
        return Frame(v, cols)

    def rename(self, f):
        rng = self.rng
        v = self.var()
        old, _ = rng.choice(f.cols)
        new = rng.choice(["r1", "renamed", old.upper()])
        if new.lower() != old.lower() and new.lower() in (c.lower() for c in f.names()):
            new = old + "_2"
        if rng.random() < 0.15:
            old = "missing"
        self.emit(f'{v} = {f.var}.withColumnRenamed("{old}", "{new}")')
        return Frame(v, [(new if c == old else c, t) for c, t in f.cols])

    def drop(self, f):
        rng = self.rng
        v = self.var()
        if len(f.cols) < 2:
            return self.filter(f)
        name, _ = rng.choice(f.cols)
        r = rng.random()
        if r < 0.5:
            self.emit(f'{v} = {f.var}.drop("{name}")')
            return Frame(v, [(c, t) for c, t in f.cols if c.lower() != name.lower()])
        if r < 0.85 and name in f.names():
            self.emit(f'{v} = {f.var}.drop({f.var}["{name}"])')
            return Frame(v, [(c, t) for c, t in f.cols if c.lower() != name.lower()])
        self.emit(f'{v} = {f.var}.drop("no_such_column")')
        return Frame(v, f.cols)

    def join(self, f):
        rng = self.rng
        if not f.unique():
            return self.filter(f)
        other = self.source() if rng.random() < 0.3 else self.table()
        v = self.var()
        how = rng.choice(["inner", "left", "right", "full", "outer", "left_outer", "right_outer", "left_semi", "left_anti", "cross"])
        shared = [n for n in f.names() if n.lower() in (m.lower() for m in other.names())]
        left_names = {n.lower() for n in f.names()}
        r = rng.random()
        if how == "cross":
            how_arg = rng.choice(['"cross"', None])
            cond = None
            if how_arg is None:
                self.emit(f"{v} = {f.var}.crossJoin({other.var})")
            else:
                self.emit(f"{v} = {f.var}.join({other.var}, how={how_arg})")
            return self.after_condition_join(v, f, other, how)
        if shared and r < 0.55:
            keys = rng.sample(shared, rng.randint(1, min(2, len(shared))))
            key_types = {k: dict(f.cols)[k] for k in keys}
            if len(keys) == 1 and rng.random() < 0.5:
                on = f'"{keys[0]}"'
            else:
                on = "[" + ", ".join(f'"{k}"' for k in keys) + "]"
            self.emit(f'{v} = {f.var}.join({other.var}, {on}, "{how}")')
            if how in ("left_semi", "left_anti"):
                return Frame(v, f.cols)
            cols = [(k, key_types[k]) for k in keys]
            cols += [(c, t) for c, t in f.cols if c not in keys]
            cols += [(c, t) for c, t in other.cols if c not in keys]
            out = Frame(v, cols)
            return self.resolve(out, f, other)
        lk = rng.choice(f.unique_cols())
        rk = rng.choice(other.cols)
        cond = f'{f.var}["{lk[0]}"] == {other.var}["{rk[0]}"]'
        if rng.random() < 0.3:
            cond = f"({cond}) & ({other.var}['{rk[0]}'].isNotNull())"
        self.emit(f'{v} = {f.var}.join({other.var}, {cond}, "{how}")')
        if how in ("left_semi", "left_anti"):
            return Frame(v, f.cols)
        return self.after_condition_join(v, f, other, how)

    def table(self):
        name = self.rng.choice(list(TABLES))
        v = self.var()
        self.emit(f'{v} = spark.read.table("{self.table_name(name)}")')
        return Frame(v, TABLES[name])

    def after_condition_join(self, v, f, other, how):
        out = Frame(v, f.cols + other.cols)
        return self.resolve(out, f, other)

    def resolve(self, out, left, right):
        """Columns of both sides under one name: dropped from one side by column, or selected."""
        if out.unique():
            return out
        rng = self.rng
        dups = sorted({c.lower() for c, _ in out.cols if sum(1 for d, _ in out.cols if d.lower() == c.lower()) > 1})
        v = self.var()
        if rng.random() < 0.6:
            # The left side's columns come first: dropping the right's keeps each name's first.
            side, keep_first = (right, True) if rng.random() < 0.7 else (left, False)
            dropped = ", ".join(f'{side.var}["{c}"]' for c in dups)
            self.emit(f"{v} = {out.var}.drop({dropped})")
            cols = out.cols if keep_first else list(reversed(out.cols))
            seen, result = set(), []
            for c, t in cols:
                if c.lower() in dups and c.lower() in seen:
                    continue
                seen.add(c.lower())
                result.append((c, t))
            return Frame(v, result if keep_first else list(reversed(result)))
        items, cols, taken = [], [], set()
        for src, (c, t) in [(left, x) for x in left.cols] + [(right, x) for x in right.cols]:
            if c.lower() in dups:
                alias = f"{c}_{'l' if src is left else 'r'}"
                while alias.lower() in taken or alias.lower() in (n.lower() for n in out.names()):
                    alias += "_"
                taken.add(alias.lower())
                items.append(f'{src.var}["{c}"].alias("{alias}")')
                cols.append((alias, t))
            elif c.lower() not in taken:
                taken.add(c.lower())
                items.append(f'{src.var}["{c}"]')
                cols.append((c, t))
        self.emit(f"{v} = {out.var}.select({', '.join(items)})")
        return Frame(v, cols)

    def aggregate(self, f):
        rng = self.rng
        v = self.var()
        cols = f.unique_cols()
        keys = rng.sample(cols, rng.randint(0, min(2, len(cols))))
        key_text = ", ".join(f'"{k}"' if rng.random() < 0.6 else self.col(f, k) for k, _ in keys)
        nums = [c for c in cols if c[1] in NUMERIC and c not in keys]
        r = rng.random()
        if r < 0.15:
            self.emit(f"{v} = {f.var}.groupBy({key_text}).count()")
            return Frame(v, keys + [("count", "bigint")])
        # (`groupBy().sum("x")` and its kin analyse the DataFrame, which pyspark refuses in a
        # pipeline's query function.)
        if r < 0.25 and nums:
            n, t = rng.choice(nums)
            fn = rng.choice(["sum", "max", "avg", "count"])
            self.emit(f'{v} = {f.var}.groupBy({key_text}).agg({{"{n}": "{fn}"}})')
            return Frame(v, keys + [(f"{fn}({n})", agg_type(fn, t))])
        aggs, out = [], []
        for _ in range(rng.randint(1, 3)):
            name, ty = rng.choice(cols)
            options = [("count", "bigint"), ("max", ty), ("min", ty), ("countDistinct", "bigint"), ("count_star", "bigint")]
            if ty in NUMERIC:
                options += [("sum", agg_type("sum", ty)), ("avg", agg_type("avg", ty)), ("sum_distinct", agg_type("sum", ty))]
            if ty in ("double", "int", "bigint"):
                options += [("stddev", "double")]
            fn, out_ty = rng.choice(options)
            c = self.col(f, name) if rng.random() < 0.5 else f'"{name}"'
            call = {
                "count_star": 'F.count("*")',
                "countDistinct": f"F.countDistinct({c})",
                "sum_distinct": f"F.sum_distinct({c})",
            }.get(fn, f"F.{fn}({c})")
            alias = None
            if rng.random() < 0.5:
                alias = f"m{len(aggs)}"
                call = f'{call}.alias("{alias}")'
            if alias is None:
                # pyspark's names: F.count("*") is `count(1)`; the rest name their column.
                alias = {
                    "count_star": "count(1)",
                    "countDistinct": f"count(DISTINCT {name})",
                    "sum_distinct": f"sum(DISTINCT {name})",
                    "stddev": f"stddev({name})",
                }.get(fn, f"{fn}({name})")
            if alias.lower() in (n.lower() for n, _ in keys + out):
                continue
            aggs.append(call)
            out.append((alias, out_ty))
        if not aggs:
            aggs, out = ['F.count("*").alias("n")'], [("n", "bigint")]
        self.emit(f"{v} = {f.var}.groupBy({key_text}).agg({', '.join(aggs)})")
        return Frame(v, keys + out)

    def order_limit(self, f):
        rng = self.rng
        v = self.var()
        if not f.unique():
            return self.filter(f)
        cols = list(f.cols)
        rng.shuffle(cols)
        orders = []
        for name, _ in cols:
            c = self.col(f, name)
            orders.append(rng.choice([c, f"{c}.desc()", f"{c}.asc_nulls_last()", f"{c}.desc_nulls_first()", f'"{name}"']))
        n = rng.choice([0, 1, 2, 3, 5])
        verb = rng.choice(["orderBy", "sort"])
        self.emit(f"{v} = {f.var}.{verb}({', '.join(orders)}).limit({n})")
        return Frame(v, f.cols)

    def distinct(self, f):
        v = self.var()
        self.emit(f"{v} = {f.var}.{self.rng.choice(['distinct()', 'dropDuplicates()'])}")
        return Frame(v, f.cols)

    def union(self, f):
        rng = self.rng
        kind = rng.choice(["union", "unionAll", "unionByName", "unionByName_missing", "intersect", "subtract", "exceptAll", "intersectAll"])
        if kind == "unionByName_missing":
            other = self.table()
        elif kind == "unionByName":
            # Mostly the same columns in another order; sometimes other columns, which Spark
            # fails without allowMissingColumns.
            other = self.reshaped(f) if rng.random() < 0.8 else self.table()
        else:
            # A table of as many columns, or the frame itself filtered.
            same = [t for t, cols in TABLES.items() if len(cols) == len(f.cols)]
            if same and rng.random() < 0.4:
                other = Frame(self.var(), TABLES[rng.choice(same)])
                table = [t for t in same if TABLES[t] == other.cols][0]
                self.emit(f'{other.var} = spark.read.table("{self.table_name(table)}")')
            else:
                other = Frame(self.var(), f.cols)
                self.emit(f"{other.var} = {f.var}.filter({self.condition(f)})")
        v = self.var()
        if kind == "unionByName_missing":
            self.emit(f"{v} = {f.var}.unionByName({other.var}, allowMissingColumns=True)")
            names = [c.lower() for c, _ in f.cols]
            return Frame(v, list(f.cols) + [(c, t) for c, t in other.cols if c.lower() not in names])
        self.emit(f"{v} = {f.var}.{kind}({other.var})")
        return Frame(v, f.cols)

    def reshaped(self, f):
        """The same frame with its columns in another order (what unionByName is for)."""
        v = self.var()
        cols = list(f.cols)
        self.rng.shuffle(cols)
        self.emit(f"{v} = {f.var}.select({', '.join(repr(c) for c, _ in cols)})")
        return Frame(v, cols)

    def window(self, f):
        rng = self.rng
        v = self.var()
        if not f.unique():
            return self.filter(f)
        cols = f.unique_cols()
        part = rng.sample(cols, rng.randint(0, min(2, len(cols))))
        order = list(cols)
        rng.shuffle(order)
        spec = "Window"
        if part:
            spec += ".partitionBy(" + ", ".join(f'"{c}"' for c, _ in part) + ")"
        nums = [c for c in cols if c[1] in NUMERIC]
        r = rng.random()
        ordered = spec + ".orderBy(" + ", ".join(f'F.col("{c}")' + rng.choice(["", ".desc()"]) for c, _ in order) + ")"
        if r < 0.3:
            fn, ty = rng.choice([("F.row_number()", "int"), ("F.rank()", "int"), ("F.dense_rank()", "int")])
            e = f"{fn}.over({ordered})"
        elif r < 0.5 and nums:
            n, t = rng.choice(nums)
            e, ty = f'F.lag("{n}", 1).over({ordered})', t
        elif nums:
            n, t = rng.choice(nums)
            fn = rng.choice(["sum", "max", "avg", "count"])
            w = spec if rng.random() < 0.5 else ordered + ".rowsBetween(Window.unboundedPreceding, Window.currentRow)"
            if spec == "Window" and w == spec:
                w = "Window.partitionBy()"
            e, ty = f'F.{fn}("{n}").over({w})', agg_type(fn, t)
        else:
            e, ty = f"F.row_number().over({ordered})", "int"
        name = rng.choice(["rn", "wv"])
        self.emit(f'{v} = {f.var}.withColumn("{name}", {e})')
        return Frame(v, [(c, t) for c, t in f.cols if c != name] + [(name, ty)])

    def select_expr(self, f):
        rng = self.rng
        v = self.var()
        cols = f.unique_cols()
        name, ty = rng.choice(cols)
        items = [f'"{c}"' for c, _ in cols if c != name]
        u = "u"
        while u in (c.lower() for c, _ in cols if c != name):
            u += "_"
        e = {"string": f"upper({name})", "boolean": f"NOT {name}", "date": f"date_add({name}, 1)"}.get(ty, f"{name} * 2")
        items.append(f'"{e} AS {u}"')
        self.emit(f"{v} = {f.var}.selectExpr({', '.join(items)})")
        out = [(c, t) for c, t in cols if c != name]
        return Frame(v, out + [(u, ty)])

    def fill(self, f):
        rng = self.rng
        v = self.var()
        r = rng.random()
        if r < 0.35:
            self.emit(f"{v} = {f.var}.na.fill(0)")
        elif r < 0.55:
            self.emit(f'{v} = {f.var}.fillna("?")')
        elif r < 0.8:
            self.emit(f"{v} = {f.var}.na.drop()")
        else:
            name = rng.choice(f.names())
            self.emit(f'{v} = {f.var}.dropna(subset=["{name}"])')
        return Frame(v, f.cols)


def agg_type(fn, ty):
    if fn in ("count", "countDistinct"):
        return "bigint"
    if fn in ("avg", "mean", "stddev"):
        return "decimal" if ty == "decimal" and fn != "stddev" else "double"
    if fn == "sum":
        return {"int": "bigint"}.get(ty, ty)
    return ty


# Seeds that share input tables.
BLOCK = 100


def program(seed, data):
    rng = random.Random(seed * 7919 + 17)
    p = Program(rng, data, seed // BLOCK)
    f = p.source()
    for _ in range(rng.randint(1, 4)):
        f = p.step(f)
    # pyspark names an aggregate `count(x)`, which a Delta table does not take as a column name:
    # renamed by that name, as a user would (a name computed otherwise renames nothing).
    for c, _ in f.cols:
        if any(ch in c for ch in " ,;{}()=\n\t"):
            v = p.var()
            p.emit(f'{v} = {f.var}.withColumnRenamed("{c}", "{"".join(ch if ch.isalnum() else "_" for ch in c)}")')
            f = Frame(v, f.cols)
    p.emit(f"return {f.var}")
    return p.lines


HEADER = """from pyspark import pipelines as dp
from pyspark.sql import SparkSession, Window
from pyspark.sql import functions as F

spark = SparkSession.active()
DATA = {data!r}

"""


def write_data(root, rows, block):
    import csv

    folder = os.path.join(root, "data", f"b{block}")
    os.makedirs(folder, exist_ok=True)
    cols = TABLES["a"]

    def text(v, ty):
        if v is None:
            return ""
        if ty == "double":
            return "NaN" if v != v else repr(v)
        if ty == "boolean":
            return "true" if v else "false"
        return str(v)

    for name, header in (("a.csv", True), ("a_raw.csv", False)):
        with open(os.path.join(folder, name), "w", newline="") as out:
            w = csv.writer(out)
            if header:
                w.writerow([c for c, _ in cols])
            for r in rows["a"]:
                w.writerow([text(v, ty) for v, (_, ty) in zip(r, cols)])
    with open(os.path.join(folder, "a.json"), "w") as out:
        for r in rows["a"]:
            obj = {}
            for v, (c, ty) in zip(r, cols):
                if v is None or (ty == "double" and v != v):
                    continue
                obj[c] = float(v) if ty == "decimal" else v
            out.write(json.dumps(obj) + "\n")


def generate(first, count, root):
    data = os.path.join(os.path.abspath(root), "data")
    tables = {}
    for block in sorted({seed // BLOCK for seed in range(first, first + count)}):
        rows = table_rows(block)
        write_data(root, rows, block)
        tables.update({f"{name}_{block}": table_sql(name, r) for name, r in rows.items()})
    os.makedirs(os.path.join(root, "transformations"), exist_ok=True)
    with open(os.path.join(root, "transformations", "inputs.sql"), "w") as out:
        for name, sql in tables.items():
            out.write(f"CREATE MATERIALIZED VIEW {name} AS {sql};\n\n")
    programs = []
    for seed in range(first, first + count):
        name = f"p{seed}"
        body = program(seed, data)
        text = HEADER.format(data=data)
        text += f'@dp.materialized_view(name="{name}")\ndef {name}():\n'
        text += "".join(f"    {line}\n" for line in body)
        with open(os.path.join(root, "transformations", f"{name}.py"), "w") as out:
            out.write(text)
        programs.append({"name": name, "seed": seed, "body": body})
    with open(os.path.join(root, "programs.json"), "w") as out:
        json.dump({"data": data, "tables": tables, "programs": programs}, out, indent=1)


def on_spark(url, root, out_dir):
    import pyarrow as pa
    from pyspark.sql import SparkSession, Window
    from pyspark.sql import functions as F

    import logging

    # pyspark logs each failed query's plan and stack; the error itself is what is kept.
    logging.disable(logging.CRITICAL)
    with open(os.path.join(root, "programs.json")) as f:
        spec = json.load(f)
    spark = SparkSession.builder.remote(url).getOrCreate()
    for name, sql in spec["tables"].items():
        spark.sql(sql).createOrReplaceTempView(name)
    os.makedirs(out_dir, exist_ok=True)
    for p in spec["programs"]:
        src = "def program():\n" + "".join(f"    {line}\n" for line in p["body"])
        scope = {"spark": spark, "F": F, "Window": Window, "DATA": spec["data"]}
        try:
            exec(src, scope)
            table = scope["program"]().toArrow()
        except Exception as e:  # noqa: BLE001 - Spark's refusal is the oracle's answer
            with open(os.path.join(out_dir, p["name"] + ".err"), "w") as err:
                err.write(f"{type(e).__name__}: {str(e).strip().splitlines()[0][:1000]}")
            continue
        path = os.path.join(out_dir, p["name"] + ".arrow")
        with pa.OSFile(path, "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
            writer.write_table(table)
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    if sys.argv[1] == "generate":
        generate(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4])
    elif sys.argv[1] == "spark":
        on_spark(sys.argv[2], sys.argv[3], sys.argv[4])
    else:
        sys.exit(f"unknown command {sys.argv[1]}")
