//! Enumerating what the disk may hold after a crash.
//!
//! Everything that was not flushed is an *uncertain item* with a few possible
//! outcomes:
//!
//! - a directory entry whose durable and current values differ (created,
//!   removed, or pointed at another inode by a rename): the durable value or
//!   the current one, chosen per entry, so a rename may survive on one side
//!   and not the other (both names, or neither, can appear);
//! - a file whose durable and current contents differ: the durable content,
//!   the current content, empty, or zero-filled to the current length.
//!
//! A crash state picks one outcome per item. Small sets of items are
//! enumerated exhaustively; larger ones yield the pessimistic state (every
//! item at its durable value), the "metadata without data" state (every entry
//! current, every unflushed file zero-filled), the optimistic state, and a
//! seeded random sample.

use super::state::{Ino, Node, State, ROOT};
use std::collections::{BTreeMap, HashMap};
use std::ffi::OsString;
use std::path::PathBuf;

/// One thing that may or may not have reached the disk.
#[derive(Debug, Clone)]
enum Item {
    Entry {
        dir: Ino,
        name: OsString,
        durable: Option<Ino>,
        current: Option<Ino>,
    },
    Data {
        ino: Ino,
        outcomes: Vec<(DataOutcome, Vec<u8>)>,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DataOutcome {
    Durable,
    Current,
    Empty,
    ZeroFilled,
}

impl Item {
    fn outcomes(&self) -> usize {
        match self {
            Item::Entry { .. } => 2,
            Item::Data { outcomes, .. } => outcomes.len(),
        }
    }
}

/// A crash state: the resulting disk, and which outcome each item took.
pub(crate) struct CrashState {
    pub state: State,
    pub description: String,
}

/// The uncertain items of `state`, and a path for every inode (for
/// describing crash states).
fn uncertain_items(state: &State) -> (Vec<Item>, HashMap<Ino, PathBuf>) {
    let mut items = Vec::new();
    let mut seen = vec![false; state.inodes.len()];
    let mut stack = vec![ROOT];
    let mut paths: HashMap<Ino, PathBuf> = HashMap::from([(ROOT, PathBuf::from("/"))]);
    while let Some(ino) = stack.pop() {
        if std::mem::replace(&mut seen[ino], true) {
            continue;
        }
        match &state.inodes[ino].node {
            Node::File { current, durable } => {
                if current != durable {
                    let mut outcomes = vec![
                        (DataOutcome::Durable, durable.clone()),
                        (DataOutcome::Current, current.clone()),
                    ];
                    if !durable.is_empty() && !current.is_empty() {
                        outcomes.push((DataOutcome::Empty, Vec::new()));
                    }
                    if current.iter().any(|&b| b != 0) {
                        outcomes.push((DataOutcome::ZeroFilled, vec![0; current.len()]));
                    }
                    items.push(Item::Data { ino, outcomes });
                }
            }
            Node::Dir { current, durable } => {
                let names: std::collections::BTreeSet<&OsString> =
                    current.keys().chain(durable.keys()).collect();
                for name in names {
                    let (d, c) = (durable.get(name).copied(), current.get(name).copied());
                    let dir_path = paths[&ino].clone();
                    for child in [d, c].into_iter().flatten() {
                        paths.entry(child).or_insert_with(|| dir_path.join(name));
                        stack.push(child);
                    }
                    if d != c {
                        items.push(Item::Entry {
                            dir: ino,
                            name: name.clone(),
                            durable: d,
                            current: c,
                        });
                    }
                }
            }
        }
    }
    (items, paths)
}

fn path_of(paths: &HashMap<Ino, PathBuf>, ino: Ino) -> PathBuf {
    paths
        .get(&ino)
        .cloned()
        .unwrap_or_else(|| PathBuf::from(format!("<inode {ino}>")))
}

/// Builds the disk for one choice of outcomes (`choice[i]` for item i).
fn realize(
    state: &State,
    items: &[Item],
    paths: &HashMap<Ino, PathBuf>,
    choice: &[usize],
) -> CrashState {
    let mut entries: HashMap<(Ino, &OsString), Option<Ino>> = HashMap::new();
    let mut data: HashMap<Ino, &Vec<u8>> = HashMap::new();
    let mut description = Vec::new();
    for (item, &pick) in items.iter().zip(choice) {
        match item {
            Item::Entry {
                dir,
                name,
                durable,
                current,
            } => {
                let (label, value) = if pick == 0 {
                    ("lost", *durable)
                } else {
                    ("kept", *current)
                };
                entries.insert((*dir, name), value);
                description.push(format!(
                    "entry {}: change {label}",
                    path_of(paths, *dir).join(name).display()
                ));
            }
            Item::Data { ino, outcomes } => {
                let (outcome, bytes) = &outcomes[pick];
                data.insert(*ino, bytes);
                description.push(format!(
                    "data of {}: {outcome:?}",
                    path_of(paths, *ino).display()
                ));
            }
        }
    }

    let mut out = State::new();
    out.clock = state.clock;
    let mut mapped: HashMap<Ino, Ino> = HashMap::from([(ROOT, ROOT)]);
    let mut stack = vec![ROOT];
    while let Some(old) = stack.pop() {
        let new = mapped[&old];
        let Node::Dir { current, durable } = &state.inodes[old].node else {
            continue;
        };
        let mut chosen: BTreeMap<OsString, Ino> = BTreeMap::new();
        for name in current.keys().chain(durable.keys()) {
            let value = match entries.get(&(old, name)) {
                Some(v) => *v,
                None => current.get(name).copied(),
            };
            if let Some(child) = value {
                let child_new = match mapped.get(&child) {
                    Some(&n) => n,
                    None => {
                        let node = match &state.inodes[child].node {
                            Node::File { current, durable } => {
                                let bytes = match data.get(&child) {
                                    Some(b) => (*b).clone(),
                                    None if current == durable => current.clone(),
                                    None => durable.clone(),
                                };
                                Node::File {
                                    current: bytes.clone(),
                                    durable: bytes,
                                }
                            }
                            Node::Dir { .. } => {
                                stack.push(child);
                                Node::Dir {
                                    current: BTreeMap::new(),
                                    durable: BTreeMap::new(),
                                }
                            }
                        };
                        out.inodes.push(super::state::Inode {
                            node,
                            mtime: state.inodes[child].mtime,
                        });
                        let n = out.inodes.len() - 1;
                        mapped.insert(child, n);
                        n
                    }
                };
                chosen.insert(name.clone(), child_new);
            }
        }
        out.inodes[new].node = Node::Dir {
            current: chosen.clone(),
            durable: chosen,
        };
    }
    CrashState {
        state: out,
        description: if description.is_empty() {
            "nothing was pending: the disk is as the program left it".into()
        } else {
            description.join("\n")
        },
    }
}

/// A small deterministic generator (splitmix64), so failures reproduce.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// The crash states of `state` (see the module docs for which ones).
pub(crate) fn crash_states(
    state: &State,
    exhaustive_limit: usize,
    samples: usize,
    seed: u64,
) -> Vec<CrashState> {
    let (items, paths) = uncertain_items(state);
    let counts: Vec<usize> = items.iter().map(Item::outcomes).collect();
    let total = counts
        .iter()
        .try_fold(1usize, |acc, &c| acc.checked_mul(c))
        .unwrap_or(usize::MAX);
    let mut choices: Vec<Vec<usize>> = Vec::new();
    if total <= exhaustive_limit {
        let mut choice = vec![0; items.len()];
        loop {
            choices.push(choice.clone());
            let mut i = 0;
            loop {
                if i == choice.len() {
                    return choices
                        .iter()
                        .map(|c| realize(state, &items, &paths, c))
                        .collect();
                }
                choice[i] += 1;
                if choice[i] < counts[i] {
                    break;
                }
                choice[i] = 0;
                i += 1;
            }
        }
    }
    choices.push(vec![0; items.len()]);
    choices.push(
        items
            .iter()
            .map(|item| match item {
                Item::Entry { .. } => 1,
                Item::Data { outcomes, .. } => outcomes.len() - 1,
            })
            .collect(),
    );
    choices.push(vec![1; items.len()]);
    let mut rng = Rng(seed);
    for _ in 0..samples {
        choices.push(
            counts
                .iter()
                .map(|&c| (rng.next() % c as u64) as usize)
                .collect(),
        );
    }
    choices
        .iter()
        .map(|c| realize(state, &items, &paths, c))
        .collect()
}
