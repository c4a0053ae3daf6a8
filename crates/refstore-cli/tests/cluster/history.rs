//! Histories of reads (`git ls-remote`) and compare-and-swaps (`git push
//! --force-with-lease`) of refs through cluster nodes, as the Porcupine
//! checker (`refstore_testsupport::porcupine`) judges them: the record of
//! each operation, how a push's outcome is read from git's output, and
//! the check of a whole history.

use refstore_testsupport::Git;
use std::fmt::Write as _;
use std::path::Path;
use std::process::{Command, Output};

/// One operation of a history.
pub struct Record {
    pub client: usize,
    pub reference: &'static str,
    /// `None` for a read.
    pub cas: Option<(String, String)>,
    /// What a read returned.
    pub value: String,
    /// Nanoseconds on the test's clock.
    pub call: u128,
    pub ret: u128,
    /// Porcupine's result: `ok`, `failed`, `refused` or `unknown`.
    pub result: &'static str,
}

impl Record {
    fn json(&self) -> String {
        let (kind, old, new) = match &self.cas {
            Some((old, new)) => ("cas", old.as_str(), new.as_str()),
            None => ("read", "", ""),
        };
        format!(
            "{{\"client\":{},\"ref\":\"{}\",\"kind\":\"{kind}\",\"old\":\"{old}\",\"new\":\"{new}\",\"value\":\"{}\",\"call\":{},\"return\":{},\"result\":\"{}\"}}",
            self.client, self.reference, self.value, self.call, self.ret, self.result
        )
    }
}

/// A small deterministic random sequence (xorshift).
pub struct Rng(pub u64);

impl Rng {
    /// A number below `n`.
    pub fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

/// git in the work tree `work`, never prompting.
pub fn git(home: &Path, work: &Path, args: &[&str]) -> Output {
    Git::new(home, work)
        .env("GIT_TERMINAL_PROMPT", "0")
        .run(args)
}

/// The value `git ls-remote <url> <ref>` printed (empty: no such ref).
pub fn read_value(output: &Output) -> String {
    crate::support::stdout(output)
        .split('\t')
        .next()
        .unwrap_or("")
        .trim()
        .to_owned()
}

/// What a `git push --force-with-lease` that printed `out` (standard
/// output and error) did, for the checker: `ok` if it succeeded;
/// `failed` if the ref held another value; `refused` if the server
/// refused it before changing anything (its refs could not be
/// advertised, or its objects reached too few nodes); else `unknown`.
pub fn push_result(succeeded: bool, out: &str) -> &'static str {
    if succeeded {
        "ok"
    } else if out.contains("stale info")
        || out.contains("is at")
        || out.contains("reference already exists")
        || out.contains("unable to resolve reference")
    {
        "failed"
    } else if out.contains("The requested URL returned error: 503")
        || (out.contains("cluster: objects reached") && out.contains("push refused"))
    {
        "refused"
    } else {
        "unknown"
    }
}

/// Writes `history` to `dir/history.json` and has the checker at
/// `checker` judge it: `Ok` if linearizable, else the checker's words.
pub fn check(checker: &Path, dir: &Path, history: &[Record]) -> Result<(), String> {
    let mut json = String::from("[\n");
    for (i, record) in history.iter().enumerate() {
        let _ = writeln!(json, "{}{}", if i > 0 { "," } else { "" }, record.json());
    }
    json.push(']');
    let file = dir.join("history.json");
    std::fs::write(&file, json).unwrap();
    let o = Command::new(checker).arg(&file).output().unwrap();
    if o.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{}{}",
            crate::support::stdout(&o),
            crate::support::stderr(&o)
        ))
    }
}

/// Counts of a history's operations, for messages.
pub fn summary(history: &[Record]) -> String {
    let count = |cas: bool, result: &str| {
        history
            .iter()
            .filter(|r| r.cas.is_some() == cas && r.result == result)
            .count()
    };
    format!(
        "{} operations: {} reads, {} compare-and-swaps applied, {} failed, {} refused, {} unknown",
        history.len(),
        count(false, "ok"),
        count(true, "ok"),
        count(true, "failed"),
        count(true, "refused"),
        count(true, "unknown"),
    )
}

/// How many compare-and-swaps of `history` were applied, and how many
/// reads answered.
pub fn applied_and_read(history: &[Record]) -> (usize, usize) {
    let applied = history
        .iter()
        .filter(|r| r.cas.is_some() && r.result == "ok")
        .count();
    let read = history
        .iter()
        .filter(|r| r.cas.is_none() && r.result == "ok")
        .count();
    (applied, read)
}
