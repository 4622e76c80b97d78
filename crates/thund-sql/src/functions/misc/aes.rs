//! Spark's `aes_encrypt`, `aes_decrypt` and `try_aes_decrypt`, byte for byte.
//!
//! Spark's layout (`ExpressionImplUtils.aesInternal`): a 16-, 24- or 32-byte key picks AES-128,
//! -192 or -256; the mode is GCM by default. The modes and paddings Spark takes are ECB and CBC
//! with PKCS#7 (`PKCS`/`DEFAULT`) and GCM without padding (`NONE`/`DEFAULT`), any case.
//!
//! - ECB: the cipher text alone; no IV or AAD may be given.
//! - CBC: the 16-byte IV, then the cipher text; no AAD may be given.
//! - GCM: the 12-byte IV, then the cipher text and its 16-byte tag; an AAD is authenticated.
//!
//! Without an IV (or with an empty one) `aes_encrypt` draws a random one, as Spark does, so it
//! is volatile; with one, the answer is Spark's to the byte. Decryption reads the IV from the
//! input. Every misuse fails with Spark's error class; a NULL argument gives NULL;
//! `try_aes_decrypt` gives NULL where `aes_decrypt` fails.

use std::sync::Arc;

use aes_gcm::aead::rand_core::RngCore;
use aes_gcm::aead::{Aead, OsRng, Payload};
use aes_gcm::{AesGcm, KeyInit, Nonce};
use arrow::array::{Array, ArrayRef, AsArray, BinaryBuilder};
use arrow::datatypes::DataType;
use cbc::cipher::block_padding::Pkcs7;
use cbc::cipher::consts::U12;
use cbc::cipher::{BlockDecryptMut, BlockEncryptMut, KeyIvInit};
use datafusion::common::{exec_err, plan_err, Result};
use datafusion::logical_expr::{ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility};
use datafusion::prelude::SessionContext;

