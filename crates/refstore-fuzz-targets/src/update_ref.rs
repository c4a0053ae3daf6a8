//! Targets for `update-ref --stdin`: the command language in its two forms.
//! The parser is the command line's own source file, compiled here too.

#[allow(dead_code)]
#[path = "../../refstore-cli/src/commands/update_ref/stdin.rs"]
mod stdin;

use crate::checks::check_message;
use refstore_refs::{ObjectFormat, ObjectId};

/// Commands a parser returns before the target stops it: each takes at
/// least two bytes of input, so more means a loop.
const COMMANDS_PER_BYTE: usize = 1;

/// `update-ref --stdin`: one command per line.
pub fn update_ref_stdin(data: &[u8]) {
    parse(data, false);
}

/// `update-ref --stdin -z`: NUL-terminated fields.
pub fn update_ref_stdin_z(data: &[u8]) {
    parse(data, true);
}

/// Values resolve as full hex ids of either format, and `HEAD` as one
/// fixed id, standing in for the ref store the command line asks.
fn value(arg: &str) -> Option<ObjectId> {
    if arg == "HEAD" {
        return Some(ObjectId::from_hex(b"1111111111111111111111111111111111111111").unwrap());
    }
    [ObjectFormat::Sha1, ObjectFormat::Sha256]
        .into_iter()
        .find_map(|format| ObjectId::from_hex_in(arg.as_bytes(), format).ok())
}

fn parse(data: &[u8], nul: bool) {
    for no_deref in [false, true] {
        let mut parser = stdin::Parser::new(data, nul, no_deref, value);
        let mut commands = 0;
        loop {
            match parser.next_command() {
                Ok(Some(_)) => commands += 1,
                Ok(None) => break,
                Err(message) => {
                    check_message(&message);
                    break;
                }
            }
            assert!(
                commands <= data.len() * COMMANDS_PER_BYTE,
                "more commands than input bytes: a loop"
            );
        }
    }
}
