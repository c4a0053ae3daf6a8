//! The command language of `update-ref --stdin`, in its two forms: one
//! command per line with space-separated arguments, or (`-z`) arguments
//! terminated by NUL.
//!
//! ```text
//! update SP <ref> SP <new> [SP <old>] LF     update SP <ref> NUL <new> NUL [<old>] NUL
//! create SP <ref> SP <new> LF                create SP <ref> NUL <new> NUL
//! delete SP <ref> [SP <old>] LF              delete SP <ref> NUL [<old>] NUL
//! verify SP <ref> [SP <old>] LF              verify SP <ref> NUL [<old>] NUL
//! symref-update SP <ref> SP <target> [SP (ref|oid) SP <old>] LF
//!                                            symref-update SP <ref> NUL <target> NUL [ref|oid] NUL [<old>] NUL
//! symref-create SP <ref> SP <target> LF      symref-create SP <ref> NUL <target> NUL
//! symref-delete SP <ref> [SP <old-target>] LF   symref-delete SP <ref> NUL [<old-target>] NUL
//! symref-verify SP <ref> [SP <old-target>] LF   symref-verify SP <ref> NUL [<old-target>] NUL
//! option SP no-deref LF                      option SP no-deref NUL
//! start LF / prepare LF / commit LF / abort LF    start NUL / ...
//! ```
//!
//! Commands are read one at a time, so a caller can drive a transaction
//! interactively: wait for `prepare: ok` before deciding to commit.

use refstore_refs::transaction::{Change, Expected, Update};
use refstore_refs::value::Target;
use refstore_refs::{ObjectId, RefName};
use std::io::BufRead;

/// One command of the input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// Queue an update (`update`, `create`, `delete`, `verify`).
    Update(Update),
    /// `option no-deref`: the next update does not follow symbolic refs.
    NoDerefNext,
    /// Begin a transaction explicitly.
    Start,
    /// Lock and check everything queued.
    Prepare,
    /// Make the queued updates visible.
    Commit,
    /// Drop the queued updates and release their locks.
    Abort,
}

/// Reads commands one at a time from `input`.
pub struct Parser<R, F> {
    input: R,
    nul: bool,
    no_deref_all: bool,
    no_deref_next: bool,
    value: F,
}

impl<R: BufRead, F: Fn(&str) -> Option<ObjectId>> Parser<R, F> {
    /// A parser of `input`; `value` resolves object ids, `no_deref_all`
    /// applies `--no-deref` to every update.
    pub fn new(input: R, nul: bool, no_deref_all: bool, value: F) -> Self {
        Parser {
            input,
            nul,
            no_deref_all,
            no_deref_next: false,
            value,
        }
    }

    /// Reads up to the next `terminator`; `None` at the end of the input.
    /// A last field without its terminator counts in the line form only.
    fn read_to(&mut self, terminator: u8) -> Result<Option<Vec<u8>>, String> {
        let mut buf = Vec::new();
        self.input
            .read_until(terminator, &mut buf)
            .map_err(|e| format!("cannot read standard input: {e}"))?;
        if buf.last() == Some(&terminator) {
            buf.pop();
            Ok(Some(buf))
        } else if buf.is_empty() || self.nul {
            Ok(None)
        } else {
            Ok(Some(buf))
        }
    }

    /// The next command, `None` at the end of the input.
    pub fn next_command(&mut self) -> Result<Option<Command>, String> {
        let terminator = if self.nul { 0 } else { b'\n' };
        let Some(line) = self.read_to(terminator)? else {
            return Ok(None);
        };
        if line.is_empty() {
            return Err("empty command in input".to_owned());
        }
        let (word, rest) = match line.iter().position(|&b| b == b' ') {
            Some(i) => (&line[..i], &line[i + 1..]),
            None => (&line[..], &line[line.len()..]),
        };
        let verb = match line.as_slice() {
            b"start" => Some(Command::Start),
            b"prepare" => Some(Command::Prepare),
            b"commit" => Some(Command::Commit),
            b"abort" => Some(Command::Abort),
            _ => None,
        };
        if let Some(verb) = verb {
            return Ok(Some(verb));
        }
        let wanted = match word {
            b"update" => 3,
            b"create" | b"delete" | b"verify" => 2,
            b"symref-update" => 4,
            b"symref-create" | b"symref-delete" | b"symref-verify" => 2,
            b"option" => {
                if rest == b"no-deref" {
                    self.no_deref_next = true;
                    return Ok(Some(Command::NoDerefNext));
                }
                return Err(format!(
                    "option unknown: {}\n",
                    String::from_utf8_lossy(rest)
                ));
            }
            _ => {
                let shown = if self.nul { word } else { &line[..] };
                return Err(format!(
                    "unknown command: {}\n",
                    String::from_utf8_lossy(shown)
                ));
            }
        };
        let (word, rest) = (word.to_vec(), rest.to_vec());
        let update = self.update(&word, &rest, wanted)?;
        self.no_deref_next = false;
        Ok(Some(Command::Update(update)))
    }

