//! The `--format` language of `for-each-ref`: literal text, `%%`, `%xx`
//! hex escapes, and `%(atom)` / `%(atom:option)` placeholders.

use refstore_refs::{ObjectId, RefName};

/// What a placeholder shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Atom {
    /// `%(refname)` with its options.
    RefName(NameForm),
    /// `%(objectname)`; `Some(n)` abbreviates to `n` hex digits.
    ObjectName(Option<usize>),
    /// `%(objecttype)`.
    ObjectType,
    /// `%(*objectname)`: the object an annotated tag points at.
    DerefObjectName(Option<usize>),
    /// `%(*objecttype)`.
    DerefObjectType,
    /// `%(symref)`: the target of a symbolic ref, empty otherwise.
    Symref(NameForm),
    /// `%(upstream)`, `%(push)`: tracking information, which a bare ref
    /// store does not have; always empty.
    Tracking,
    /// `%(HEAD)`: `*` for the branch HEAD points at, a space otherwise.
    Head,
}

/// How a ref name is shown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NameForm {
    /// As stored.
    Full,
    /// `:short`, git's unambiguous short form.
    Short,
    /// `:lstrip=N` (or `:strip=N`): N leading components removed; negative
    /// N keeps the last -N.
    LStrip(i64),
    /// `:rstrip=N`: N trailing components removed; negative keeps the first.
    RStrip(i64),
}

/// One piece of a parsed format.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    /// Text copied as is.
    Literal(Vec<u8>),
    /// A placeholder.
    Atom(Atom),
}

/// A format error, in git's words; `usage` errors exit 129, the others 128.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FormatError {
    /// The message.
    pub message: String,
    /// Whether git reports it as a usage error.
    pub usage: bool,
}

fn fatal(message: String) -> FormatError {
    FormatError {
        message,
        usage: false,
    }
}

/// Parses a format string.
pub fn parse(format: &str) -> Result<Vec<Piece>, FormatError> {
    let bytes = format.as_bytes();
    let mut pieces = Vec::new();
    let mut literal = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'%' {
            literal.push(bytes[i]);
            i += 1;
            continue;
        }
        match bytes.get(i + 1) {
            Some(b'%') => {
                literal.push(b'%');
                i += 2;
            }
            Some(b'(') => {
                let Some(len) = bytes[i + 2..].iter().position(|&b| b == b')') else {
                    return Err(FormatError {
                        message: format!("malformed format string {}", &format[i..]),
                        usage: true,
                    });
                };
                let spec = &format[i + 2..i + 2 + len];
                if !literal.is_empty() {
                    pieces.push(Piece::Literal(std::mem::take(&mut literal)));
                }
                pieces.push(Piece::Atom(parse_atom(spec)?));
                i += 3 + len;
            }
            _ => {
                let hex = bytes
                    .get(i + 1..i + 3)
                    .and_then(|h| std::str::from_utf8(h).ok())
                    .and_then(|h| u8::from_str_radix(h, 16).ok());
                match hex {
                    Some(byte) => {
                        literal.push(byte);
                        i += 3;
                    }
                    None => {
                        literal.push(b'%');
                        i += 1;
                    }
                }
            }
        }
    }
    if !literal.is_empty() {
        pieces.push(Piece::Literal(literal));
    }
    Ok(pieces)
}

/// Parses the inside of `%(...)`, also used for `--sort` keys.
pub fn parse_atom(spec: &str) -> Result<Atom, FormatError> {
    let (name, option) = match spec.split_once(':') {
        Some((n, o)) => (n, Some(o)),
        None => (spec, None),
    };
    let bad_option = |o: &str| fatal(format!("unrecognized %({spec}) argument: {o}"));
    let name_form = |option: Option<&str>| -> Result<NameForm, FormatError> {
        let Some(o) = option else {
            return Ok(NameForm::Full);
        };
        let number = |n: &str| n.parse::<i64>().map_err(|_| bad_option(o));
        if o == "short" {
            Ok(NameForm::Short)
        } else if let Some(n) = o.strip_prefix("lstrip=").or(o.strip_prefix("strip=")) {
            Ok(NameForm::LStrip(number(n)?))
        } else if let Some(n) = o.strip_prefix("rstrip=") {
            Ok(NameForm::RStrip(number(n)?))
        } else {
            Err(bad_option(o))
        }
    };
    let abbrev = |option: Option<&str>| -> Result<Option<usize>, FormatError> {
        match option {
            None => Ok(None),
            Some("short") => Ok(Some(DEFAULT_ABBREV)),
            Some(o) => match o.strip_prefix("short=").map(str::parse::<usize>) {
                Some(Ok(n)) => Ok(Some(n.max(MIN_ABBREV))),
                _ => Err(bad_option(o)),
            },
        }
    };
    let no_option = |atom: Atom| match option {
        None => Ok(atom),
        Some(_) => Err(fatal(format!(
            "%({}) does not take arguments",
            name.trim_start_matches('*')
        ))),
    };
    match name {
        "refname" => Ok(Atom::RefName(name_form(option)?)),
        "symref" => Ok(Atom::Symref(name_form(option)?)),
        "objectname" => Ok(Atom::ObjectName(abbrev(option)?)),
        "*objectname" => Ok(Atom::DerefObjectName(abbrev(option)?)),
        "objecttype" => no_option(Atom::ObjectType),
        "*objecttype" => no_option(Atom::DerefObjectType),
        "upstream" | "push" => Ok(Atom::Tracking),
        // Git ignores anything after `HEAD:`.
        "HEAD" => Ok(Atom::Head),
        _ => Err(fatal(format!("unknown field name: {name}"))),
    }
}

