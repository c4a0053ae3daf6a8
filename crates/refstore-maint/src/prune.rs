//! Pruning unreachable loose objects older than `gc.pruneExpire` (two
//! weeks by default; `never` keeps everything), as `git prune
//! --expire=<date>` does, before the `loose-objects` task packs the rest.
//!
//! Reachable is: from every ref, `HEAD`, every reflog entry (old and new
//! values), and every loose object younger than the expiry — an object
//! something wrote recently may be part of an operation in flight (a
//! push whose refs are not updated yet), so what it reaches is kept too,
//! as git keeps it. An object's age is looked at once more after the refs
//! were read, just before it is removed: a push that brought an object
//! the repository already had (unreachable and old) freshens the
//! existing file instead of writing it, and then updates its refs, so a
//! judgement made before the refs were read would remove an object a ref
//! is about to name. Git stops there, leaving a window between that last
//! look and the unlink in which a push can freshen the object and lose it
//! all the same. Here the object is renamed aside first and its age
//! looked at once more under the new name: freshened before it went, it
//! is put back (and its name flushed); freshened after, the push found it
//! gone and linked its own copy. Either way nothing a push is about to
//! name is lost. What remains is a moment, between the rename and the
//! putting back of an object freshened in the instant before, in which
//! readers do not find it (and a crash then loses it). The walk reads
//! commits, trees and tags only (a tree entry's mode says it names a
//! blob), and runs only when some loose object is old enough to go.
//!
//! Conservative where it cannot see everything: nothing is pruned in a
//! repository with a work-tree index or linked worktrees (objects staged
//! there are not walked), in a reftable repository (its reflogs are not
//! read here).
//!
//! A cluster node's copy ([`Repo::cluster_copy`]) judges by etcd's refs
//! and its grace period instead ([`crate::reach::cluster`]), and prunes
//! nothing while it lacks objects those refs reach.

use crate::error::MaintError;
use crate::loose_files::LooseObject;
use crate::repo::Repo;
use refstore_refs::ObjectId;
use std::path::Path;
use std::time::SystemTime;

/// Removes the old, unreachable objects among `loose` (none of them is in
/// a pack); returns those that remain and how many were pruned.
pub fn prune(
    repo: &Repo,
    loose: Vec<LooseObject>,
) -> Result<(Vec<LooseObject>, usize), MaintError> {
    let Some(expiry) = repo.maint.prune_expire else {
        return Ok((loose, 0));
    };
    if repo.cluster_copy {
        return prune_cluster_copy(repo, loose);
    }
    let now = SystemTime::now();
    let old_at = |path: &Path| {
        repo.vfs
            .stat(path)
            .is_ok_and(|meta| now.duration_since(meta.modified).unwrap_or_default() >= expiry)
    };
    let is_old = |object: &LooseObject| old_at(&object.path);
    let old: Vec<bool> = loose.iter().map(is_old).collect();
    if !old.iter().any(|&o| o) || !can_see_all_roots(repo) {
        return Ok((loose, 0));
    }
    let Some(refs) = &repo.refs else {
        return Ok((loose, 0));
    };
    let mut roots = crate::reach::ref_tips(refs.as_ref())?;
    reflog_ids(repo, &repo.git_dir().join("logs"), &mut roots)?;
    for (object, &old) in loose.iter().zip(&old) {
        if !old {
            if let Some(id) = ObjectId::from_raw(&object.id) {
                roots.push(id);
            }
        }
    }
    let reachable = crate::reach::walk(repo, roots)?.ids;
    let mut kept = Vec::with_capacity(loose.len());
    let mut pruned = 0;
    for (object, old) in loose.into_iter().zip(old) {
        // Its age is judged again now, after the refs were read: a push
        // that freshened it since (its quarantine held a copy) may be
        // about to point a ref at it, and git's prune likewise looks at
        // an object's time only just before removing it.
        if old && !reachable.contains(&object.id) && is_old(&object) {
            if !remove_unless_freshened(repo, &object, &old_at)? {
                kept.push(object);
                continue;
            }
            pruned += 1;
            if let Some(dir) = object.path.parent() {
                let _ = repo.vfs.rmdir(dir);
            }
        } else {
            kept.push(object);
        }
    }
    Ok((kept, pruned))
}