    /// Parses the arguments of an update command.
    fn update(&mut self, word: &[u8], rest: &[u8], wanted: usize) -> Result<Update, String> {
        // Fields of the NUL form are read here; the line form's are slices
        // of `rest`. Messages are formatted only when one is needed.
        let mut owned: Vec<Vec<u8>> = Vec::new();
        let mut args: Vec<&[u8]> = Vec::with_capacity(wanted + 1);
        if self.nul {
            owned.push(rest.to_vec());
            for _ in 1..wanted {
                match self.read_to(0)? {
                    Some(f) => owned.push(f),
                    None => break,
                }
            }
            args.extend(owned.iter().map(Vec::as_slice));
        } else if !rest.is_empty() {
            args.extend(rest.split(|&b| b == b' '));
        }
        let word_text = || String::from_utf8_lossy(word);
        let no_deref = self.no_deref_all || self.no_deref_next;
        let value = &self.value;
        let name_arg = args.first().copied().unwrap_or_default();
        if name_arg.is_empty() {
            return Err(format!("{}: missing <ref>", word_text()));
        }
        let name = RefName::new(name_arg)
            .map_err(|_| format!("invalid ref format: {}", String::from_utf8_lossy(name_arg)))?;
        let label = format!("{} {name}", word_text());
        let parse_id = |arg: &[u8], what: &str| -> Result<ObjectId, String> {
            let text = String::from_utf8_lossy(arg);
            value(&text).ok_or_else(|| format!("{label}: invalid <{what}>: {text}"))
        };
        if word.starts_with(b"symref-") {
            return symref_update(word, &label, name, &args, wanted, &|t: &str| value(t));
        }
        let new_arg = args.get(1).copied().filter(|a| !a.is_empty());
        let old_index = if word == b"update" { 2 } else { 1 };
        let old_arg = args.get(old_index).copied().filter(|a| !a.is_empty());
        if args.len() > wanted {
            let extra = String::from_utf8_lossy(args[wanted]);
            return Err(format!("{label}: extra input: {extra}"));
        }
        let update = match word {
            b"update" | b"create" => {
                let new = parse_id(
                    new_arg.ok_or_else(|| format!("{label}: missing <newvalue>"))?,
                    "newvalue",
                )?;
                let expected = if word == b"create" {
                    if new.is_null() {
                        return Err(format!("{label}: zero <newvalue>"));
                    }
                    Expected::Absent
                } else {
                    match old_arg {
                        Some(old) => Expected::object(parse_id(old, "oldvalue")?),
                        None => Expected::Any,
                    }
                };
                let change = if new.is_null() {
                    Change::Delete
                } else {
                    Change::Set(Target::Object(new))
                };
                Update {
                    name,
                    change,
                    expected,
                    no_deref,
                }
            }
            b"delete" => {
                let expected = match old_arg {
                    Some(old) => {
                        let old = parse_id(old, "oldvalue")?;
                        if old.is_null() {
                            return Err(format!("{label}: zero <oldvalue>"));
                        }
                        Expected::object(old)
                    }
                    None => Expected::Any,
                };
                Update {
                    name,
                    change: Change::Delete,
                    expected,
                    no_deref,
                }
            }
            _ => {
                let expected = match old_arg {
                    Some(old) => Expected::object(parse_id(old, "oldvalue")?),
                    None => Expected::Absent,
                };
                Update {
                    name,
                    change: Change::Verify,
                    expected,
                    no_deref,
                }
            }
        };
        Ok(update)
    }
}

