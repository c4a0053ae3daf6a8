//! The refs background maintenance judges a repository by, when they are
//! kept elsewhere (a cluster's etcd): a handle made for housekeeping,
//! whose every read is current when made, never the handle of the push
//! that asked for the run. A push's handle may answer its reads from what
//! was confirmed while the push was served; a run that starts later would
//! then miss refs set since through other nodes, and prune what they
//! reach.

use refstore_fs::real::RealFs;
use refstore_fs::Vfs;
use refstore_protocol::repository::Repository;
use refstore_refs::backend::Backend;
use refstore_server::maintenance::Maintenance;
use refstore_server::ref_source::RefSource;
use refstore_testsupport::git_ok;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// A source that notes what each handle was asked for, and lends the
/// repository's own refs.
#[derive(Debug, Default)]
struct Noting {
    asked: Mutex<Vec<(String, Option<Instant>)>>,
}

impl RefSource for Noting {
    fn refs(&self, repo: &Repository, name: &str, request: Option<Instant>) -> Arc<dyn Backend> {
        self.asked.lock().unwrap().push((name.to_owned(), request));
        repo.refs.clone()
    }
}

#[test]
fn maintenance_after_a_push_reads_refs_through_a_housekeeping_handle() {
    let dir = tempfile::tempdir().unwrap();
    let git_dir = dir.path().join("repo.git");
    git_ok(
        dir.path(),
        dir.path(),
        &["init", "-q", "--bare", "repo.git"],
    );
    let vfs: Arc<dyn Vfs> = Arc::new(RealFs::new());
    let opened = refstore_repo::Repository::open(vfs.clone(), &git_dir, &[]).unwrap();
    let repo = Repository::serve(opened).unwrap();
    let source = Arc::new(Noting::default());
    let maintenance = Maintenance::start(1, vfs, Vec::new(), Some(source.clone()));

    maintenance.after_push(&repo, "repo.git");

    let asked = source.asked.lock().unwrap().clone();
    assert_eq!(asked, vec![("repo.git".to_owned(), None)]);
}
