use super::*;
use refstore_fs::real::RealFs;
use std::os::unix::fs::symlink;

fn bare(path: &Path) {
    std::fs::create_dir_all(path.join("objects")).unwrap();
    std::fs::create_dir_all(path.join("refs")).unwrap();
    std::fs::write(path.join("HEAD"), "ref: refs/heads/main\n").unwrap();
}

struct Tree {
    _dir: tempfile::TempDir,
    root: PathBuf,
    outside: PathBuf,
}

/// `root/public`, `root/private/x.git`, `root/team`, a work tree
/// `root/work` and `outside/evil.git`, with the links.
fn tree() -> Tree {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let outside = dir.path().join("outside");
    bare(&outside.join("evil.git"));
    bare(&root.join("private/x.git"));
    bare(&root.join("public/open.git"));
    bare(&root.join("work/.git"));
    std::fs::create_dir_all(root.join("team")).unwrap();
    symlink(outside.join("evil.git"), root.join("public/evil.git")).unwrap();
    symlink("../private/x.git", root.join("public/priv.git")).unwrap();
    symlink("../private/x.git", root.join("team/plink")).unwrap();
    symlink("loop.git", root.join("public/loop.git")).unwrap();
    Tree {
        root: std::fs::canonicalize(&root).unwrap(),
        outside,
        _dir: dir,
    }
}

fn find(tree: &Tree, request: &str) -> Result<Served, ConfineError> {
    repository(&RealFs::new(), &tree.root, request)
}

#[test]
fn git_s_suffixes_are_tried_in_order_and_named_by_what_is_opened() {
    let tree = tree();
    for request in [
        "public/open.git",
        "public/open",
        "public/open/",
        "public//open",
    ] {
        let served = find(&tree, request).unwrap();
        assert_eq!(served.name, "public/open.git", "{request}");
        assert_eq!(served.location.git_dir, tree.root.join("public/open.git"));
    }
    for request in ["work", "work/.git", "work/.git/"] {
        let served = find(&tree, request).unwrap();
        assert_eq!(served.name, "work", "{request}");
        assert_eq!(served.location.git_dir, tree.root.join("work/.git"));
    }
}

#[test]
fn a_link_is_named_by_its_target_and_refused_outside_the_root() {
    let tree = tree();
    // The three bypasses: without `.git`, through a link.
    assert_eq!(
        find(&tree, "public/evil"),
        Err(ConfineError::Escapes),
        "{}",
        tree.outside.display()
    );
    assert_eq!(find(&tree, "public/evil.git"), Err(ConfineError::Escapes));
    for request in ["public/priv", "public/priv.git", "team/plink"] {
        let served = find(&tree, request).unwrap();
        assert_eq!(served.name, "private/x.git", "{request}");
        assert_eq!(served.location.git_dir, tree.root.join("private/x.git"));
        assert_eq!(served.location.common_dir, tree.root.join("private/x.git"));
    }
}

#[test]
fn loops_missing_paths_and_malformed_requests() {
    let tree = tree();
    assert_eq!(
        find(&tree, "public/loop"),
        Err(ConfineError::NotARepository)
    );
    assert_eq!(
        find(&tree, "public/none"),
        Err(ConfineError::NotARepository)
    );
    assert_eq!(find(&tree, "team"), Err(ConfineError::NotARepository));
    assert_eq!(find(&tree, ""), Err(ConfineError::NotARepository));
    for bad in [
        "../outside/evil.git",
        "public/../private/x.git",
        "/etc",
        "./work",
    ] {
        assert_eq!(find(&tree, bad), Err(ConfineError::Malformed), "{bad}");
    }
}

#[test]
fn git_files_and_common_directories_are_confined_too() {
    let tree = tree();
    std::fs::create_dir_all(tree.root.join("sub")).unwrap();
    std::fs::write(tree.root.join("sub/.git"), "gitdir: ../private/x.git\n").unwrap();
    assert_eq!(find(&tree, "sub").unwrap().name, "private/x.git");
    std::fs::create_dir_all(tree.root.join("escape")).unwrap();
    let line = format!("gitdir: {}\n", tree.outside.join("evil.git").display());
    std::fs::write(tree.root.join("escape/.git"), line).unwrap();
    assert_eq!(find(&tree, "escape"), Err(ConfineError::Escapes));
    // A worktree's git directory inside the root whose common directory
    // is outside it.
    let worktree = tree.root.join("wt.git");
    std::fs::create_dir_all(&worktree).unwrap();
    std::fs::write(worktree.join("HEAD"), "ref: refs/heads/main\n").unwrap();
    let common = format!("{}\n", tree.outside.join("evil.git").display());
    std::fs::write(worktree.join("commondir"), common).unwrap();
    assert_eq!(find(&tree, "wt"), Err(ConfineError::Escapes));
}

#[test]
fn the_root_itself_is_not_a_served_repository() {
    let tree = tree();
    symlink(".", tree.root.join("self")).unwrap();
    bare(&tree.root.join(".git"));
    assert_eq!(find(&tree, "self"), Err(ConfineError::Escapes));
}
