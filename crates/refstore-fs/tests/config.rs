//! Typed settings read from a repository's config file through gix-config:
//! defaults (refstore's durable default included), overrides, and errors.

use refstore_fs::config::{parse_cli, Component, Config, LogRefUpdates, RefStorage};
use refstore_fs::flush::{BatchMechanism, FlushMethod};
use std::path::Path;
use std::time::Duration;

/// Every test here sees no system or global configuration.
fn isolated_repo(config: &str) -> tempfile::TempDir {
    std::env::set_var("GIT_CONFIG_NOSYSTEM", "1");
    std::env::set_var("GIT_CONFIG_GLOBAL", "/dev/null");
    std::env::remove_var("GIT_CONFIG_PARAMETERS");
    std::env::remove_var("GIT_CONFIG_COUNT");
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("config"), config).unwrap();
    dir
}

fn load(dir: &Path, overrides: &[&str]) -> Config {
    let overrides: Vec<_> = overrides.iter().map(|o| parse_cli(o).unwrap()).collect();
    Config::load(Some(dir), &overrides).unwrap()
}

#[test]
fn defaults() {
    let repo = isolated_repo("[core]\n\trepositoryformatversion = 0\n");
    let mut config = load(repo.path(), &[]);
    config.check_repository_format().unwrap();
    let s = config.settings().unwrap();
    assert_eq!(s.object_format, "sha1");
    assert_eq!(s.ref_storage, RefStorage::Files);
    assert_eq!(s.fsync.method_for(Component::Reference), FlushMethod::Batch);
    assert_eq!(
        s.fsync.method_for(Component::LooseObject),
        FlushMethod::Batch
    );
    assert_eq!(s.files_ref_lock_timeout, Duration::from_millis(100));
    assert_eq!(s.packed_refs_timeout, Duration::from_millis(1000));
    assert_eq!(s.reftable.block_size, 4096);
    assert_eq!(s.reftable.restart_interval, 16);
    assert!(s.reftable.index_objects && s.reftable.auto_compaction);
    assert_eq!(s.reftable.geometric_factor, 2);
    assert_eq!(s.log_ref_updates(true), LogRefUpdates::Never);
    assert_eq!(s.log_ref_updates(false), LogRefUpdates::Branches);
    assert_eq!(s.receive.deny_current_branch, "refuse");
}

#[test]
fn repository_values_and_command_line_overrides() {
    let repo = isolated_repo(
        "[core]\n\trepositoryformatversion = 1\n\tfsync = reference\n\tfsyncMethod = fsync\n\
         \tlogAllRefUpdates = always\n\tfilesRefLockTimeout = 2k\n\
         [extensions]\n\tobjectFormat = sha256\n\trefStorage = reftable\n\
         [reftable]\n\tblockSize = 8192\n\tindexObjects = false\n\
         [receive]\n\tdenyDeletes = yes\n",
    );
    let mut config = load(
        repo.path(),
        &["core.fsyncMethod=batch", "receive.denyNonFastForwards"],
    );
    config.check_repository_format().unwrap();
    let s = config.settings().unwrap();
    assert_eq!(s.object_format, "sha256");
    assert_eq!(s.ref_storage, RefStorage::Reftable);
    assert_eq!(s.fsync.method_for(Component::Reference), FlushMethod::Batch);
    assert_eq!(
        s.fsync.method_for(Component::LooseObject),
        FlushMethod::None
    );
    assert_eq!(s.log_ref_updates(true), LogRefUpdates::Always);
    assert_eq!(s.files_ref_lock_timeout, Duration::from_millis(2048));
    assert_eq!(s.reftable.block_size, 8192);
    assert!(!s.reftable.index_objects);
    assert!(s.receive.deny_deletes && s.receive.deny_non_fast_forwards);
}

#[test]
fn invalid_values_are_reported_in_gits_words() {
    let repo = isolated_repo("[core]\n\tbare = maybe\n");
    let err = load(repo.path(), &[]).settings().unwrap_err();
    assert_eq!(
        err.to_string(),
        "bad boolean config value 'maybe' for 'core.bare'"
    );
    assert!(load(repo.path(), &["core.bare=false"]).settings().is_ok());
    let repo = isolated_repo("[reftable]\n\tblockSize = 99999999\n");
    let err = load(repo.path(), &[]).settings().unwrap_err();
    assert_eq!(
        err.to_string(),
        "bad numeric config value '99999999' for 'reftable.blocksize': out of range"
    );
    let repo = isolated_repo("[core]\n\trepositoryformatversion = 2\n");
    let err = load(repo.path(), &[])
        .check_repository_format()
        .unwrap_err();
    assert_eq!(err.to_string(), "Expected git repo version <= 1, found 2");
    let repo =
        isolated_repo("[core]\n\trepositoryformatversion = 1\n[extensions]\n\tfrobnicate = 1\n");
    let err = load(repo.path(), &[])
        .check_repository_format()
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "unknown repository extension found:\n\tfrobnicate"
    );
    let repo = isolated_repo("[core]\n\tfsync = reference,bogus\n");
    let mut config = load(repo.path(), &[]);
    config.settings().unwrap();
    assert_eq!(
        config.warnings(),
        ["ignoring unknown core.fsync component 'bogus'"]
    );
}

#[test]
fn batch_flush_mechanism_from_configuration() {
    let repo = isolated_repo("[core]\n\trepositoryformatversion = 0\n");
    let s = load(repo.path(), &[]).settings().unwrap();
    assert_eq!(s.fsync.batch_mechanism(), BatchMechanism::Auto);
    let repo = isolated_repo("[refstore]\n\tbatchFlush = fdatasync\n");
    let s = load(repo.path(), &[]).settings().unwrap();
    assert_eq!(s.fsync.batch_mechanism(), BatchMechanism::ConcurrentFsync);
    // core.fsyncMethod keeps its meaning; the key only says how batch flushes.
    assert_eq!(s.fsync.method_for(Component::Reference), FlushMethod::Batch);
    let s = load(repo.path(), &["refstore.batchflush=syncfs"])
        .settings()
        .unwrap();
    assert_eq!(s.fsync.batch_mechanism(), BatchMechanism::Syncfs);
    let s = load(repo.path(), &["refstore.batchFlush=auto"])
        .settings()
        .unwrap();
    assert_eq!(s.fsync.batch_mechanism(), BatchMechanism::Auto);
    let err = load(repo.path(), &["refstore.batchFlush=sometimes"])
        .settings()
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid value for 'refstore.batchflush': 'sometimes' (expected auto, syncfs or fdatasync)"
    );
}

#[test]
fn a_repository_without_a_config_file_has_the_defaults() {
    // git accepts a git directory of HEAD, objects/ and refs/ alone.
    let repo = isolated_repo("");
    std::fs::remove_file(repo.path().join("config")).unwrap();
    let mut config = load(repo.path(), &["core.bare=true"]);
    config.check_repository_format().unwrap();
    let s = config.settings().unwrap();
    assert_eq!(s.object_format, "sha1");
    assert_eq!(s.ref_storage, RefStorage::Files);
}

#[test]
fn an_unreadable_config_path_is_still_an_error() {
    let repo = isolated_repo("");
    let path = repo.path().join("config");
    std::fs::remove_file(&path).unwrap();
    std::fs::create_dir(&path).unwrap();
    let error = Config::load(Some(repo.path()), &[]).unwrap_err();
    assert!(
        error.to_string().contains("unable to read configuration"),
        "{error}"
    );
}
