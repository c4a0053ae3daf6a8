//! A push's quarantine migrating into a repository while housekeeping
//! works on it, each step of the other process placed at the worst point
//! with [`Interpose`].

use refstore_fs::flush::{BatchMechanism, FlushMethod};
use refstore_fs::interpose::Interpose;
use refstore_fs::sim::SimFs;
use refstore_fs::{Op, Vfs};
use refstore_hash::ObjectFormat;
use refstore_odb::{loose_object_path, LooseWriter, ObjectKind, Quarantine};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

const OBJECTS: &str = "/repo/objects";
const CONTENT: &[u8] = b"an object the repository already had\n";

/// The repository holds the object loose already (old and unreachable, say),
/// and a push brings it again: the migration finds it there and freshens
/// it instead of linking its own copy. A prune that removes the object
/// between those two steps must not fail the push nor leave it naming an
/// object that is gone: the quarantine's copy is linked after all.
#[test]
fn an_object_pruned_while_the_migration_freshens_it_is_linked_again() {
    let sim = SimFs::new();
    sim.create_dir_all(Path::new(OBJECTS)).unwrap();
    let mut existing = LooseWriter::new(
        Arc::new(sim.clone()),
        OBJECTS.into(),
        ObjectFormat::Sha1,
        FlushMethod::Fsync,
    );
    let id = existing.write(ObjectKind::Blob, CONTENT).unwrap();
    existing.commit().unwrap();
    let object: PathBuf = loose_object_path(Path::new(OBJECTS), &id);
    let stored = sim.read(&object).unwrap();

    let pruned = Arc::new(AtomicBool::new(false));
    let vfs: Arc<dyn Vfs> = {
        let (sim, object, pruned) = (sim.clone(), object.clone(), pruned.clone());
        Arc::new(Interpose::new(Arc::new(sim.clone()), move |op, path| {
            // The prune's unlink, just before the freshening.
            if op == Op::SetTimes && path == object && !pruned.swap(true, Ordering::SeqCst) {
                sim.unlink(&object).unwrap();
            }
        }))
    };
    let quarantine = Quarantine::create(vfs, Path::new(OBJECTS), ObjectFormat::Sha1).unwrap();
    let mut writer = quarantine.loose_writer(FlushMethod::Fsync, BatchMechanism::default());
    assert_eq!(writer.write(ObjectKind::Blob, CONTENT).unwrap(), id);
    writer.commit().unwrap();
    let migrated = quarantine
        .migrate(FlushMethod::Fsync, BatchMechanism::default())
        .expect("the migration links its own copy of the pruned object");

    assert!(pruned.load(Ordering::SeqCst), "the prune never ran");
    assert_eq!(migrated.loose, 1);
    assert_eq!(sim.read(&object).unwrap(), stored);
}