/// The `symref-*` commands: symbolic refs set, created, deleted or
/// verified by target, always without following the ref itself.
///
/// ```text
/// symref-update SP <ref> SP <new-target> [SP (ref SP <old-target> | oid SP <old-oid>)]
/// symref-create SP <ref> SP <new-target>
/// symref-delete SP <ref> [SP <old-target>]
/// symref-verify SP <ref> [SP <old-target>]
/// ```
fn symref_update(
    word: &[u8],
    label: &str,
    name: RefName,
    args: &[&[u8]],
    wanted: usize,
    value: &dyn Fn(&str) -> Option<ObjectId>,
) -> Result<Update, String> {
    let arg = |i: usize| args.get(i).copied().filter(|a| !a.is_empty());
    if let Some(extra) = args.get(wanted) {
        return Err(format!(
            "{label}: extra input: {}",
            String::from_utf8_lossy(extra)
        ));
    }
    let target = |arg: &[u8], what: &str| -> Result<Target, String> {
        RefName::new(arg)
            .map(Target::Symbolic)
            .map_err(|_| format!("{label}: invalid {what}: {}", String::from_utf8_lossy(arg)))
    };
    let (change, expected) = match word {
        b"symref-update" => {
            let new = arg(1).ok_or_else(|| format!("{label}: missing <new-target>"))?;
            let expected = match arg(2) {
                None => Expected::Any,
                Some(kind) => {
                    let old = arg(3).ok_or_else(|| format!("{label}: expected old value"))?;
                    match kind {
                        b"ref" => Expected::Value(target(old, "ref")?),
                        b"oid" => {
                            let text = String::from_utf8_lossy(old);
                            let id = value(&text)
                                .ok_or_else(|| format!("{label}: invalid oid: {text}"))?;
                            Expected::object(id)
                        }
                        other => {
                            return Err(format!(
                                "{label}: invalid arg '{}' for old value",
                                String::from_utf8_lossy(other)
                            ))
                        }
                    }
                }
            };
            (Change::Set(target(new, "<new-target>")?), expected)
        }
        b"symref-create" => {
            let new = arg(1).ok_or_else(|| format!("{label}: missing <new-target>"))?;
            (Change::Set(target(new, "<new-target>")?), Expected::Absent)
        }
        b"symref-delete" => {
            let expected = match arg(1) {
                Some(old) => Expected::Value(target(old, "<old-target>")?),
                None => Expected::Any,
            };
            (Change::Delete, expected)
        }
        _ => {
            let expected = match arg(1) {
                Some(old) => Expected::Value(target(old, "<old-target>")?),
                None => Expected::Absent,
            };
            (Change::Verify, expected)
        }
    };
    Ok(Update {
        name,
        change,
        expected,
        no_deref: true,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "1111111111111111111111111111111111111111";

    fn value(v: &str) -> Option<ObjectId> {
        v.parse().ok()
    }

    /// Every command of `input`, or the first error.
    fn parse(input: &[u8], nul: bool) -> Result<Vec<Command>, String> {
        let mut parser = Parser::new(input, nul, false, value);
        let mut commands = Vec::new();
        while let Some(c) = parser.next_command()? {
            commands.push(c);
        }
        Ok(commands)
    }

    fn updates(commands: Vec<Command>) -> Vec<Update> {
        commands
            .into_iter()
            .filter_map(|c| match c {
                Command::Update(u) => Some(u),
                Command::NoDerefNext => None,
                other => panic!("not an update: {other:?}"),
            })
            .collect()
    }

    #[test]
    fn both_forms_parse_to_the_same_updates() {
        let lines = format!("update refs/heads/a {A}\ncreate refs/heads/b {A}\ndelete refs/heads/c {A}\nverify refs/heads/d\noption no-deref\nupdate HEAD {A} {}\n", "0".repeat(40));
        let nul = format!("update refs/heads/a\0{A}\0\0create refs/heads/b\0{A}\0delete refs/heads/c\0{A}\0verify refs/heads/d\0\0option no-deref\0update HEAD\0{A}\0{}\0", "0".repeat(40));
        let a = updates(parse(lines.as_bytes(), false).unwrap());
        let b = updates(parse(nul.as_bytes(), true).unwrap());
        assert_eq!(a, b);
        assert_eq!(a.len(), 5);
        assert_eq!(a[1].expected, Expected::Absent);
        assert_eq!(a[3].change, Change::Verify);
        assert_eq!(a[3].expected, Expected::Absent);
        assert!(a[4].no_deref && !a[0].no_deref);
        assert_eq!(a[4].expected, Expected::Absent);
    }

    #[test]
    fn errors_in_gits_words() {
        let err = |input: &str| parse(input.as_bytes(), false).unwrap_err();
        assert_eq!(err("frob x\n"), "unknown command: frob x\n");
        assert_eq!(
            err("update refs/heads/a\n"),
            "update refs/heads/a: missing <newvalue>"
        );
        assert_eq!(
            err("update refs/heads/a zz\n"),
            "update refs/heads/a: invalid <newvalue>: zz"
        );
        assert_eq!(
            err(&format!("update refs/heads/a..b {A}\n")),
            "invalid ref format: refs/heads/a..b"
        );
        assert_eq!(
            err(&format!("update  refs/heads/a {A}\n")),
            "update: missing <ref>"
        );
        assert_eq!(err("option frob\n"), "option unknown: frob\n");
        assert_eq!(
            err(&format!("delete refs/heads/a {}\n", "0".repeat(40))),
            "delete refs/heads/a: zero <oldvalue>"
        );
    }

    #[test]
    fn verbs_stand_alone() {
        let input = format!("start\nupdate refs/heads/a {A}\nprepare\ncommit\nstart\nabort\n");
        let commands = parse(input.as_bytes(), false).unwrap();
        assert_eq!(commands.len(), 6);
        assert_eq!(commands[0], Command::Start);
        assert!(matches!(commands[1], Command::Update(_)));
        assert_eq!(
            commands[2..],
            [
                Command::Prepare,
                Command::Commit,
                Command::Start,
                Command::Abort
            ]
        );
        let nul = parse(
            format!("start\0update refs/heads/a\0{A}\0\0commit\0").as_bytes(),
            true,
        )
        .unwrap();
        assert_eq!(nul.len(), 3);
        assert_eq!(
            parse(b"start x\n", false).unwrap_err(),
            "unknown command: start x\n"
        );
        assert_eq!(
            parse(b"start\0x\0", true).unwrap_err(),
            "unknown command: x\n"
        );
        assert_eq!(
            parse(b"start\n\n", false).unwrap_err(),
            "empty command in input"
        );
    }
}
