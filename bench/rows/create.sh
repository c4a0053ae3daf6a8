# Creating refs on the files backend: one transaction of 10k
# new refs into a repository that already has 100k packed refs. Each run
# starts from a fresh, flushed copy of a template built once per scratch
# directory.
template=$BENCH_DIR/create-template
if [[ ! -d $template ]]; then
    "$GIT" init -q "$template"
    "$GIT" -C "$template" commit -q --allow-empty -m base
    commit=$("$GIT" -C "$template" rev-parse HEAD)
    for ((i = 0; i < 100000; i++)); do printf 'create refs/heads/existing/r%06d %s\n' "$i" "$commit"; done \
        | "$GIT" -C "$template" -c core.fsync=none update-ref --stdin
    "$GIT" -C "$template" pack-refs --all
fi
commit=$("$GIT" -C "$template" rev-parse HEAD)
input=$BENCH_DIR/create-input
for ((i = 0; i < 10000; i++)); do printf 'create refs/heads/new/r%05d %s\n' "$i" "$commit"; done >"$input"
mkdir -p "$BENCH_DIR/create-aside"
repo=$BENCH_DIR/create-repo
prepare="[ ! -e $repo ] || mv $repo $BENCH_DIR/create-aside/\$(date +%s%N); cp -a $template $repo; sync"
compare create "10k into 100k packed: git fsync=none vs refstore durable (batch)" "$prepare" \
    "$GIT -C $repo -c core.fsync=none update-ref --stdin < $input" \
    "$REFSTORE -C $repo update-ref --stdin < $input"
compare create "10k into 100k packed: git durable (fsync) vs refstore durable (batch)" "$prepare" \
    "$GIT -C $repo -c core.fsync=reference -c core.fsyncMethod=fsync update-ref --stdin < $input" \
    "$REFSTORE -C $repo update-ref --stdin < $input"
compare create "10k into 100k packed: both fsync=none" "$prepare" \
    "$GIT -C $repo -c core.fsync=none update-ref --stdin < $input" \
    "$REFSTORE -C $repo -c core.fsync=none update-ref --stdin < $input"
