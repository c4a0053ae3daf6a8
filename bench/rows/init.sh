# Creating an empty repository. Old repositories are renamed aside rather than
# deleted: ext4 is slow to create files right after many deletions.
mkdir -p init-aside
compare init "bare, files" \
    "[ ! -e init-repo ] || mv init-repo init-aside/\$(date +%s%N)" \
    "$GIT init -q --bare init-repo" \
    "$REFSTORE init -q --bare init-repo"
