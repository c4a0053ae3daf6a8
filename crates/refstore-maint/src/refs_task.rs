//! The `pack-refs` task: the ref store's own housekeeping, through the
//! functions `refstore pack-refs` uses — loose refs moved into
//! `packed-refs` (`git pack-refs --all --prune`, as git's maintenance
//! task runs it) in the files format, the table stack compacted in the
//! reftable format.

use crate::error::MaintError;
use crate::repo::Repo;
use refstore_fs::config::Component;
use refstore_refs::files::pack::PackOptions;

/// Runs the task.
pub fn run(repo: &Repo) -> Result<String, MaintError> {
    if repo.cluster_copy {
        // The cluster's refs are etcd's, which the cluster keeps itself;
        // the copy's own ref store is not read.
        return Ok("refs kept by the cluster: skipped".into());
    }
    let Some(refs) = &repo.refs else {
        return Ok("no ref store given: skipped".into());
    };
    let flush = repo.settings.fsync.method_for(Component::Reference);
    if let Some(files) = refs.as_files() {
        let objects = repo.objects()?;
        let options = PackOptions {
            all: true,
            prune: true,
            flush,
            lock_timeout: repo.settings.files_ref_lock_timeout,
            packed_refs_timeout: repo.settings.packed_refs_timeout,
        };
        let outcome = files
            .pack_refs(&options, &|id| objects.peel(id).ok().flatten())
            .map_err(|e| MaintError::Refs(e.to_string()))?;
        return Ok(format!(
            "{} refs packed, {} loose files removed",
            outcome.packed, outcome.pruned
        ));
    }
    if let Some(reftable) = refs.as_reftable() {
        reftable
            .compact_all(flush)
            .map_err(|e| MaintError::Refs(e.to_string()))?;
        return Ok("reftable stack compacted".into());
    }
    Ok("unknown ref store: skipped".into())
}

/// Loose refs (files) or tables (reftable) now, for `--auto`.
pub fn pending(repo: &Repo) -> Result<usize, MaintError> {
    if repo.cluster_copy {
        return Ok(0);
    }
    let Some(refs) = &repo.refs else {
        return Ok(0);
    };
    if let Some(files) = refs.as_files() {
        return files
            .loose_names(b"refs/")
            .map(|names| names.len())
            .map_err(|e| MaintError::Refs(e.to_string()));
    }
    if let Some(reftable) = refs.as_reftable() {
        return reftable
            .stack()
            .map(|stack| stack.tables().len().saturating_sub(1))
            .map_err(|e| MaintError::Refs(e.to_string()));
    }
    Ok(0)
}