pub(crate) fn register(ctx: &SessionContext) {
    for (function, volatility) in [
        // A random IV each call when none is given.
        (Function::Encrypt, Volatility::Volatile),
        (Function::Decrypt { try_: false }, Volatility::Immutable),
        (Function::Decrypt { try_: true }, Volatility::Immutable),
    ] {
        ctx.register_udf(ScalarUDF::from(Aes { function, signature: Signature::variadic_any(volatility) }));
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Function {
    Encrypt,
    Decrypt { try_: bool },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Ecb,
    Cbc,
    Gcm,
}

impl Mode {
    fn of(mode: &str, padding: &str) -> std::result::Result<Mode, String> {
        let (m, p) = (mode.to_ascii_uppercase(), padding.to_ascii_uppercase());
        match (m.as_str(), p.as_str()) {
            ("ECB", "PKCS" | "DEFAULT") => Ok(Mode::Ecb),
            ("CBC", "PKCS" | "DEFAULT") => Ok(Mode::Cbc),
            ("GCM", "NONE" | "DEFAULT") => Ok(Mode::Gcm),
            _ => Err(format!(
                "[UNSUPPORTED_FEATURE.AES_MODE] AES-{m} with the padding {p} is not supported by aes_encrypt/aes_decrypt"
            )),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Mode::Ecb => "ECB",
            Mode::Cbc => "CBC",
            Mode::Gcm => "GCM",
        }
    }
}

/// Runs `$body` with `$C` the AES of `$key`'s length (16, 24 or 32 bytes, checked before).
macro_rules! with_aes {
    ($key:expr, $C:ident => $body:expr) => {
        match $key.len() {
            16 => {
                type $C = aes::Aes128;
                $body
            }
            24 => {
                type $C = aes::Aes192;
                $body
            }
            _ => {
                type $C = aes::Aes256;
                $body
            }
        }
    };
}

fn crypto_error(detail: impl std::fmt::Display) -> String {
    format!(
        "[INVALID_PARAMETER_VALUE.AES_CRYPTO_ERROR] the input or key of aes_encrypt/aes_decrypt is invalid: {detail}"
    )
}

fn check_key(key: &[u8]) -> std::result::Result<(), String> {
    if matches!(key.len(), 16 | 24 | 32) {
        return Ok(());
    }
    Err(format!(
        "[INVALID_PARAMETER_VALUE.AES_KEY_LENGTH] the key of aes_encrypt/aes_decrypt must have 16, 24 or 32 bytes, \
         not {}",
        key.len()
    ))
}

fn no_aad(mode: Mode, aad: &[u8], function: &str) -> std::result::Result<(), String> {
    if aad.is_empty() {
        return Ok(());
    }
    Err(format!(
        "[UNSUPPORTED_FEATURE.AES_MODE_AAD] {function} with AES-{} takes no additional authenticated data (AAD)",
        mode.name()
    ))
}

/// `input` encrypted as Spark's `aes_encrypt` does (an empty `iv` is a random one).
fn encrypt(input: &[u8], key: &[u8], mode: Mode, iv: &[u8], aad: &[u8]) -> std::result::Result<Vec<u8>, String> {
    check_key(key)?;
    if mode != Mode::Gcm {
        no_aad(mode, aad, "aes_encrypt")?;
    }
    let iv_length = match mode {
        Mode::Ecb if iv.is_empty() => 0,
        Mode::Ecb => {
            return Err(
                "[UNSUPPORTED_FEATURE.AES_MODE_IV] aes_encrypt with AES-ECB takes no initialization vector (IV)".into(),
            )
        }
        Mode::Cbc => 16,
        Mode::Gcm => 12,
    };
    let mut out = iv.to_vec();
    if iv.is_empty() {
        out.resize(iv_length, 0);
        OsRng.fill_bytes(&mut out);
    } else if iv.len() != iv_length {
        return Err(format!(
            "[INVALID_PARAMETER_VALUE.AES_IV_LENGTH] aes_encrypt takes 16-byte CBC IVs and 12-byte GCM IVs, not {} bytes \
             for {}",
            iv.len(),
            mode.name()
        ));
    }
    let sealed = with_aes!(key, C => match mode {
        Mode::Ecb => ecb::Encryptor::<C>::new(key.into()).encrypt_padded_vec_mut::<Pkcs7>(input),
        Mode::Cbc => cbc::Encryptor::<C>::new(key.into(), out[..].into()).encrypt_padded_vec_mut::<Pkcs7>(input),
        Mode::Gcm => AesGcm::<C, U12>::new(key.into())
            .encrypt(Nonce::from_slice(&out), Payload { msg: input, aad })
            .map_err(crypto_error)?,
    });
    out.extend(sealed);
    Ok(out)
}

/// `input` decrypted as Spark's `aes_decrypt` does (the IV read from its start).
fn decrypt(input: &[u8], key: &[u8], mode: Mode, aad: &[u8]) -> std::result::Result<Vec<u8>, String> {
    check_key(key)?;
    if mode != Mode::Gcm {
        no_aad(mode, aad, "aes_decrypt")?;
    }
    let iv_length = match mode {
        Mode::Ecb => 0,
        Mode::Cbc => 16,
        Mode::Gcm => 12,
    };
    if input.len() < iv_length {
        return Err(crypto_error(format!("the input has {} bytes, fewer than its IV's {iv_length}", input.len())));
    }
    let (iv, sealed) = input.split_at(iv_length);
    with_aes!(key, C => match mode {
        Mode::Ecb => ecb::Decryptor::<C>::new(key.into()).decrypt_padded_vec_mut::<Pkcs7>(sealed).map_err(crypto_error),
        Mode::Cbc => cbc::Decryptor::<C>::new(key.into(), iv.into()).decrypt_padded_vec_mut::<Pkcs7>(sealed).map_err(crypto_error),
        Mode::Gcm => AesGcm::<C, U12>::new(key.into())
            .decrypt(Nonce::from_slice(iv), Payload { msg: sealed, aad })
            .map_err(|_| crypto_error("the tag does not match (a wrong key, AAD or input)")),
    })
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct Aes {
    function: Function,
    signature: Signature,
}

impl ScalarUDFImpl for Aes {
    fn name(&self) -> &str {
        match self.function {
            Function::Encrypt => "aes_encrypt",
            Function::Decrypt { try_: false } => "aes_decrypt",
            Function::Decrypt { try_: true } => "try_aes_decrypt",
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        let most = if self.function == Function::Encrypt { 6 } else { 5 };
        if !(2..=most).contains(&args.len()) {
            return plan_err!("{} takes 2 to {most} arguments, not {}", self.name(), args.len());
        }
        let fits = |t: &DataType| t.is_string() || crate::functions::binary::is_bytes(t) || t == &DataType::Null;
        if let Some(t) = args.iter().find(|t| !fits(t)) {
            return plan_err!("{} of {} runs on the Spark backend", self.name(), crate::types::spark_type_name(t));
        }
        Ok(DataType::Binary)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let n = args.number_rows;
        let scalar = args.args.iter().all(|a| matches!(a, ColumnarValue::Scalar(_)));
        let column = |i: usize, t: &DataType| -> Result<Option<ArrayRef>> {
            args.args.get(i).map(|a| Ok(arrow::compute::cast(&a.to_array(n)?, t)?)).transpose()
        };
        let (input, key) = (column(0, &DataType::Binary)?, column(1, &DataType::Binary)?);
        let (mode, padding) = (column(2, &DataType::Utf8)?, column(3, &DataType::Utf8)?);
        // aes_encrypt(input, key, mode, padding, iv, aad); aes_decrypt(input, key, mode, padding, aad).
        let (iv, aad) = match self.function {
            Function::Encrypt => (column(4, &DataType::Binary)?, column(5, &DataType::Binary)?),
            Function::Decrypt { .. } => (None, column(4, &DataType::Binary)?),
        };
        let bytes = |c: &Option<ArrayRef>, i: usize| -> Option<Option<Vec<u8>>> {
            match c {
                None => Some(None),
                Some(a) if a.is_null(i) => None,
                Some(a) => Some(Some(a.as_binary::<i32>().value(i).to_vec())),
            }
        };
        let text = |c: &Option<ArrayRef>, i: usize, default: &str| -> Option<String> {
            match c {
                None => Some(default.to_string()),
                Some(a) if a.is_null(i) => None,
                Some(a) => Some(a.as_string::<i32>().value(i).to_string()),
            }
        };
        let mut out = BinaryBuilder::with_capacity(n, n * 32);
        for i in 0..n {
            let given = (|| {
                Some((
                    bytes(&input, i)??,
                    bytes(&key, i)??,
                    text(&mode, i, "GCM")?,
                    text(&padding, i, "DEFAULT")?,
                    bytes(&iv, i)?.unwrap_or_default(),
                    bytes(&aad, i)?.unwrap_or_default(),
                ))
            })();
            let Some((input, key, mode, padding, iv, aad)) = given else {
                out.append_null();
                continue;
            };
            let answer = Mode::of(&mode, &padding).and_then(|m| match self.function {
                Function::Encrypt => encrypt(&input, &key, m, &iv, &aad),
                Function::Decrypt { .. } => decrypt(&input, &key, m, &aad),
            });
            match answer {
                Ok(v) => out.append_value(v),
                Err(_) if self.function == (Function::Decrypt { try_: true }) => out.append_null(),
                Err(e) => return exec_err!("{e}"),
            }
        }
        crate::columnar::columnar(Arc::new(out.finish()), scalar)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine;

    fn b64(v: &[u8]) -> String {
        base64::engine::general_purpose::STANDARD.encode(v)
    }

    #[test]
    fn encrypts_and_decrypts_as_spark_does() {
        // Spark 4.1.4's answers (its documented examples).
        let ecb = encrypt(b"Spark SQL", b"1234567890abcdef", Mode::Ecb, b"", b"").unwrap();
        assert_eq!(b64(&ecb), "3lmwu+Mw0H3fi5NDvcu9lg==");
        let key = b"abcdefghijklmnop12345678ABCDEFGH";
        let cbc = encrypt(b"Spark", key, Mode::Cbc, &[0; 16], b"").unwrap();
        assert_eq!(b64(&cbc), "AAAAAAAAAAAAAAAAAAAAAPSd4mWyMZ5mhvjiAPQJnfg=");
        let gcm = encrypt(b"Spark", key, Mode::Gcm, &[0; 12], b"This is an AAD mixed into the input").unwrap();
        assert_eq!(b64(&gcm), "AAAAAAAAAAAAAAAAQiYi+sTLm7KD9UcZ2nlRdYDe/PX4");
        assert_eq!(decrypt(&gcm, key, Mode::Gcm, b"This is an AAD mixed into the input").unwrap(), b"Spark");
        assert!(decrypt(&gcm, key, Mode::Gcm, b"wrong aad").unwrap_err().contains("AES_CRYPTO_ERROR"));
        assert_eq!(decrypt(&cbc, key, Mode::Cbc, b"").unwrap(), b"Spark");
        // A random IV each time without one, and the text still comes back.
        let a = encrypt(b"Spark", b"0000111122223333", Mode::Gcm, b"", b"").unwrap();
        let b = encrypt(b"Spark", b"0000111122223333", Mode::Gcm, b"", b"").unwrap();
        assert_ne!(a, b);
        assert_eq!(decrypt(&a, b"0000111122223333", Mode::Gcm, b"").unwrap(), b"Spark");
        assert!(encrypt(b"x", b"short", Mode::Gcm, b"", b"").unwrap_err().contains("AES_KEY_LENGTH"));
        assert!(Mode::of("gcm", "pkcs").unwrap_err().contains("AES_MODE"));
        assert!(encrypt(b"x", b"0000111122223333", Mode::Ecb, &[0; 16], b"").unwrap_err().contains("AES_MODE_IV"));
        assert!(encrypt(b"x", b"0000111122223333", Mode::Cbc, &[0; 2], b"").unwrap_err().contains("AES_IV_LENGTH"));
        assert!(decrypt(&[0, 17], b"0000111122223333", Mode::Gcm, b"").unwrap_err().contains("AES_CRYPTO_ERROR"));
    }
}
