# Ref workloads on both ref formats: `create` (10k new refs into
# 100k existing), `recreate` (delete those 10k, then create them again) and
# `migrate` (1M refs files -> reftable). With GIT=<git >= 2.45> (which has
# reftable; build it by hand) the git column is that git's reftable backend
# with core.fsync=none against durable refstore, and `git refs migrate`
# against `refstore refs migrate`. Older gits (2.39 on Debian 12) have no
# reftable: the git column is then git's files backend, and migrate compares
# refstore's two directions, as each variant says.
files_template() { # DIR N: a repository with N packed refs at one commit
    local dir=$1 n=$2
    [[ -d $dir ]] && return
    "$GIT" init -q --bare "$dir"
    local tree commit
    tree=$("$GIT" -C "$dir" mktree </dev/null)
    commit=$(echo base | "$GIT" -C "$dir" commit-tree "$tree")
    {
        echo "# pack-refs with: peeled fully-peeled sorted "
        awk -v c="$commit" -v n="$n" 'BEGIN { for (i = 0; i < n; i++) printf "%s refs/heads/existing/r%07d\n", c, i }'
    } >"$dir/packed-refs"
    "$GIT" -C "$dir" symbolic-ref HEAD refs/heads/existing/r0000000
}
reftable_template() { # FILES_DIR DIR
    [[ -d $2 ]] && return
    cp -a "$1" "$2"
    "$REFSTORE" -C "$2" refs migrate --ref-format=reftable >/dev/null
}

git_reftable=no
if "$GIT" init -q --bare --ref-format=reftable "$BENCH_DIR/rt-probe" 2>/dev/null; then
    git_reftable=yes
fi
rm -rf "$BENCH_DIR/rt-probe"

files=$BENCH_DIR/rt-files-100k
reftable=$BENCH_DIR/rt-reftable-100k
files_template "$files" 100000
reftable_template "$files" "$reftable"
git_tables=$BENCH_DIR/rt-git-reftable-100k
if [[ $git_reftable == yes && ! -d $git_tables ]]; then
    cp -a "$files" "$git_tables"
    "$GIT" -C "$git_tables" refs migrate --ref-format=reftable >/dev/null
fi
commit=$("$GIT" -C "$files" rev-parse HEAD)
create=$BENCH_DIR/rt-create
delete=$BENCH_DIR/rt-delete
for ((i = 0; i < 10000; i++)); do printf 'create refs/heads/new/r%05d %s\n' "$i" "$commit"; done >"$create"
for ((i = 0; i < 10000; i++)); do printf 'delete refs/heads/existing/r%07d\n' "$i"; done >"$delete"
recreate=$BENCH_DIR/rt-recreate
sed 's/^delete \(.*\)$/create \1 '"$commit"'/' "$delete" >"$recreate"
work=$BENCH_DIR/rt-work
mkdir -p "$BENCH_DIR/rt-aside"
# Every run starts from fresh copies of the templates: g (what git updates),
# r (refstore's reftable).
fresh() {
    echo "[ ! -e $work ] || mv $work $BENCH_DIR/rt-aside/\$(date +%s%N); mkdir $work; cp -a $1 $work/g; cp -a $2 $work/r; sync"
}

# What the git column updates: git's own reftable where it has one, its
# files backend otherwise.
if [[ $git_reftable == yes ]]; then
    git_template=$git_tables git_format=reftable
else
    git_template=$files git_format=files
fi
vs="git $git_format fsync=none vs refstore reftable durable"
compare reftable "create 10k into 100k: $vs" "$(fresh "$git_template" "$reftable")" \
    "$GIT -C $work/g -c core.fsync=none update-ref --stdin < $create" \
    "$REFSTORE -C $work/r update-ref --stdin < $create"
compare reftable "recreate 10k of 100k: $vs" "$(fresh "$git_template" "$reftable")" \
    "$GIT -C $work/g -c core.fsync=none update-ref --stdin < $delete && $GIT -C $work/g -c core.fsync=none update-ref --stdin < $recreate" \
    "$REFSTORE -C $work/r update-ref --stdin < $delete && $REFSTORE -C $work/r update-ref --stdin < $recreate"
compare reftable "delete 10k of 100k: $vs" "$(fresh "$git_template" "$reftable")" \
    "$GIT -C $work/g -c core.fsync=none update-ref --stdin < $delete" \
    "$REFSTORE -C $work/r update-ref --stdin < $delete"
compare reftable "one ref into 100k: $vs" "$(fresh "$git_template" "$reftable")" \
    "$GIT -C $work/g -c core.fsync=none update-ref refs/heads/one $commit" \
    "$REFSTORE -C $work/r update-ref refs/heads/one $commit"
compare reftable "create 10k into 100k: refstore files durable (git column) vs refstore reftable durable" "$(fresh "$files" "$reftable")" \
    "$REFSTORE -C $work/g update-ref --stdin < $create" \
    "$REFSTORE -C $work/r update-ref --stdin < $create"

big=$BENCH_DIR/rt-files-1m
files_template "$big" 1000000
if [[ $git_reftable == yes ]]; then
    compare reftable "migrate 1M files->reftable: git fsync=none vs refstore durable" "$(fresh "$big" "$big")" \
        "$GIT -C $work/g -c core.fsync=none refs migrate --ref-format=reftable" \
        "$REFSTORE -C $work/r refs migrate --ref-format=reftable"
else
    big_reftable=$BENCH_DIR/rt-reftable-1m
    reftable_template "$big" "$big_reftable"
    compare reftable "migrate 1M: files->reftable (git column) vs reftable->files (refstore column)" "$(fresh "$big" "$big_reftable")" \
        "$REFSTORE -C $work/g refs migrate --ref-format=reftable" \
        "$REFSTORE -C $work/r refs migrate --ref-format=files"
fi
