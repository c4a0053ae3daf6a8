//! The command language of `update-ref --stdin`, in its two forms: one
//! command per line with space-separated arguments, or (`-z`) arguments
//! terminated by NUL.
//!
//! ```text
//! update SP <ref> SP <new> [SP <old>] LF     update SP <ref> NUL <new> NUL [<old>] NUL
//! create SP <ref> SP <new> LF                create SP <ref> NUL <new> NUL
//! delete SP <ref> [SP <old>] LF              delete SP <ref> NUL [<old>] NUL
//! verify SP <ref> [SP <old>] LF              verify SP <ref> NUL [<old>] NUL
//! option SP no-deref LF                      option SP no-deref NUL
//! ```

use refstore_refs::transaction::{Change, Expected, Update};
use refstore_refs::value::Target;
use refstore_refs::{ObjectId, RefName};

/// Reads commands one at a time.
struct Reader<'a> {
    input: &'a [u8],
    nul: bool,
}

impl<'a> Reader<'a> {
    /// The next command word and the rest of its line (line form) or of its
    /// first field (NUL form, where further arguments follow as fields).
    fn next_command(&mut self) -> Option<(&'a [u8], &'a [u8])> {
        if self.input.is_empty() {
            return None;
        }
        let terminator = if self.nul { 0 } else { b'\n' };
        let end = self
            .input
            .iter()
            .position(|&b| b == terminator)
            .unwrap_or(self.input.len());
        let line = &self.input[..end];
        self.input = &self.input[(end + 1).min(self.input.len())..];
        Some(match line.iter().position(|&b| b == b' ') {
            Some(i) => (&line[..i], &line[i + 1..]),
            None => (line, &line[line.len()..]),
        })
    }

    /// The next NUL-terminated field (NUL form only).
    fn field(&mut self) -> Option<&'a [u8]> {
        let end = self.input.iter().position(|&b| b == 0)?;
        let field = &self.input[..end];
        self.input = &self.input[end + 1..];
        Some(field)
    }
}

/// Parses the whole input into updates. `value` resolves object ids.
pub fn parse(
    input: &[u8],
    nul: bool,
    no_deref_all: bool,
    value: impl Fn(&str) -> Option<ObjectId>,
) -> Result<Vec<Update>, String> {
    let mut reader = Reader { input, nul };
    let mut updates = Vec::new();
    let mut no_deref_next = false;
    while let Some((word, rest)) = reader.next_command() {
        let word_text = String::from_utf8_lossy(word).into_owned();
        let mut args: Vec<&[u8]> = Vec::new();
        let wanted = match word {
            b"update" => 3,
            b"create" => 2,
            b"delete" | b"verify" => 2,
            b"option" => {
                if rest == b"no-deref" {
                    no_deref_next = true;
                    continue;
                }
                return Err(format!(
                    "option unknown: {}\n",
                    String::from_utf8_lossy(rest)
                ));
            }
            _ => {
                let line = if nul {
                    word.to_vec()
                } else {
                    [word, b" ", rest].concat()
                };
                return Err(format!(
                    "unknown command: {}\n",
                    String::from_utf8_lossy(&line)
                ));
            }
        };
        if nul {
            args.push(rest);
            for _ in 1..wanted {
                match reader.field() {
                    Some(f) => args.push(f),
                    None => break,
                }
            }
        } else {
            args.extend(rest.split(|&b| b == b' '));
            if rest.is_empty() {
                args.clear();
            }
        }
        let name_arg = args.first().copied().unwrap_or_default();
        if name_arg.is_empty() {
            return Err(format!("{word_text}: missing <ref>"));
        }
        let name = RefName::new(name_arg)
            .map_err(|_| format!("invalid ref format: {}", String::from_utf8_lossy(name_arg)))?;
        let label = format!("{word_text} {name}");
        let parse_id = |arg: &[u8], what: &str| -> Result<ObjectId, String> {
            let text = String::from_utf8_lossy(arg);
            value(&text).ok_or_else(|| format!("{label}: invalid <{what}>: {text}"))
        };
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
                    no_deref: no_deref_all || no_deref_next,
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
                    no_deref: no_deref_all || no_deref_next,
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
                    no_deref: no_deref_all || no_deref_next,
                }
            }
        };
        no_deref_next = false;
        updates.push(update);
    }
    Ok(updates)
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "1111111111111111111111111111111111111111";

    fn value(v: &str) -> Option<ObjectId> {
        v.parse().ok()
    }

    #[test]
    fn both_forms_parse_to_the_same_updates() {
        let lines = format!("update refs/heads/a {A}\ncreate refs/heads/b {A}\ndelete refs/heads/c {A}\nverify refs/heads/d\noption no-deref\nupdate HEAD {A} {}\n", "0".repeat(40));
        let nul = format!("update refs/heads/a\0{A}\0\0create refs/heads/b\0{A}\0delete refs/heads/c\0{A}\0verify refs/heads/d\0\0option no-deref\0update HEAD\0{A}\0{}\0", "0".repeat(40));
        let a = parse(lines.as_bytes(), false, false, value).unwrap();
        let b = parse(nul.as_bytes(), true, false, value).unwrap();
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
        let err = |input: &str| parse(input.as_bytes(), false, false, value).unwrap_err();
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
}
