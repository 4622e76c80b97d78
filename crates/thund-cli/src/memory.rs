//! The native engine's memory limit for `thund run` and `thund test`: where it is set, and how a
//! size is written.
//!
//! The first of these that is set wins: `--memory-limit`, the environment's `THUND_MEMORY_LIMIT`,
//! the spec's `configuration: {thund.memoryLimit: …}`, else a share of the machine's memory
//! (`thund_native::DEFAULT_SHARE_PERCENT`). There is always a limit where the machine's memory
//! can be read, so a run that outgrows memory spills or fails with an error naming what held it,
//! rather than being killed by the kernel. A size is `512M`, `4G`, `1.5GiB`, a number of bytes, or
//! a share of the machine's memory such as `50%`.

use std::path::Path;

use knut_thund::ir::Pipeline;

use crate::failure::Failure;

/// The environment variable that sets the limit.
pub(crate) const ENV: &str = "THUND_MEMORY_LIMIT";
/// The spec's `configuration` key that sets the limit.
pub(crate) const KEY: &str = "thund.memoryLimit";

/// The limit of a run of `p` (found from `start`), in bytes; `None` where nothing sets one and
/// the machine's memory cannot be read.
pub(crate) fn memory_limit(flag: Option<&str>, p: &Pipeline, start: &Path) -> anyhow::Result<Option<usize>> {
    if let Some(flag) = flag {
        return parse_size(flag).map(Some).map_err(|e| usage(format!("--memory-limit `{flag}`: {e}")));
    }
    if let Ok(value) = std::env::var(ENV) {
        return parse_size(&value).map(Some).map_err(|e| usage(format!("{ENV}=`{value}`: {e}")));
    }
    if let Some(value) = p.configuration.get(KEY) {
        let spec =
            knut_thund::spec::discover(start).map_or_else(|_| "spark-pipeline.yml".into(), |s| s.display().to_string());
        return parse_size(value).map(Some).map_err(|e| usage(format!("{spec}: configuration `{KEY}: {value}`: {e}")));
    }
    Ok(thund_native::default_memory_limit())
}

fn usage(message: String) -> anyhow::Error {
    Failure::usage(message).into()
}

/// Parses `512M`, `2G`, `1.5GiB`, `1048576` or `50%` (of the machine's memory) into bytes; the
/// error says what is wrong with the size.
pub(crate) fn parse_size(s: &str) -> Result<usize, String> {
    const SHAPE: &str = "must be a positive size such as 512M, 4G or 50% (of this machine's memory)";
    let s = s.trim();
    let bytes = if let Some(percent) = s.strip_suffix('%') {
        let share: f64 = percent.trim().parse().map_err(|_| format!("is not a share; it {SHAPE}"))?;
        if !(share > 0.0 && share <= 100.0) {
            return Err(format!("{SHAPE}; a share is above 0% and at most 100%"));
        }
        let machine = thund_native::machine_memory().ok_or("the share of a machine whose memory cannot be read")?;
        machine as f64 * share / 100.0
    } else {
        let (num, mult) = match s.char_indices().find(|(_, c)| c.is_ascii_alphabetic()) {
            Some((i, _)) => {
                let unit = s[i..].to_ascii_uppercase();
                let mult: u64 = match unit.trim_end_matches("IB").trim_end_matches('B') {
                    "" => 1,
                    "K" => 1 << 10,
                    "M" => 1 << 20,
                    "G" => 1 << 30,
                    "T" => 1 << 40,
                    _ => return Err("has an unknown unit (use K, M, G or T)".into()),
                };
                (&s[..i], mult)
            }
            None => (s, 1),
        };
        let n: f64 = num.trim().parse().map_err(|_| format!("is not a size; it {SHAPE}"))?;
        n * mult as f64
    };
    // A cast would turn `-5M` into 0 and `NaN` or `inf` into nonsense limits.
    if !bytes.is_finite() || bytes < 1.0 || bytes > usize::MAX as f64 {
        return Err(SHAPE.into());
    }
    Ok(bytes as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_memory_sizes() {
        assert_eq!(parse_size("512M").unwrap(), 512 << 20);
        assert_eq!(parse_size("2G").unwrap(), 2 << 30);
        assert_eq!(parse_size("1.5GiB").unwrap(), 3 << 29);
        assert_eq!(parse_size("4096").unwrap(), 4096);
        assert!(parse_size("12Q").is_err());
        for bad in ["-5M", "0", "0.0G", "NaN", "inf", "-inf", "0%", "101%", "x%", "-3%"] {
            assert!(parse_size(bad).is_err(), "{bad} was accepted");
        }
    }

    #[test]
    fn a_share_is_of_the_machines_memory() {
        let machine = thund_native::machine_memory().expect("this machine's memory is readable");
        assert_eq!(parse_size("100%").unwrap() as u64, machine);
        let half = parse_size("50%").unwrap() as u64;
        assert!(half.abs_diff(machine / 2) <= 1, "{half} is not half of {machine}");
    }
}