/// git's default abbreviation for small repositories.
pub const DEFAULT_ABBREV: usize = 7;
const MIN_ABBREV: usize = 4;

/// What a ref shows; the values that need the object database are looked
/// up only when a format or sort key asks for them.
pub struct Fields<'a> {
    /// The ref.
    pub name: &'a RefName,
    /// The object it resolves to.
    pub id: &'a ObjectId,
    /// Its target, if symbolic.
    pub symref: Option<&'a RefName>,
    /// Whether HEAD points at it.
    pub is_head: bool,
}

/// Object lookups the object atoms need.
pub trait Objects {
    /// `commit`, `tree`, `blob` or `tag`; `None` if the object is missing.
    fn kind(&self, id: &ObjectId) -> Option<&'static str>;
    /// For an annotated tag, the object it points at (one level).
    fn tagged(&self, id: &ObjectId) -> Option<ObjectId>;
}

/// Renders one atom.
pub fn render_atom(
    atom: &Atom,
    fields: &Fields<'_>,
    objects: &dyn Objects,
    shorten: &dyn Fn(&RefName) -> Vec<u8>,
) -> Vec<u8> {
    let hex = |id: &ObjectId, abbrev: &Option<usize>| {
        let full = id.to_hex();
        let len = abbrev.map_or(full.len(), |n| n.min(full.len()));
        full.as_bytes()[..len].to_vec()
    };
    match atom {
        Atom::RefName(form) => show_name(fields.name, form, shorten),
        Atom::Symref(form) => fields
            .symref
            .map(|t| show_name(t, form, shorten))
            .unwrap_or_default(),
        Atom::ObjectName(abbrev) => hex(fields.id, abbrev),
        Atom::ObjectType => objects
            .kind(fields.id)
            .map(|k| k.as_bytes().to_vec())
            .unwrap_or_default(),
        Atom::DerefObjectName(abbrev) => objects
            .tagged(fields.id)
            .map(|t| hex(&t, abbrev))
            .unwrap_or_default(),
        Atom::DerefObjectType => objects
            .tagged(fields.id)
            .and_then(|t| objects.kind(&t))
            .map(|k| k.as_bytes().to_vec())
            .unwrap_or_default(),
        Atom::Tracking => Vec::new(),
        Atom::Head => if fields.is_head { b"*" } else { b" " }.to_vec(),
    }
}

fn show_name(name: &RefName, form: &NameForm, shorten: &dyn Fn(&RefName) -> Vec<u8>) -> Vec<u8> {
    let bytes = name.as_bytes();
    let parts: Vec<&[u8]> = bytes.split(|&b| b == b'/').collect();
    let n = parts.len() as i64;
    let keep = |from: i64, to: i64| {
        let (from, to) = (from.clamp(0, n) as usize, to.clamp(0, n) as usize);
        if from >= to {
            Vec::new()
        } else {
            parts[from..to].join(&b'/')
        }
    };
    match form {
        NameForm::Full => bytes.to_vec(),
        NameForm::Short => shorten(name),
        NameForm::LStrip(k) if *k >= 0 => keep(*k, n),
        NameForm::LStrip(k) => keep(n + k, n),
        NameForm::RStrip(k) if *k >= 0 => keep(0, n - k),
        NameForm::RStrip(k) => keep(0, -k),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_literals_escapes_and_atoms() {
        let pieces = parse("%%|%41|%(refname:lstrip=1)%(objectname:short=10)").unwrap();
        assert_eq!(
            pieces,
            vec![
                Piece::Literal(b"%|A|".to_vec()),
                Piece::Atom(Atom::RefName(NameForm::LStrip(1))),
                Piece::Atom(Atom::ObjectName(Some(10))),
            ]
        );
    }

    #[test]
    fn errors_in_gits_words() {
        let err = parse("%(refname").unwrap_err();
        assert_eq!(err.message, "malformed format string %(refname");
        assert!(err.usage);
        assert_eq!(
            parse("%(foo)").unwrap_err().message,
            "unknown field name: foo"
        );
        assert_eq!(
            parse("%(refname:bogus)").unwrap_err().message,
            "unrecognized %(refname:bogus) argument: bogus"
        );
    }

    #[test]
    fn strips_components() {
        let name = RefName::new("refs/heads/a/b").unwrap();
        let short = |_: &RefName| b"a/b".to_vec();
        let show = |f: NameForm| String::from_utf8(show_name(&name, &f, &short)).unwrap();
        assert_eq!(show(NameForm::LStrip(2)), "a/b");
        assert_eq!(show(NameForm::LStrip(-1)), "b");
        assert_eq!(show(NameForm::RStrip(1)), "refs/heads/a");
        assert_eq!(show(NameForm::RStrip(-1)), "refs");
        assert_eq!(show(NameForm::LStrip(9)), "");
    }
}
