# One `update-ref --stdin` transaction creating N refs in a fresh repository,
# per flush method. The headline comparison is durable refstore (its default,
# `batch`) against git with fsync off; git's own durable mode fsyncs every
# ref. Each run starts from a fresh copy of one template repository, flushed
# to disk first so no flush method pays for the copy; old copies are renamed
# aside rather than deleted (ext4 creates files slowly right after deletes).
template=$BENCH_DIR/tx-template
if [[ ! -d $template ]]; then
    "$GIT" init -q "$template"
    "$GIT" -C "$template" commit -q --allow-empty -m base
fi
commit=$("$GIT" -C "$template" rev-parse HEAD)
mkdir -p "$BENCH_DIR/tx-aside"
for n in 10 100 1000; do
    input=$BENCH_DIR/tx-input-$n
    for ((i = 0; i < n; i++)); do printf 'create refs/heads/bench/b%05d %s\n' "$i" "$commit"; done >"$input"
    prepare="[ ! -e $BENCH_DIR/tx-repo ] || mv $BENCH_DIR/tx-repo $BENCH_DIR/tx-aside/\$(date +%s%N); cp -a $template $BENCH_DIR/tx-repo; sync"
    repo=$BENCH_DIR/tx-repo
    compare transaction "N=$n: git fsync=none vs refstore durable (batch)" "$prepare" \
        "$GIT -C $repo -c core.fsync=none update-ref --stdin < $input" \
        "$REFSTORE -C $repo update-ref --stdin < $input"
    compare transaction "N=$n: git durable (fsync) vs refstore durable (batch)" "$prepare" \
        "$GIT -C $repo -c core.fsync=reference -c core.fsyncMethod=fsync update-ref --stdin < $input" \
        "$REFSTORE -C $repo update-ref --stdin < $input"
    compare transaction "N=$n: both fsync=none" "$prepare" \
        "$GIT -C $repo -c core.fsync=none update-ref --stdin < $input" \
        "$REFSTORE -C $repo -c core.fsync=none update-ref --stdin < $input"
done

# The same 100 refs as 100 single-ref transactions (one process each): what a
# client that cannot batch pays per durable update.
n=100
singles=$BENCH_DIR/tx-singles-$n
for ((i = 0; i < n; i++)); do printf 'refs/heads/bench/s%05d %s\n' "$i" "$commit"; done >"$singles"
loop() { echo "while read -r ref id; do $1 update-ref \$ref \$id || exit 1; done < $singles"; }
prepare="[ ! -e $BENCH_DIR/tx-repo ] || mv $BENCH_DIR/tx-repo $BENCH_DIR/tx-aside/\$(date +%s%N); cp -a $template $BENCH_DIR/tx-repo; sync"
repo=$BENCH_DIR/tx-repo
compare transaction "100 single-ref transactions: git fsync=none vs refstore durable (batch)" "$prepare" \
    "$(loop "$GIT -C $repo -c core.fsync=none")" \
    "$(loop "$REFSTORE -C $repo")"
compare transaction "100 single-ref transactions: git durable (fsync) vs refstore durable (batch)" "$prepare" \
    "$(loop "$GIT -C $repo -c core.fsync=reference -c core.fsyncMethod=fsync")" \
    "$(loop "$REFSTORE -C $repo")"