/// Removes `object` unless it was freshened before it was taken out of
/// sight: renamed aside, then judged by `old_at` under its new name, then
/// removed, or put back with its name flushed. True if it was removed.
fn remove_unless_freshened(
    repo: &Repo,
    object: &LooseObject,
    old_at: &dyn Fn(&Path) -> bool,
) -> Result<bool, MaintError> {
    let (Some(dir), Some(name)) = (object.path.parent(), object.path.file_name()) else {
        return Ok(false);
    };
    // A temporary name, as git's and refstore's housekeeping know them:
    // left by a crash, it is removed once old.
    let aside = dir.join(format!("tmp_pruned_{}", name.to_string_lossy()));
    match repo.vfs.rename(&object.path, &aside) {
        Ok(()) => {}
        Err(e) if e.is_not_found() => return Ok(false),
        Err(e) => return Err(e.into()),
    }
    if old_at(&aside) {
        repo.vfs.unlink(&aside)?;
        return Ok(true);
    }
    match repo.vfs.link(&aside, &object.path) {
        // Already written again: the same content, since names are hashes.
        Ok(()) => {}
        Err(e) if e.is_already_exists() => {}
        Err(e) => return Err(e.into()),
    }
    repo.vfs.fsync_dir(dir)?;
    repo.vfs.unlink(&aside)?;
    Ok(false)
}

fn can_see_all_roots(repo: &Repo) -> bool {
    let vfs = repo.vfs.as_ref();
    let is_files = repo.refs.as_ref().is_some_and(|r| r.as_files().is_some());
    is_files
        && !vfs.exists(&repo.git_dir().join("index"))
        && !vfs.exists(&repo.common_dir().join("worktrees"))
}

/// Old and new ids of every reflog line below `dir`.
fn reflog_ids(repo: &Repo, dir: &Path, out: &mut Vec<ObjectId>) -> Result<(), MaintError> {
    let entries = match repo.vfs.read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.is_not_found() => return Ok(()),
        Err(e) => return Err(e.into()),
    };
    for entry in entries {
        let path = dir.join(&entry.name);
        match entry.kind {
            refstore_fs::FileKind::Dir => reflog_ids(repo, &path, out)?,
            refstore_fs::FileKind::File => {
                let content = match repo.vfs.read(&path) {
                    Ok(content) => content,
                    Err(e) if e.is_not_found() => continue,
                    Err(e) => return Err(e.into()),
                };
                for line in content.split(|&b| b == b'\n') {
                    let mut words = line.split(|&b| b == b' ');
                    for word in [words.next(), words.next()].into_iter().flatten() {
                        if let Ok(id) = ObjectId::from_hex_in(word, repo.object_format()) {
                            out.push(id);
                        }
                    }
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// [`prune`] for a cluster node's copy: old loose objects that neither
/// etcd's refs nor a young object reach go, each renamed aside and judged
/// once more as on a single server.
fn prune_cluster_copy(
    repo: &Repo,
    loose: Vec<LooseObject>,
) -> Result<(Vec<LooseObject>, usize), MaintError> {
    let Some(grace) = crate::reach::cluster_grace(repo) else {
        return Ok((loose, 0));
    };
    let old_at = |path: &Path| {
        repo.vfs.stat(path).is_ok_and(|meta| {
            SystemTime::now()
                .duration_since(meta.modified)
                .unwrap_or_default()
                >= grace
        })
    };
    if !loose.iter().any(|o| old_at(&o.path)) {
        return Ok((loose, 0));
    }
    let Some(reach) = crate::reach::cluster(repo)? else {
        return Ok((loose, 0));
    };
    let mut kept = Vec::with_capacity(loose.len());
    let mut pruned = 0;
    for object in loose {
        let prunable = !reach.reachable.contains(&object.id) && old_at(&object.path);
        if prunable && remove_unless_freshened(repo, &object, &old_at)? {
            pruned += 1;
            if let Some(dir) = object.path.parent() {
                let _ = repo.vfs.rmdir(dir);
            }
        } else {
            kept.push(object);
        }
    }
    Ok((kept, pruned))
}
