//! A cluster node's repositories follow the cluster's records
//! ([`refstore_cluster::records`]): the node creates, removes and renames
//! its local copies as the records say, serves a repository only while its
//! record is live and its copy is of that incarnation, and refuses one on
//! its disk that the cluster does not hold.
//!
//! Each copy carries the incarnation id it was made for in its git
//! directory ([`MARKER`]). At startup, before serving, the node reads every
//! record and applies it ([`NodeCatalog::reconcile`]): what it missed while
//! it was down (a deletion, a rename, a creation) is applied before any
//! request reaches the repository; then a watch of the records applies
//! each change as it happens. Independently, every request checks the
//! repository's record (one linearizable etcd read, or the last records
//! seen without a quorum) and brings the copy in line first, so a request
//! never reaches a copy the watch has not caught up with. A record a read
//! of this node confirmed within the last moment
//! ([`refstore_cluster::cluster::RECENT`]) admits a request whose copy
//! is already of its incarnation without a read of its own: the request's
//! first read of refs confirms the record again, in the same transaction
//! that confirms the refs, and refuses the request if it no longer holds.
//!
//! A copy is created in a staging directory and renamed into place, and
//! removed by being renamed into a trash directory first, so a crash
//! leaves either the whole repository or none at its name; both
//! directories start with `.`, which no repository name may.

use crate::commands::init::{self, NewRepository};
use refstore_cluster::lifecycle::{LifecycleError, NewRepository as NewRecord};
pub use refstore_cluster::records::not_in_cluster;
use refstore_cluster::records::{check_name, Record, RefFormat};
use refstore_cluster::Cluster;
use refstore_fs::config::{FsyncSettings, RefStorage};
use refstore_fs::discover::is_git_directory;
use refstore_fs::flush::{BatchMechanism, FlushBatch, FlushMethod};
use refstore_fs::lock::LockFile;
use refstore_fs::{FileKind, Vfs};
use refstore_refs::ObjectFormat;
use refstore_server::catalog::{Catalog, CatalogError, Entry, Failure, NewEntry};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::mpsc::RecvTimeoutError;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// The file in a copy's git directory naming the incarnation it is of.
pub use crate::commands::cluster_copy::MARKER;
/// Where removed copies go before they are deleted, below the root.
const TRASH: &str = ".refstore-trash";
/// Where new copies are made before they are renamed into place.
const STAGING: &str = ".refstore-staging";
/// How long the watcher waits before reading the records again after the
/// watch broke or etcd could not be reached.
const RETRY: Duration = Duration::from_secs(1);

/// The node's repositories, as the cluster's records say.
#[derive(Debug)]
pub struct NodeCatalog {
    cluster: Arc<Cluster>,
    vfs: Arc<dyn Vfs>,
    root: PathBuf,
    /// The records last read or watched, for when etcd cannot be asked.
    seen: Mutex<HashMap<String, Record>>,
    /// Held while a copy is changed: one change at a time.
    applying: Mutex<()>,
    /// Why this node serves nothing: it was removed from the cluster.
    removed: Mutex<Option<String>>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

impl NodeCatalog {
    /// The catalog of the node serving `root`.
    pub fn new(cluster: Arc<Cluster>, vfs: Arc<dyn Vfs>, root: PathBuf) -> Arc<NodeCatalog> {
        Arc::new(NodeCatalog {
            cluster,
            vfs,
            root,
            seen: Mutex::new(HashMap::new()),
            applying: Mutex::new(()),
            removed: Mutex::new(None),
        })
    }

    /// Makes every request refused with `why` (this node was removed from
    /// the cluster), or served again (`None`: it was added back).
    pub fn set_removed(&self, why: Option<String>) {
        *lock(&self.removed) = why;
    }

    /// Reads every record and applies it, then keeps applying changes on
    /// a thread of its own. The first pass runs before this returns, so a
    /// node that was down applies what it missed before it serves; if etcd
    /// cannot be reached it is left to the thread (requests check records
    /// themselves meanwhile).
    pub fn start(self: &Arc<Self>) {
        let revision = match self.cluster.records() {
            Ok((records, revision)) => {
                self.reconcile(&records);
                Some(revision)
            }
            Err(e) => {
                tracing::warn!("{e}; the repositories are brought in line once etcd answers");
                None
            }
        };
        let catalog = self.clone();
        std::thread::Builder::new()
            .name("refstore-records".into())
            .spawn(move || catalog.follow(revision))
            .expect("starting a thread at startup");
    }

