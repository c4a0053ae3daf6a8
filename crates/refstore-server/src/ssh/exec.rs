//! The command of an SSH `exec` request, as git's ssh transport sends it:
//! `git-upload-pack '<repo>'` or `git-receive-pack '<repo>'` (also with a
//! space, `git upload-pack '<repo>'`), the path quoted the way git quotes
//! for a shell: in single quotes, a quote written `'\''` and an
//! exclamation mark `'\!'`.

pub use crate::service::Service;

/// A command to serve.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Command {
    /// What to run.
    pub service: Service,
    /// The repository as the client named it (unquoted), for messages.
    pub path: String,
}

impl Command {
    /// The repository's path relative to the served root: the leading `/`
    /// of `ssh://host/repo` and the `~/` of `ssh://host/~/repo` go, since
    /// every repository lives below the root.
    pub fn relative(&self) -> &str {
        let path = self.path.strip_prefix('~').unwrap_or(&self.path);
        path.trim_start_matches('/')
    }
}

/// Why a command is not served; the text is for the user.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Refused(pub String);

/// Parses the command of an `exec` request.
pub fn parse(command: &[u8]) -> Result<Command, Refused> {
    let text =
        std::str::from_utf8(command).map_err(|_| Refused("the command is not UTF-8".to_owned()))?;
    let unknown = || {
        let shown: String = text.chars().take(80).collect();
        Refused(format!(
            "'{}': only git-upload-pack and git-receive-pack are served here",
            shown.escape_debug()
        ))
    };
    let (name, argument) = text.split_once(' ').ok_or_else(unknown)?;
    let (name, argument) = match name {
        "git" => {
            let (sub, argument) = argument.split_once(' ').ok_or_else(unknown)?;
            (format!("git-{sub}"), argument)
        }
        _ => (name.to_owned(), argument),
    };
    let service = Service::from_name(&name).ok_or_else(unknown)?;
    let path = dequote(argument.trim()).ok_or_else(|| {
        Refused(format!(
            "{}: the repository must be one argument, quoted as git quotes it",
            service.name()
        ))
    })?;
    if path.is_empty() || path.contains('\0') {
        return Err(Refused(format!("{}: no repository named", service.name())));
    }
    Ok(Command { service, path })
}

/// Undoes git's shell quoting (`sq_quote`). An unquoted word without
/// quotes, backslashes or blanks is taken as it is, as some clients send
/// one.
fn dequote(argument: &str) -> Option<String> {
    if !argument.starts_with('\'') {
        let plain = !argument.is_empty()
            && !argument
                .chars()
                .any(|c| c.is_whitespace() || matches!(c, '\'' | '"' | '\\'));
        return plain.then(|| argument.to_owned());
    }
    let mut out = String::new();
    let mut rest = argument;
    loop {
        // Inside quotes: everything up to the closing quote is literal.
        rest = rest.strip_prefix('\'')?;
        let end = rest.find('\'')?;
        out.push_str(&rest[..end]);
        rest = &rest[end + 1..];
        if rest.is_empty() {
            return Some(out);
        }
        // Between quoted parts only an escaped quote or `!` may come.
        let mut chars = rest.chars();
        match (chars.next(), chars.next()) {
            (Some('\\'), Some(c @ ('\'' | '!'))) => out.push(c),
            _ => return None,
        }
        rest = &rest[2..];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(command: &str) -> Command {
        parse(command.as_bytes()).unwrap()
    }

    #[test]
    fn git_commands_in_both_spellings() {
        let c = ok("git-upload-pack '/team/proj.git'");
        assert_eq!(c.service, Service::UploadPack);
        assert_eq!(c.path, "/team/proj.git");
        assert_eq!(c.relative(), "team/proj.git");
        let c = ok("git-receive-pack 'proj.git'");
        assert_eq!(c.service, Service::ReceivePack);
        assert_eq!(c.relative(), "proj.git");
        assert_eq!(ok("git upload-pack '/a'").service, Service::UploadPack);
        assert_eq!(ok("git receive-pack '/a'").service, Service::ReceivePack);
        assert_eq!(ok("git-upload-pack '~/a.git'").relative(), "a.git");
        assert_eq!(ok("git-upload-pack /plain.git").relative(), "plain.git");
    }

    #[test]
    fn quotes_are_undone_as_git_writes_them() {
        assert_eq!(ok(r"git-upload-pack '/it'\''s.git'").path, "/it's.git");
        assert_eq!(ok(r"git-upload-pack '/wow'\!'.git'").path, "/wow!.git");
        assert_eq!(ok("git-upload-pack '/a b.git'").path, "/a b.git");
        for bad in [
            "git-upload-pack '/a",
            "git-upload-pack '/a'b'",
            r"git-upload-pack '/a'\x'b'",
            "git-upload-pack /a b",
            "git-upload-pack \"/a\"",
            "git-upload-pack ''",
            "git-upload-pack '/a\0b'",
        ] {
            assert!(parse(bad.as_bytes()).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn other_commands_are_refused_by_name() {
        for command in [
            "ls",
            "git-upload-archive '/a'",
            "rm -rf /",
            "git",
            "git status now",
            "upload-pack '/a'",
            "git git-upload-pack '/a'",
            "",
        ] {
            let refused = parse(command.as_bytes()).unwrap_err();
            assert!(
                refused
                    .0
                    .contains("only git-upload-pack and git-receive-pack"),
                "{command}: {refused}"
            );
        }
        assert!(parse(b"\xff\xfe").is_err());
    }
}
