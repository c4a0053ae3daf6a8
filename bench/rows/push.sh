# `git push` of N new refs (all at one commit) over
# file:// into an empty bare repository, served by git's receive-pack and by
# `refstore receive-pack`, atomic and not, per flush method. The headline
# comparison is durable refstore (its default, `batch`: one flush point for
# the pack, one for all refs) against git with fsync off; git's durable mode
# fsyncs every ref. `-c` settings reach the server through
# GIT_CONFIG_PARAMETERS, as git hands them to the receive-pack it starts.
# Each run pushes into a fresh, flushed copy of an empty bare repository; old
# copies are renamed aside rather than deleted.
src=$BENCH_DIR/push-src
if [[ ! -d $src ]]; then
    "$GIT" init -q "$src"
    "$GIT" -C "$src" commit -q --allow-empty -m base
    for ((i = 0; i < 1000; i++)); do printf 'create refs/heads/b1000/b%05d HEAD\n' "$i"; done |
        "$GIT" -C "$src" update-ref --stdin
    for n in 10 100; do
        for ((i = 0; i < n; i++)); do printf 'create refs/heads/b%d/b%05d HEAD\n' "$n" "$i"; done |
            "$GIT" -C "$src" update-ref --stdin
    done
fi
template=$BENCH_DIR/push-template
[[ -d $template ]] || "$GIT" init -q --bare "$template"
repo=$BENCH_DIR/push-repo
mkdir -p "$BENCH_DIR/push-aside"
prepare="[ ! -e $repo ] || mv $repo $BENCH_DIR/push-aside/\$(date +%s%N); cp -a $template $repo; sync"
ours="--receive-pack='$REFSTORE receive-pack'"
for n in 10 100 1000; do
    spec="'refs/heads/b$n/*:refs/heads/b$n/*'"
    for mode in "" "--atomic"; do
        label="N=$n${mode:+ atomic}"
        push="push -q $mode $repo $spec"
        push_ours="push -q $mode $ours $repo $spec"
        compare push "$label: git fsync=none vs refstore durable (batch)" "$prepare" \
            "$GIT -C $src -c core.fsync=none $push" \
            "$GIT -C $src $push_ours"
        compare push "$label: git durable (fsync) vs refstore durable (batch)" "$prepare" \
            "$GIT -C $src -c core.fsync=reference,pack -c core.fsyncMethod=fsync $push" \
            "$GIT -C $src $push_ours"
        compare push "$label: both fsync" "$prepare" \
            "$GIT -C $src -c core.fsync=reference,pack -c core.fsyncMethod=fsync $push" \
            "$GIT -C $src -c core.fsync=reference,pack -c core.fsyncMethod=fsync $push_ours"
        compare push "$label: both fsync=none" "$prepare" \
            "$GIT -C $src -c core.fsync=none $push" \
            "$GIT -C $src -c core.fsync=none $push_ours"
    done
done
