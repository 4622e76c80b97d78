//! Spark's collection functions: arrays (`arrays`: `array_insert`, `sequence`, `arrays_zip`'s
//! names), maps (`maps`: `map_concat`), `element_at` and subscripts (`element_at`), and the
//! spellings and answers of DataFusion's own array and map functions (`rewrites`).

pub(crate) mod arrays;
pub(crate) mod element_at;
pub(crate) mod maps;
pub(crate) mod rewrites;

use crate::declare::Function;

/// Registers the category's functions with `ctx`.
pub(crate) fn register(ctx: &datafusion::prelude::SessionContext) {
    element_at::register(ctx);
    arrays::register(ctx);
    maps::register(ctx);
}

/// Spark's collection functions, as they run here.
pub(crate) const FUNCTIONS: &[Function] = &[
    // Spark's empty map; DataFusion's `map` needs entries.
    Function::builtin("map").templates(&[(0, "map_from_arrays(array(), array())")]),
    Function::udf("array_insert").ints(&[0, 1, 2, 3, 4]),
    Function::udf("sequence"),
    Function::udf("map_concat"),
    // `a[i]` counts from 0 in Spark SQL, from 1 in DataFusion (Spark has no `array_element`, so
    // every one in a plan is a subscript).
    Function::builtin("array_element").plan(rewrites::subscript),
    Function::udf("element_at").plan(rewrites::element_at),
    Function::udf("try_element_at").plan(rewrites::element_at),
    Function::builtin("map_extract").plan(rewrites::element_at),
    // `get` is a subscript (which counts from 0, as the plan's subscripts are made to), NULL
    // outside the array in either mode (a subscript outside it fails in ANSI mode, so it is not
    // taken there; `size` of NULL is -1 here).
    Function::spelled("get", &[(2, "CASE WHEN __a2 < 0 OR __a2 >= size(__a1) THEN NULL ELSE __a1[__a2] END")]),
    Function::spelled("array_size", &[(1, "CAST(array_length(__a1) AS INT)")]),
    Function::spelled("map_contains_key", &[(2, "array_has(map_keys(__a1), __a2)")]),
    // Spark's `array_prepend(array, element)` takes DataFusion's arguments the other way; a
    // NULL array gives NULL.
    Function::builtin("array_prepend")
        .templates(&[(2, "CASE WHEN __a1 IS NULL THEN NULL ELSE array_prepend(__a2, __a1) END")]),
    // Ascending puts NULL first, descending last; a NULL order gives NULL.
    Function::spelled(
        "sort_array",
        &[
            (1, "array_sort(__a1, 'ASC', 'NULLS FIRST')"),
            (
                2,
                "CASE WHEN __a2 IS NULL THEN NULL WHEN __a2 THEN array_sort(__a1, 'ASC', 'NULLS FIRST') \
                 ELSE array_sort(__a1, 'DESC', 'NULLS LAST') END",
            ),
        ],
    ),
    // With a comparator it is a higher-order function (`higher_order`), under its own name.
    Function::builtin("array_sort").templates(&[(2, "array_sort_by(__a1, __a2)")]).plan(rewrites::array_sort),
    Function::builtin("size").plan(rewrites::size),
    Function::builtin("array_remove").plan(rewrites::array_remove),
    Function::builtin("cardinality").plan(crate::declare::counted_as_int),
    Function::builtin("array_append").plan(rewrites::array_append),
    Function::builtin("array_position").plan(rewrites::array_position),
    Function::builtin("arrays_zip").plan(rewrites::arrays_zip),
    Function::builtin("concat").plan(rewrites::of_arrays),
    Function::builtin("reverse").plan(rewrites::of_arrays),
];
