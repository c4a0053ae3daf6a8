//! Target for the configuration refstore interprets: a repository's
//! `config` file through every setting it acts on (`core.fsync`,
//! `core.fsyncMethod`, `core.logAllRefUpdates`, `reftable.*`, `receive.*`,
//! format version and extensions, ...), and `-c` / `GIT_CONFIG_PARAMETERS`
//! overrides.

use crate::checks::check_message;
use refstore_fs::config::{parse_cli, parse_parameters, Config, FsyncSettings};

/// A config file and the overrides spelled by the same bytes: bad values
/// give git's messages, never a panic.
pub fn config(data: &[u8]) {
    match Config::from_local_bytes(data) {
        Ok(mut config) => {
            if let Err(e) = config.check_repository_format() {
                check_message(&e.to_string());
            }
            match config.settings() {
                Ok(settings) => {
                    let bare = settings.bare.unwrap_or(false);
                    let _ = settings.log_ref_updates(bare);
                }
                Err(e) => check_message(&e.to_string()),
            }
        }
        Err(e) => check_message(&e.to_string()),
    }
    let text = String::from_utf8_lossy(data);
    if let Err(e) = parse_parameters(&text) {
        check_message(&e.to_string());
    }
    for line in text.lines() {
        if let Err(e) = parse_cli(line) {
            check_message(&e.to_string());
        }
        let (fsync, method) = line.split_once('|').unwrap_or((line, ""));
        let mut warnings = Vec::new();
        FsyncSettings::parse(Some(fsync), Some(method), &mut warnings);
        warnings.iter().for_each(|w| check_message(w));
    }
}
