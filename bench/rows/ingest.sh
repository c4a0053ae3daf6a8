# Storing N small new files as loose objects: refstore
# `hash-object -w --stdin-paths` (durable by default: one flush point for
# all objects) against git's `hash-object -w --stdin-paths` and `git add`,
# with git's flushing off, per object (fsync) and batched (fsyncMethod=batch).
# Each run starts from a fresh, flushed copy of a work tree holding the files
# and an empty object store.
for n in 500 5000; do
    template=$BENCH_DIR/ingest-template-$n
    if [[ ! -d $template ]]; then
        "$GIT" init -q "$template"
        mkdir -p "$template/files"
        for ((i = 0; i < n; i++)); do printf 'file %d of %d\n' "$i" "$n" >"$template/files/f$i.txt"; done
    fi
    list=$BENCH_DIR/ingest-list-$n
    (cd "$template" && find files -type f | sort) >"$list"
    repo=$BENCH_DIR/ingest-repo
    mkdir -p "$BENCH_DIR/ingest-aside"
    prepare="[ ! -e $repo ] || mv $repo $BENCH_DIR/ingest-aside/\$(date +%s%N); cp -a $template $repo; sync"
    git_objects="$GIT -C $repo -c core.fsync=loose-object"
    compare ingest "N=$n: git hash-object fsync=none vs refstore durable (batch)" "$prepare" \
        "$GIT -C $repo -c core.fsync=none hash-object -w --stdin-paths < $list" \
        "$REFSTORE -C $repo hash-object -w --stdin-paths < $list"
    compare ingest "N=$n: git add fsync=none vs refstore durable (batch)" "$prepare" \
        "$GIT -C $repo -c core.fsync=none add files" \
        "$REFSTORE -C $repo hash-object -w --stdin-paths < $list"
    compare ingest "N=$n: git hash-object durable (fsync) vs refstore durable (fsync)" "$prepare" \
        "$git_objects -c core.fsyncMethod=fsync hash-object -w --stdin-paths < $list" \
        "$REFSTORE -C $repo -c core.fsync=loose-object -c core.fsyncMethod=fsync hash-object -w --stdin-paths < $list"
    compare ingest "N=$n: git hash-object durable (batch) vs refstore durable (batch)" "$prepare" \
        "$git_objects -c core.fsyncMethod=batch hash-object -w --stdin-paths < $list" \
        "$REFSTORE -C $repo hash-object -w --stdin-paths < $list"
    compare ingest "N=$n: both fsync=none" "$prepare" \
        "$GIT -C $repo -c core.fsync=none hash-object -w --stdin-paths < $list" \
        "$REFSTORE -C $repo -c core.fsync=none hash-object -w --stdin-paths < $list"
done
