# Deleting loose refs in a repository of 100k packed refs: every deleting
# transaction locks packed-refs and reads it under the lock (as git does, so
# that a racing pack-refs cannot bring a deleted ref back), and rewrites it
# only when a deleted ref is packed. One transaction deleting 100 loose refs,
# and 20 single-ref deletions (one process each).
template=$BENCH_DIR/delete-template
if [[ ! -d $template ]]; then
    "$GIT" init -q "$template"
    "$GIT" -C "$template" commit -q --allow-empty -m base
    commit=$("$GIT" -C "$template" rev-parse HEAD)
    for ((i = 0; i < 100000; i++)); do printf 'create refs/heads/packed/r%06d %s\n' "$i" "$commit"; done \
        | "$GIT" -C "$template" -c core.fsync=none update-ref --stdin
    "$GIT" -C "$template" pack-refs --all
    for ((i = 0; i < 100; i++)); do printf 'create refs/heads/loose/r%03d %s\n' "$i" "$commit"; done \
        | "$GIT" -C "$template" -c core.fsync=none update-ref --stdin
fi
input=$BENCH_DIR/delete-input
for ((i = 0; i < 100; i++)); do printf 'delete refs/heads/loose/r%03d\n' "$i"; done >"$input"
singles=$BENCH_DIR/delete-singles
for ((i = 0; i < 20; i++)); do printf 'refs/heads/loose/r%03d\n' "$i"; done >"$singles"
mkdir -p "$BENCH_DIR/delete-aside"
repo=$BENCH_DIR/delete-repo
prepare="[ ! -e $repo ] || mv $repo $BENCH_DIR/delete-aside/\$(date +%s%N); cp -a $template $repo; sync"
compare delete "100 loose refs in one transaction: git fsync=none vs refstore durable (batch)" "$prepare" \
    "$GIT -C $repo -c core.fsync=none update-ref --stdin < $input" \
    "$REFSTORE -C $repo update-ref --stdin < $input"
compare delete "100 loose refs in one transaction: both fsync=none" "$prepare" \
    "$GIT -C $repo -c core.fsync=none update-ref --stdin < $input" \
    "$REFSTORE -C $repo -c core.fsync=none update-ref --stdin < $input"
loop() { echo "while read -r ref; do $1 update-ref -d \$ref || exit 1; done < $singles"; }
compare delete "20 single-ref deletions: both fsync=none" "$prepare" \
    "$(loop "$GIT -C $repo -c core.fsync=none")" \
    "$(loop "$REFSTORE -C $repo -c core.fsync=none")"
