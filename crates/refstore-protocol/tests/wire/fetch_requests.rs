//! The generated corpus of upload-pack requests: advertisements in every
//! protocol version, v0/v1 fetches (stateless or not) with every
//! capability combination, shallow and deepen lines, filters and `have`
//! rounds, and v2 `ls-refs` and `fetch` commands.

use super::history::{Served, EPOCH};
use super::server::Invocation;
use refstore_testsupport::rng::Rng;

/// One request and how it is served.
pub struct Request {
    /// What it is, to find it again when it fails.
    pub label: String,
    pub how: Invocation,
    /// Index into the served repositories: 0 full, 1 unborn `HEAD`, 2 empty.
    pub repo: usize,
    pub input: Vec<u8>,
    /// Whether packets starting with 1, 2 or 3 are side-band packets.
    pub sideband: bool,
    /// In a v2 session of several fetch commands, the index among them of
    /// the first with client `shallow` lines or a deepen line, if another
    /// fetch follows it (the known difference `v2-session-grafts`).
    pub shallow_fetch_before_others: Option<usize>,
}

pub fn pkt(line: &str) -> Vec<u8> {
    let mut out = format!("{:04x}", line.len() + 4).into_bytes();
    out.extend_from_slice(line.as_bytes());
    out
}

pub const FLUSH: &[u8] = b"0000";
pub const DELIM: &[u8] = b"0001";

const AGENT: &str = "agent=wire-test/1.0";

/// The request number `n` of the corpus.
pub fn generate(rng: &mut Rng, repos: &[&Served; 3], n: usize) -> Request {
    match rng.below(10) {
        0 => advertisement(rng),
        1..=4 => v0_fetch(rng, repos[0], n),
        5 | 6 => {
            let repo = *rng.pick(&[0, 0, 1, 2]);
            v2_session(rng, repos[repo], repo, &[Command::LsRefs], n)
        }
        _ => v2_session(rng, repos[0], 0, &[Command::Fetch, Command::LsRefs], n),
    }
}

fn advertisement(rng: &mut Rng) -> Request {
    let version = *rng.pick(&[0, 1, 2]);
    let repo = rng.below(3);
    // Over HTTP the advertisement is a request of its own; over SSH the
    // client that only lists refs ends the session with a flush-pkt.
    let http = rng.chance(50);
    Request {
        label: format!("advertisement v{version} repo {repo} http {http}"),
        how: Invocation {
            service: "upload-pack",
            stateless_rpc: http,
            advertise_refs: http,
            version,
        },
        repo,
        input: if http { Vec::new() } else { FLUSH.to_vec() },
        sideband: false,
        shallow_fetch_before_others: None,
    }
}

/// Ids the client names: ref tips mostly, sometimes a commit that is no
/// tip, a tree, or an id nobody has.
fn want_ids(rng: &mut Rng, repo: &Served, stateless: bool) -> Vec<String> {
    let tips: Vec<String> = repo.refs.values().cloned().collect();
    let mut wants = rng.some(&tips, 3);
    if wants.is_empty() {
        wants.push(repo.id("refs/heads/main").to_owned());
    }
    if rng.chance(8) {
        // Refused in a stateful session, reachable over HTTP.
        wants.push(rng.pick(&repo.commits).id.clone());
    }
    if stateless && rng.chance(3) {
        wants.push(rng.pick(&repo.others).clone());
    }
    if rng.chance(2) {
        wants.push(unknown_id(rng));
    }
    wants
}

fn unknown_id(rng: &mut Rng) -> String {
    format!(
        "{:016x}{:016x}{:08x}",
        rng.next_u64(),
        rng.next_u64(),
        rng.next_u64() as u32
    )
}