    /// Applies record changes from `revision` on (after reading every
    /// record, if there is none), for as long as the process runs.
    fn follow(&self, mut revision: Option<i64>) {
        loop {
            let from = match revision.take() {
                Some(revision) => revision,
                None => match self.cluster.records() {
                    Ok((records, revision)) => {
                        self.reconcile(&records);
                        revision
                    }
                    Err(e) => {
                        tracing::warn!("{e}; reading the repositories' records again shortly");
                        std::thread::sleep(RETRY);
                        continue;
                    }
                },
            };
            let changes = self.cluster.watch_records(from);
            loop {
                match changes.recv_timeout(Duration::from_secs(60)) {
                    Ok(batch) => {
                        let records: Vec<(String, Record)> = batch
                            .into_iter()
                            .filter_map(|(name, record)| Some((name, record?)))
                            .collect();
                        self.apply_all(&records);
                    }
                    Err(RecvTimeoutError::Timeout) => continue,
                    Err(RecvTimeoutError::Disconnected) => break,
                }
            }
            std::thread::sleep(RETRY);
        }
    }

    /// Brings every copy in line with `records` (all of them), and clears
    /// what a crash left in the staging and trash directories.
    pub fn reconcile(&self, records: &[(String, Record)]) {
        let _applying = lock(&self.applying);
        for dir in [TRASH, STAGING] {
            if let Err(e) = remove_tree(self.vfs.as_ref(), &self.root.join(dir)) {
                tracing::warn!("cannot clear {dir}: {e}");
            }
        }
        drop(_applying);
        self.apply_all(records);
    }

    /// Applies `records`: live ones first, so that the copy of a renamed
    /// repository is moved to its new name before its old name's
    /// tombstone is looked at.
    fn apply_all(&self, records: &[(String, Record)]) {
        {
            let mut seen = lock(&self.seen);
            for (name, record) in records {
                seen.insert(name.clone(), record.clone());
                self.cluster.forget_record(name);
            }
        }
        let _applying = lock(&self.applying);
        for (name, record) in records.iter().filter(|(_, r)| r.is_live()) {
            if let Err(e) = self.apply_live(name, record) {
                tracing::error!(repo = %name, "cannot set up the repository on this node: {e}");
            }
        }
        for (name, record) in records.iter().filter(|(_, r)| !r.is_live()) {
            if let Err(e) = self.apply_deleted(name, record) {
                tracing::error!(repo = %name, "cannot remove the repository from this node: {e}");
            }
        }
    }

    /// The incarnation the copy at `dir` carries, if it is a repository.
    fn marker(&self, dir: &Path) -> Option<Option<String>> {
        if !is_git_directory(self.vfs.as_ref(), dir) {
            return None;
        }
        Some(crate::commands::cluster_copy::incarnation(
            self.vfs.as_ref(),
            dir,
        ))
    }

    fn write_marker(&self, dir: &Path, id: &str) -> Result<(), String> {
        let method = FsyncSettings::default().method_for(refstore_fs::config::Component::Reference);
        let mut batch = FlushBatch::new(self.vfs.clone(), method, dir.to_owned());
        let mut file = LockFile::acquire(&self.vfs, dir.join(MARKER), Duration::from_secs(1))
            .map_err(|e| e.to_string())?;
        file.write_all(format!("{id}\n").as_bytes())
            .map_err(|e| e.to_string())?;
        refstore_fs::lock::commit_all(vec![file], &mut batch).map_err(|e| e.to_string())
    }

    /// Makes the copy at `name` one of the live `record`'s incarnation:
    /// kept if it is, adopted if it carries no incarnation (a repository
    /// set up by hand and imported), replaced if it is of another one,
    /// moved from where it was if it was renamed, created otherwise.
    fn apply_live(&self, name: &str, record: &Record) -> Result<(), String> {
        check_name(name).map_err(|e| e.to_string())?;
        let dir = self.root.join(name);
        match self.marker(&dir) {
            Some(Some(id)) if id == record.id => return Ok(()),
            Some(None) => return self.write_marker(&dir, &record.id),
            Some(Some(_)) => {
                tracing::info!(repo = %name, "replacing this node's copy of an older repository of the same name");
                self.remove(&dir)?;
            }
            None if self.vfs.exists(&dir) => {
                return Err(format!(
                    "'{}' is in the way and is not a repository",
                    dir.display()
                ))
            }
            None => {}
        }
        if let Some(from) = self.find(&record.id) {
            tracing::info!(repo = %name, from = %from, "moving this node's copy of a renamed repository");
            let parent = dir.parent().unwrap_or(&self.root);
            self.vfs.create_dir_all(parent).map_err(|e| e.to_string())?;
            let old = self.root.join(&from);
            self.vfs.rename(&old, &dir).map_err(|e| e.to_string())?;
            return self.sync_dirs(&[parent, old.parent().unwrap_or(&self.root)]);
        }
        self.create(name, record)
    }

