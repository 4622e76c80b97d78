//! Spark's miscellaneous functions: `aes_encrypt`/`aes_decrypt`, the session's names, `typeof`.

pub(crate) mod aes;
pub(crate) mod session;
pub(crate) mod type_of;