/// The shallow part of a request: client `shallow` lines and a deepen
/// line, or nothing.
fn shallow_lines(rng: &mut Rng, repo: &Served, relative_ok: bool) -> (Vec<String>, bool) {
    let mut lines = Vec::new();
    if !rng.chance(35) {
        return (lines, false);
    }
    let commits: Vec<String> = repo.commits.iter().map(|c| c.id.clone()).collect();
    let client_shallows = rng.some(&commits, 2);
    for id in &client_shallows {
        lines.push(format!("shallow {id}"));
    }
    let mut relative = false;
    match rng.below(6) {
        0 => {}
        1 | 2 => {
            lines.push(format!("deepen {}", 1 + rng.below(4)));
            relative = relative_ok && !client_shallows.is_empty() && rng.chance(40);
        }
        3 if !client_shallows.is_empty() => lines.push("deepen 2147483647".to_owned()),
        3 | 4 => {
            let hours = repo.commits.len() as i64;
            let since = EPOCH + 3600 * (rng.below(hours as usize + 2) as i64);
            lines.push(format!("deepen-since {since}"));
        }
        _ => {
            let names = ["side", "refs/heads/side", "release", "v1", "refs/tags/v1"];
            let name = *rng.pick(&names);
            if repo.refs.contains_key(&format!("refs/heads/{name}"))
                || repo.refs.contains_key(&format!("refs/tags/{name}"))
                || repo.refs.contains_key(name)
            {
                lines.push(format!("deepen-not {name}"));
            }
        }
    }
    (lines, relative)
}

fn filter_line(rng: &mut Rng) -> Option<&'static str> {
    rng.chance(15).then(|| {
        *rng.pick(&[
            "filter blob:none",
            "filter tree:0",
            "filter blob:limit=100",
            "filter blob:limit=1k",
        ])
    })
}

/// `have` lines: ids the server has, ids it does not, or a mix.
fn haves(rng: &mut Rng, repo: &Served) -> Vec<String> {
    let count = rng.below(7);
    let common_share = *rng.pick(&[0, 50, 100, 100]);
    (0..count)
        .map(|_| {
            if rng.chance(common_share) {
                rng.pick(&repo.commits).id.clone()
            } else {
                unknown_id(rng)
            }
        })
        .collect()
}

fn v0_fetch(rng: &mut Rng, repo: &Served, n: usize) -> Request {
    let version = *rng.pick(&[0, 0, 1]);
    let stateless = rng.chance(50);
    let wants = want_ids(rng, repo, stateless);
    let capability_words = [
        "multi_ack",
        "multi_ack_detailed",
        "side-band",
        "side-band-64k",
        "thin-pack",
        "ofs-delta",
        "no-progress",
        "include-tag",
        "no-done",
        "shallow",
        "filter",
        AGENT,
    ];
    let mut capabilities = rng.some(&capability_words, capability_words.len());
    let (shallow, relative) = shallow_lines(rng, repo, true);
    if relative {
        capabilities.push("deepen-relative");
    }
    let filter = filter_line(rng);
    if filter.is_some() && !capabilities.contains(&"filter") && rng.chance(80) {
        capabilities.push("filter");
    }
    let mut input = Vec::new();
    for (i, want) in wants.iter().enumerate() {
        match i {
            0 if !capabilities.is_empty() => {
                input.extend(pkt(&format!("want {want} {}\n", capabilities.join(" "))))
            }
            _ => input.extend(pkt(&format!("want {want}\n"))),
        }
    }
    for line in &shallow {
        input.extend(pkt(&format!("{line}\n")));
    }
    if let Some(filter) = filter {
        input.extend(pkt(&format!("{filter}\n")));
    }
    input.extend(FLUSH);
    // Over HTTP a shallow fetch's first request ends after the wants.
    let wants_only = stateless && rng.chance(10);
    let mut rounds = 0;
    if !wants_only {
        rounds = rng.below(3);
        for _ in 0..rounds {
            for have in haves(rng, repo) {
                input.extend(pkt(&format!("have {have}\n")));
            }
            input.extend(FLUSH);
        }
        if !stateless || rounds == 0 || rng.chance(60) {
            for have in haves(rng, repo) {
                input.extend(pkt(&format!("have {have}\n")));
            }
            input.extend(pkt("done\n"));
        }
    }
    let sideband = capabilities.iter().any(|c| c.starts_with("side-band"));
    Request {
        label: format!(
            "#{n} v{version} fetch stateless {stateless} caps [{}] shallow {shallow:?} \
             filter {filter:?} rounds {rounds} wants-only {wants_only}",
            capabilities.join(" ")
        ),
        how: Invocation {
            service: "upload-pack",
            stateless_rpc: stateless,
            advertise_refs: false,
            version,
        },
        repo: 0,
        input,
        sideband,
        shallow_fetch_before_others: None,
    }
}