    /// The name of the local copy carrying incarnation `id`.
    fn find(&self, id: &str) -> Option<String> {
        refstore_replica::repair::repositories(self.vfs.as_ref(), &self.root)
            .into_iter()
            .find(|name| self.marker(&self.root.join(name)) == Some(Some(id.to_owned())))
    }

    /// Creates the copy of `record` at `name`: made in the staging
    /// directory, then renamed into place.
    fn create(&self, name: &str, record: &Record) -> Result<(), String> {
        let staging = self.root.join(STAGING).join(&record.id);
        let _ = remove_tree(self.vfs.as_ref(), &staging);
        let branch = record
            .head
            .strip_prefix("refs/heads/")
            .unwrap_or("master")
            .to_owned();
        let new = NewRepository {
            bare: true,
            object_format: record.object_format.name(),
            ref_storage: match record.ref_format {
                RefFormat::Files => RefStorage::Files,
                RefFormat::Reftable => RefStorage::Reftable,
            },
            branch: &branch,
            fsync: FsyncSettings::default(),
            mechanism: BatchMechanism::Auto,
        };
        init::create(&self.vfs, &staging, &new).map_err(|e| e.to_string())?;
        self.write_marker(&staging, &record.id)?;
        let dir = self.root.join(name);
        let parent = dir.parent().unwrap_or(&self.root);
        self.vfs.create_dir_all(parent).map_err(|e| e.to_string())?;
        self.vfs.rename(&staging, &dir).map_err(|e| e.to_string())?;
        tracing::info!(repo = %name, "repository created on this node");
        self.sync_dirs(&[parent])
    }

    /// Removes the copy at `name` if it is of the deleted `record`'s
    /// incarnation.
    fn apply_deleted(&self, name: &str, record: &Record) -> Result<(), String> {
        if check_name(name).is_err() {
            return Ok(());
        }
        let dir = self.root.join(name);
        if self.marker(&dir) == Some(Some(record.id.clone())) {
            self.remove(&dir)?;
            tracing::info!(repo = %name, "repository removed from this node");
        }
        Ok(())
    }

    /// Moves `dir` into the trash at once, then deletes it.
    fn remove(&self, dir: &Path) -> Result<(), String> {
        let trash = self.root.join(TRASH);
        self.vfs.create_dir_all(&trash).map_err(|e| e.to_string())?;
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let doomed = trash.join(format!("{nanos}"));
        self.vfs.rename(dir, &doomed).map_err(|e| e.to_string())?;
        self.sync_dirs(&[dir.parent().unwrap_or(&self.root)])?;
        remove_tree(self.vfs.as_ref(), &doomed).map_err(|e| e.to_string())
    }

    fn sync_dirs(&self, dirs: &[&Path]) -> Result<(), String> {
        if FsyncSettings::default().method_for(refstore_fs::config::Component::Reference)
            == FlushMethod::None
        {
            return Ok(());
        }
        for dir in dirs {
            self.vfs.fsync_dir(dir).map_err(|e| e.to_string())?;
        }
        Ok(())
    }

