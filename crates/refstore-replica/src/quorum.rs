//! The quorum step of a push: its packs are sent to the peers in
//! parallel, and the push's refs may change once `object_copies` nodes,
//! this one included, hold them durably. Peers that answer after the
//! quorum is reached still get the packs (their threads run on); a peer
//! that cannot be reached within the timeout does not count, and if too
//! few can, every ref of the push is refused.

use crate::packs::{self, PackFile};
use crate::Replica;
use refstore_protocol::Repository;
use std::sync::mpsc;
use std::sync::Arc;

impl Replica {
    /// Sends the packs `packs` of `repo` (named `name` on every node) to
    /// peers until `object_copies` nodes hold them; the reason for the
    /// user if they cannot.
    pub fn replicate(&self, repo: &Repository, name: &str, packs: &[String]) -> Result<(), String> {
        let wanted = self.peers.object_copies.saturating_sub(1);
        if wanted == 0 || packs.is_empty() {
            return Ok(());
        }
        let refused = |held: usize| {
            format!(
                "cluster: objects reached {held} of {} nodes; push refused",
                self.peers.object_copies
            )
        };
        let mut contents = Vec::with_capacity(packs.len());
        for pack in packs {
            match packs::read(repo, pack, PackFile::Pack) {
                Ok(Some(bytes)) => contents.push((pack.clone(), bytes)),
                Ok(None) => {
                    tracing::error!(repo = name, pack, "a pushed pack is not in the repository");
                    return Err(refused(0));
                }
                Err(e) => {
                    tracing::error!(repo = name, pack, "cannot read a pushed pack: {e}");
                    return Err(refused(0));
                }
            }
        }
        let contents = Arc::new(contents);
        let (done, results) = mpsc::channel();
        let mut asked = 0;
        for (node, base) in self.others() {
            let (done, contents) = (done.clone(), contents.clone());
            let repo = name.to_owned();
            let client = self.client.clone();
            let started = std::thread::Builder::new()
                .name("refstore-replicate".into())
                .spawn(move || {
                    let result = send_all(&client, &base, &repo, &contents);
                    if let Err(e) = &result {
                        tracing::warn!(node, repo, "cannot replicate a push: {e}");
                    }
                    let _ = done.send(result.is_ok());
                });
            match started {
                Ok(_) => asked += 1,
                Err(e) => tracing::error!("cannot start a replication thread: {e}"),
            }
        }
        drop(done);
        let mut held = 0;
        for stored in results.iter().take(asked) {
            held += usize::from(stored);
            if held >= wanted {
                return Ok(());
            }
        }
        Err(refused(1 + held))
    }
}

/// Sends every pack to one peer; each must come back stored under its
/// own name.
fn send_all(
    client: &crate::Client,
    base: &str,
    repo: &str,
    contents: &[(String, Vec<u8>)],
) -> Result<(), String> {
    for (name, bytes) in contents {
        let stored = client.send(base, repo, bytes)?;
        if stored != *name {
            return Err(format!("pack {name} was stored as '{stored}'"));
        }
    }
    Ok(())
}
