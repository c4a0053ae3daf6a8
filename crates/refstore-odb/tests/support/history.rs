//! Random histories for property tests, written by `git fast-import`:
//! commits on a few branches (editing a few files in two directories,
//! growing them so that packs hold deltas), merges between branches and
//! annotated tags.

use proptest::prelude::*;

/// Branches a history uses: `refs/heads/b0` .. `b3`.
pub const BRANCHES: u8 = 4;

/// One step of a history.
#[derive(Debug, Clone)]
pub enum Op {
    /// A commit on a branch changing one file.
    Commit { branch: u8, file: u8, lines: u8 },
    /// A merge of one branch into another.
    Merge { into: u8, from: u8 },
    /// An annotated tag on a branch's tip.
    Tag { branch: u8 },
}

/// A random step.
pub fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0..BRANCHES, 0u8..6, 1u8..40)
            .prop_map(|(branch, file, lines)| Op::Commit { branch, file, lines }),
        2 => (0..BRANCHES, 0..BRANCHES).prop_map(|(into, from)| Op::Merge { into, from }),
        1 => (0..BRANCHES).prop_map(|branch| Op::Tag { branch }),
    ]
}

/// Writes histories in one or more `git fast-import` runs on one
/// repository, continuing the branches of the runs before.
#[derive(Default)]
pub struct Writer {
    /// Which branches exist in the repository.
    exists: [bool; BRANCHES as usize],
    /// Steps written so far, for unique times, marks and names.
    steps: usize,
}

impl Writer {
    /// The fast-import stream of `ops` on top of what earlier streams made.
    /// The first run always starts `b0` with a commit.
    pub fn stream(&mut self, ops: &[Op]) -> Vec<u8> {
        let mut out = String::new();
        // Branch tips made in this stream, as marks.
        let mut tips: [Option<usize>; BRANCHES as usize] = [None; BRANCHES as usize];
        let mut ops = ops.to_vec();
        if !self.exists[0] {
            ops.insert(
                0,
                Op::Commit {
                    branch: 0,
                    file: 0,
                    lines: 3,
                },
            );
        }
        for op in ops {
            self.steps += 1;
            let step = self.steps;
            let time = 1_700_000_000 + 10 * step;
            let tip = |tips: &[Option<usize>; 4], exists: &[bool; 4], b: u8| -> Option<String> {
                match tips[b as usize] {
                    Some(mark) => Some(format!(":{mark}")),
                    None if exists[b as usize] => Some(format!("refs/heads/b{b}^0")),
                    None => None,
                }
            };
            match op {
                Op::Commit {
                    branch,
                    file,
                    lines,
                } => {
                    let parent =
                        tip(&tips, &self.exists, branch).or_else(|| tip(&tips, &self.exists, 0));
                    out.push_str(&format!(
                        "commit refs/heads/b{branch}\nmark :{step}\n\
                         committer C <c@example.com> {time} +0000\ndata 8\nstep {step:03}\n"
                    ));
                    if let Some(parent) = parent {
                        out.push_str(&format!("from {parent}\n"));
                    }
                    let mut content = String::new();
                    for line in 0..u32::from(lines) * 3 {
                        content.push_str(&format!("file {file} line {line} of a text\n"));
                    }
                    content.push_str(&format!("changed at step {step}\n"));
                    out.push_str(&format!(
                        "M 100644 inline d{}/f{file}.txt\ndata {}\n{content}\n",
                        file % 2,
                        content.len()
                    ));
                    tips[branch as usize] = Some(step);
                    self.exists[branch as usize] = true;
                }
                Op::Merge { into, from } => {
                    let (Some(a), Some(b)) = (
                        tip(&tips, &self.exists, into),
                        tip(&tips, &self.exists, from),
                    ) else {
                        continue;
                    };
                    if into == from {
                        continue;
                    }
                    out.push_str(&format!(
                        "commit refs/heads/b{into}\nmark :{step}\n\
                         committer C <c@example.com> {time} +0000\ndata 8\nmerge{step:03}\n\
                         from {a}\nmerge {b}\n"
                    ));
                    tips[into as usize] = Some(step);
                }
                Op::Tag { branch } => {
                    let Some(target) = tip(&tips, &self.exists, branch) else {
                        continue;
                    };
                    out.push_str(&format!(
                        "tag t{step}\nfrom {target}\n\
                         tagger T <t@example.com> {time} +0000\ndata 4\ntag\n"
                    ));
                }
            }
        }
        out.into_bytes()
    }
}
