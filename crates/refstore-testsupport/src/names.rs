//! Repository names for a cluster's tests, valid and hostile, built from
//! pieces rather than listed: stems in several scripts, combined with
//! components that are harmless alone and hostile in a path (`..`, hidden
//! and empty components, separators, bidirectional overrides) and with
//! variations of the `.git` suffix.

/// Distinct names, sorted, with whether a cluster must accept them
/// (`true`) or refuse them.
pub fn repository_names() -> Vec<(String, bool)> {
    let stems = ["p", "r-2", "ünï", "日本", "a.b"];
    let hostile = [
        "..",
        ".",
        "",
        ".git",
        ".refstore-trash",
        "a b",
        "a\\b",
        "~x",
        "a:b",
        "é\u{202e}",
        "x\n",
    ];
    let mut names = Vec::new();
    for (n, stem) in stems.iter().enumerate() {
        names.push((format!("{stem}.git"), true));
        names.push((format!("g{n}/{stem}.git"), true));
        for invalid in [
            stem.to_string(),
            format!("{stem}.git.git"),
            format!("{stem}.GIT"),
            format!("/tmp/{stem}.git"),
            format!("../{stem}.git"),
            format!("{stem}.git/"),
            format!("{stem}//{stem}.git"),
            format!("{stem}.git/in.git"),
            format!("a/b/c/d/{stem}.git"),
        ] {
            names.push((invalid, false));
        }
        for bad in hostile {
            names.push((format!("{bad}/{stem}.git"), false));
            names.push((format!("{stem}/{bad}/x.git"), false));
            // Inside a component, only the characters and a doubled
            // suffix matter.
            let fine = bad
                .chars()
                .all(|c| c.is_alphanumeric() || "-_.".contains(c))
                && !bad.ends_with(".git");
            names.push((format!("{stem}{bad}.git"), fine));
        }
    }
    names.sort();
    names.dedup();
    names
}