    /// The record of `name`: from etcd, or the last one seen when etcd
    /// cannot be asked. One bounded wait at most: the refs read that
    /// follows then refuses (or, with stale reads, answers from the copy)
    /// without waiting for etcd again.
    fn current(&self, name: &str) -> Result<Option<Record>, String> {
        match self.cluster.current_record(name) {
            Ok(record) => Ok(record),
            Err(e) => match lock(&self.seen).get(name) {
                Some(record) => {
                    tracing::warn!(repo = %name, "{e}; using the last record seen");
                    Ok(Some(record.clone()))
                }
                None => Err(format!(
                    "cannot tell whether '{name}' is in the cluster: {e}"
                )),
            },
        }
    }
}

impl Catalog for NodeCatalog {
    fn admit(&self, name: &str) -> Result<(), String> {
        if let Some(why) = lock(&self.removed).clone() {
            return Err(why);
        }
        if check_name(name).is_err() {
            return Err(not_in_cluster(name));
        }
        if let Some(record) = self.cluster.recent_record(name) {
            if self.marker(&self.root.join(name)) == Some(Some(record.id)) {
                return Ok(());
            }
        }
        match self.current(name)? {
            Some(record) if record.is_live() => {
                let _applying = lock(&self.applying);
                self.apply_live(name, &record)
                    .map_err(|e| format!("repository '{name}' cannot be set up on this node: {e}"))
            }
            Some(record) => {
                let _applying = lock(&self.applying);
                if let Err(e) = self.apply_deleted(name, &record) {
                    tracing::error!(repo = %name, "cannot remove the repository from this node: {e}");
                }
                Err(not_in_cluster(name))
            }
            None => Err(not_in_cluster(name)),
        }
    }

    fn materialize(&self, request: &str) -> bool {
        let request = request.trim_matches('/');
        for name in [request.to_owned(), format!("{request}.git")] {
            if check_name(&name).is_err() || self.vfs.exists(&self.root.join(&name)) {
                continue;
            }
            if let Ok(Some(record)) = self.current(&name) {
                if record.is_live() {
                    let _applying = lock(&self.applying);
                    return self.apply_live(&name, &record).is_ok();
                }
            }
        }
        false
    }

    fn list(&self) -> Result<Vec<Entry>, CatalogError> {
        let listed = self.cluster.list().map_err(catalog_error)?;
        Ok(listed
            .into_iter()
            .map(|(name, record)| entry(name, &record))
            .collect())
    }

    fn create(&self, new: &NewEntry) -> Result<Entry, CatalogError> {
        let invalid = |message: String| CatalogError {
            failure: Failure::Invalid,
            message,
        };
        let object_format = match new.object_format.as_deref() {
            None => ObjectFormat::Sha1,
            Some(name) => ObjectFormat::from_name(name)
                .ok_or_else(|| invalid(format!("unknown object format '{name}'")))?,
        };
        let ref_format = match new.ref_format.as_deref() {
            None => RefFormat::Files,
            Some(name) => RefFormat::from_name(name)
                .ok_or_else(|| invalid(format!("unknown ref format '{name}'")))?,
        };
        let spec = NewRecord {
            object_format,
            ref_format,
            initial_branch: new
                .initial_branch
                .clone()
                .unwrap_or_else(|| NewRecord::default().initial_branch),
        };
        let record = self
            .cluster
            .create(&new.name, &spec)
            .map_err(catalog_error)?;
        Ok(entry(new.name.clone(), &record))
    }

    fn delete(&self, name: &str) -> Result<(), CatalogError> {
        self.cluster.delete(name).map_err(catalog_error)?;
        Ok(())
    }

    fn rename(&self, from: &str, to: &str) -> Result<Entry, CatalogError> {
        let record = self.cluster.rename(from, to).map_err(catalog_error)?;
        Ok(entry(to.to_owned(), &record))
    }
}

fn entry(name: String, record: &Record) -> Entry {
    Entry {
        name,
        object_format: record.object_format.name().to_owned(),
        ref_format: record.ref_format.name().to_owned(),
        head: record.head.clone(),
    }
}

fn catalog_error(e: LifecycleError) -> CatalogError {
    let failure = match &e {
        LifecycleError::BadName(_) | LifecycleError::Invalid(_) => Failure::Invalid,
        LifecycleError::NotFound(_) => Failure::NotFound,
        LifecycleError::Exists(_) | LifecycleError::Changed(_) => Failure::Conflict,
        LifecycleError::Etcd(_) => Failure::Unavailable,
    };
    CatalogError {
        failure,
        message: e.to_string(),
    }
}

/// Deletes `path` and everything below it; nothing there is fine.
fn remove_tree(vfs: &dyn Vfs, path: &Path) -> refstore_fs::Result<()> {
    let kind = match vfs.stat(path) {
        Ok(meta) => meta.kind,
        Err(e) if e.is_not_found() => return Ok(()),
        Err(e) => return Err(e),
    };
    if kind != FileKind::Dir {
        return vfs.unlink(path);
    }
    for entry in vfs.read_dir(path)? {
        remove_tree(vfs, &path.join(&entry.name))?;
    }
    vfs.rmdir(path)
}