#[derive(Clone, Copy)]
enum Command {
    LsRefs,
    Fetch,
}

/// One v2 command (stateless) or a session of one to three.
fn v2_session(rng: &mut Rng, repo: &Served, index: usize, kinds: &[Command], n: usize) -> Request {
    let stateless = rng.chance(50);
    let commands = if stateless { 1 } else { 1 + rng.below(3) };
    let mut input = Vec::new();
    let mut labels = Vec::new();
    let mut sideband = false;
    let mut fetches = 0;
    let mut first_shallow_fetch = None;
    let mut shallow_fetch_before_others = None;
    for _ in 0..commands {
        let (bytes, label) = match rng.pick(kinds) {
            Command::LsRefs => ls_refs(rng),
            Command::Fetch => {
                sideband = true;
                let (bytes, label, shallow) = v2_fetch(rng, repo, stateless);
                if first_shallow_fetch.is_some() {
                    shallow_fetch_before_others = first_shallow_fetch;
                }
                if shallow && first_shallow_fetch.is_none() {
                    first_shallow_fetch = Some(fetches);
                }
                fetches += 1;
                (bytes, label)
            }
        };
        input.extend(bytes);
        labels.push(label);
    }
    if !stateless && rng.chance(50) {
        input.extend(FLUSH);
    }
    Request {
        label: format!(
            "#{n} v2 repo {index} stateless {stateless}: {}",
            labels.join("; ")
        ),
        how: Invocation {
            service: "upload-pack",
            stateless_rpc: stateless,
            advertise_refs: false,
            version: 2,
        },
        repo: index,
        input,
        sideband,
        shallow_fetch_before_others,
    }
}

/// The capability lines of a command.
fn command_start(rng: &mut Rng, command: &str) -> Vec<u8> {
    let mut input = pkt(&format!("command={command}\n"));
    if rng.chance(70) {
        input.extend(pkt(&format!("{AGENT}\n")));
    }
    if rng.chance(50) {
        input.extend(pkt("object-format=sha1\n"));
    }
    input
}

fn ls_refs(rng: &mut Rng) -> (Vec<u8>, String) {
    let mut input = command_start(rng, "ls-refs");
    let mut arguments: Vec<String> = Vec::new();
    for word in ["symrefs", "peel", "unborn"] {
        if rng.chance(50) {
            arguments.push(word.to_owned());
        }
    }
    let prefixes = [
        "HEAD",
        "refs/heads/",
        "refs/tags/",
        "refs/heads/ma",
        "refs/tags/v1",
        "refs/nothing/",
    ];
    for prefix in rng.some(&prefixes, 3) {
        arguments.push(format!("ref-prefix {prefix}"));
    }
    if !arguments.is_empty() || rng.chance(50) {
        input.extend(DELIM);
        for argument in &arguments {
            input.extend(pkt(&format!("{argument}\n")));
        }
    }
    input.extend(FLUSH);
    (input, format!("ls-refs {arguments:?}"))
}

/// The request, its label, and whether it is shallow.
fn v2_fetch(rng: &mut Rng, repo: &Served, stateless: bool) -> (Vec<u8>, String, bool) {
    let mut input = command_start(rng, "fetch");
    input.extend(DELIM);
    let mut arguments: Vec<String> = Vec::new();
    for want in want_ids(rng, repo, stateless) {
        arguments.push(format!("want {want}"));
    }
    let options = ["thin-pack", "no-progress", "include-tag", "ofs-delta"];
    arguments.extend(rng.some(&options, 4).into_iter().map(str::to_owned));
    let (shallow, relative) = shallow_lines(rng, repo, true);
    let is_shallow = !shallow.is_empty();
    arguments.extend(shallow);
    if relative {
        arguments.push("deepen-relative".to_owned());
    }
    if let Some(filter) = filter_line(rng) {
        arguments.push(filter.to_owned());
    }
    for have in haves(rng, repo) {
        arguments.push(format!("have {have}"));
    }
    if rng.chance(10) {
        arguments.push("wait-for-done".to_owned());
    }
    if rng.chance(50) {
        arguments.push("done".to_owned());
    }
    for argument in &arguments {
        input.extend(pkt(&format!("{argument}\n")));
    }
    input.extend(FLUSH);
    (input, format!("fetch {arguments:?}"), is_shallow)
}
