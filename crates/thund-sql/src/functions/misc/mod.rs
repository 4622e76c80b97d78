//! Spark's miscellaneous functions: `aes_encrypt`/`aes_decrypt` (`aes`), the session's names
//! (`session`), `typeof` (`type_of`).

pub(crate) mod aes;
pub(crate) mod session;
pub(crate) mod type_of;

use crate::declare::Function;

/// Registers the category's functions with `ctx`, for a session in `catalog.database`.
pub(crate) fn register(ctx: &datafusion::prelude::SessionContext, catalog: &str, database: &str) {
    type_of::register(ctx);
    aes::register(ctx);
    session::register(ctx, catalog, database);
}

/// Spark's miscellaneous functions, as they run here.
pub(crate) const FUNCTIONS: &[Function] = &[
    Function::udf("aes_encrypt"),
    Function::udf("aes_decrypt"),
    Function::udf("try_aes_decrypt"),
    Function::udf("current_catalog"),
    Function::udf("current_database"),
    Function::udf("current_schema"),
    Function::udf("current_user"),
    Function::udf("user"),
    Function::udf("session_user"),
    Function::udf("typeof"),
    // `sum`'s argument where it is VOID: Spark's sum of VOID is a DOUBLE (`resolution`).
    Function::udf("__thund_void_as_double"),
    Function::refused("version", "it names the engine"),
];
