//! What the actors of an object exploration do, each through the library
//! as the server calls it, on the filesystem the explorer gives it: a push
//! (receive-pack: quarantine, connectivity check, migration, one ref
//! transaction), a ref deletion (a push of deletions), a fetch (upload-pack
//! protocol v2: `ls-refs`, then a `fetch` of every ref), and housekeeping
//! tasks. Each records what its client was told.

use refstore_fs::Vfs;
use refstore_maint::{Options, Repo, Task};
use refstore_protocol::pkt_line::sideband::SidebandReader;
use refstore_protocol::pkt_line::{Dialect, Packet, PacketReader};
use refstore_protocol::{receive_pack, upload_pack, ProtocolVersion, Repository};
use refstore_testsupport::pkt_line::pkt;
use std::io::Read;
use std::path::Path;
use std::sync::Arc;

pub const ZERO: &str = "0000000000000000000000000000000000000000";

/// One thing an actor does.
#[derive(Debug, Clone)]
pub enum Act {
    /// Push `pack` updating `name` from `old` to `new` (`ZERO`: created or
    /// deleted).
    Push {
        name: String,
        old: String,
        new: String,
        pack: Arc<Vec<u8>>,
    },
    /// Fetch every ref.
    Fetch,
    /// One housekeeping run of these tasks.
    Maintain(Vec<Task>),
}

/// What an act's client was told.
#[derive(Debug, Clone)]
pub enum Answer {
    /// The push's report: whether every command was `ok`, and the report.
    Pushed { ok: bool, report: String },
    /// The refs `ls-refs` listed and the pack the fetch received.
    Fetched {
        refs: Vec<(String, String)>,
        pack: Vec<u8>,
    },
    /// Housekeeping's summaries.
    Maintained(Vec<String>),
    /// The call failed.
    Failed(String),
}

/// Performs `act` on the repository at `git_dir` through `vfs`.
pub fn perform(act: &Act, vfs: Arc<dyn Vfs>, git_dir: &Path) -> Answer {
    // Every act opens the repository afresh, as a process of its own
    // does: no object database cache outlives it.
    let opened = match refstore_repo::Repository::open(vfs, git_dir, &[]) {
        Ok(opened) => opened,
        Err(e) => return Answer::Failed(format!("cannot open the repository: {e}")),
    };
    // Housekeeping opens what it reads itself; the services need the
    // refs and objects up front.
    if let Act::Maintain(tasks) = act {
        return maintain(opened, tasks);
    }
    let repo = match Repository::serve(opened) {
        Ok(repo) => repo,
        Err(e) => return Answer::Failed(format!("cannot open the repository: {e}")),
    };
    match act {
        Act::Push {
            name,
            old,
            new,
            pack,
        } => push(&repo, name, old, new, pack),
        Act::Fetch => fetch(&repo),
        Act::Maintain(_) => unreachable!("housekeeping returned above"),
    }
}

fn push(repo: &Repository, name: &str, old: &str, new: &str, pack: &[u8]) -> Answer {
    let mut input = pkt(format!("{old} {new} {name}\0report-status delete-refs").as_bytes());
    input.extend_from_slice(b"0000");
    if new != ZERO {
        input.extend_from_slice(pack);
    }
    let mut output = Vec::new();
    let options = receive_pack::Options {
        stateless_rpc: true,
        ..receive_pack::Options::default()
    };
    if let Err(e) = receive_pack::receive_pack(repo, &options, &mut &input[..], &mut output) {
        return Answer::Failed(format!("receive-pack: {e}"));
    }
    let mut report = String::new();
    let mut reader = PacketReader::new(&output[..], Dialect::V0);
    while let Ok(Some(Packet::Data(line))) = reader.read_text() {
        report.push_str(&String::from_utf8_lossy(line));
        report.push('\n');
    }
    let ok = report.lines().next() == Some("unpack ok")
        && report.lines().skip(1).all(|l| l.starts_with("ok "))
        && report.lines().count() > 1;
    Answer::Pushed { ok, report }
}

fn fetch(repo: &Repository) -> Answer {
    let options = upload_pack::Options {
        stateless_rpc: true,
        advertise_refs: false,
        version: ProtocolVersion::V2,
    };
    let mut listing = Vec::new();
    let ls_refs = [
        pkt(b"command=ls-refs\n"),
        b"0001".to_vec(),
        b"0000".to_vec(),
    ]
    .concat();
    if let Err(e) = upload_pack::upload_pack(repo, &options, &mut &ls_refs[..], &mut listing) {
        return Answer::Failed(format!("ls-refs: {e}"));
    }
    let mut refs = Vec::new();
    let mut reader = PacketReader::new(&listing[..], Dialect::V2);
    while let Ok(Some(Packet::Data(line))) = reader.read_text() {
        let line = String::from_utf8_lossy(line);
        if let Some((id, name)) = line.split_once(' ') {
            refs.push((name.to_owned(), id.to_owned()));
        }
    }
    let mut request = [pkt(b"command=fetch\n"), b"0001".to_vec()].concat();
    for (_, id) in &refs {
        request.extend_from_slice(&pkt(format!("want {id}\n").as_bytes()));
    }
    request.extend_from_slice(&pkt(b"ofs-delta\n"));
    request.extend_from_slice(&pkt(b"done\n"));
    request.extend_from_slice(b"0000");
    let mut response = Vec::new();
    if let Err(e) = upload_pack::upload_pack(repo, &options, &mut &request[..], &mut response) {
        return Answer::Failed(format!("fetch: {e}"));
    }
    let mut reader = PacketReader::new(&response[..], Dialect::V2);
    loop {
        match reader.read_text() {
            Ok(Some(Packet::Data(b"packfile"))) => break,
            Ok(Some(_)) => continue,
            other => return Answer::Failed(format!("no packfile section: {other:?}")),
        }
    }
    let mut pack = Vec::new();
    let mut progress = |_: &[u8]| {};
    match SidebandReader::new(&mut reader, &mut progress).read_to_end(&mut pack) {
        Ok(_) => Answer::Fetched { refs, pack },
        Err(e) => Answer::Failed(format!("the pack stream failed: {e}")),
    }
}

fn maintain(opened: refstore_repo::Repository, tasks: &[Task]) -> Answer {
    let maint = match Repo::new(opened) {
        Ok(maint) => maint,
        Err(e) => return Answer::Failed(format!("maintenance: {e}")),
    };
    let options = Options {
        auto: false,
        tasks: tasks.to_vec(),
    };
    match refstore_maint::run(&maint, &options) {
        Ok(Some(reports)) => Answer::Maintained(reports.into_iter().map(|r| r.summary).collect()),
        Ok(None) => Answer::Failed("maintenance found the repository busy".into()),
        Err(e) => Answer::Failed(format!("maintenance: {e}")),
    }
}
