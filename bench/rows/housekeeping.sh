# A repository after many small pushes, and what housekeeping makes of it:
#
#   1. HK_PUSHES (default 10000) single-commit pushes into one bare
#      repository, the same request bytes fed to `git receive-pack` and to
#      `refstore receive-pack` (each push: one new commit, tree and blob;
#      `main` moves to the commit and a new branch `push/<n>` is created
#      at it). Both store them loose (receive.unpackLimit); git's
#      automatic gc is off so that both end in the same state.
#   2. Housekeeping of copies of the repository refstore received:
#      `refstore maintenance run --task=loose-objects
#      --task=incremental-repack` against git's `git maintenance run` of
#      the same tasks and against `git repack --geometric=2 -d --write-midx
#      --write-bitmap-index` (time and CPU, one run each); then the whole
#      `refstore maintenance run` (every task) against `git repack -adb`
#      followed by `git pack-refs --all`, as `git gc` would.
#   3. Serving: the refstore-maintained repository against the one
#      freshly repacked by `git repack -adb`, both served by `refstore
#      upload-pack` (the repositories compared) and both by `git
#      upload-pack` (git reading what refstore wrote): server CPU of a
#      full clone and of a fetch of the last 100 pushes, and `ls-remote`
#      time.
#
# Pushes are fed to the receive-packs directly, without a client, and with
# core.fsync=none on both sides: they prepare the repository and are
# reported, but what is measured is the housekeeping and the serving.
# HK_FETCH_RUNS (default 5) runs of each clone and fetch; medians.
# HK_GIT_PUSHES=0 skips the pushes into git (every later step works on
# copies of the repository refstore received; on a busy machine the
# 10,000 pushes into git take half an hour). HK_REUSE_PUSHES=1 starts
# from the repositories the last run pushed into (to measure a change to
# housekeeping or serving without pushing again).
pushes=${HK_PUSHES:-10000}
fetch_runs=${HK_FETCH_RUNS:-5}
((pushes > 100)) || { echo "housekeeping: HK_PUSHES must be more than 100" >&2; exit 1; }
work=$BENCH_DIR/housekeeping
rm -rf "$work"
mkdir -p "$work"

# The history the pushes bring, made once per HK_PUSHES: commit n changes
# one of 50 files (appending a line, as edits to source files do).
src=$BENCH_DIR/housekeeping-src-$pushes
requests=$src/requests
if [[ ! -f $src/done ]]; then
    rm -rf "$src"
    "$GIT" init -q --bare "$src/repo.git"
    one_file_commits "$src/repo.git" "$pushes" "$src/marks"
    sort -t: -k2 -n "$src/marks" | awk '{ print $2 }' >"$src/commits"
    mkdir -p "$requests"
    zero=0000000000000000000000000000000000000000
    old=$zero
    n=0
    while read -r new; do
        n=$((n + 1))
        req=$requests/$n
        main="$old $new refs/heads/main"
        branch="$zero $new refs/heads/push/$n"
        {
            printf '%04x%s\0report-status\n' $((${#main} + 19)) "$main"
            printf '%04x%s\n' $((${#branch} + 5)) "$branch"
            printf '0000'
        } >"$req"
        if [[ $old == "$zero" ]]; then
            printf '%s\n' "$new"
        else
            printf '%s\n^%s\n' "$new" "$old"
        fi | "$GIT" -C "$src/repo.git" pack-objects -q --revs --stdout >>"$req"
        old=$new
    done <"$src/commits"
    touch "$src/done"
fi
last=$(tail -1 "$src/commits")
before_last_100=$(tail -101 "$src/commits" | head -1)

# push_all KIND REPO RECEIVE_PACK...: feeds every request to the
# receive-pack; "cpu wall" seconds of the whole loop into $work/push-KIND.
push_all() {
    local kind=$1 repo=$2
    shift 2
    "$GIT" init -q --bare "$repo"
    "$GIT" -C "$repo" config gc.auto 0
    "$GIT" -C "$repo" config receive.autogc false
    local TIMEFORMAT='%3U %3S %3R'
    { time (
        for ((n = 1; n <= pushes; n++)); do
            GIT_CONFIG_PARAMETERS="'core.fsync=none'" "$@" "$repo" <"$requests/$n" >/dev/null 2>&1 ||
                exit 1
        done
    ); } 2>"$work/push-$kind.time" || { echo "housekeeping: a push to $kind failed" >&2; exit 1; }
    awk '{ printf "%.3f %.3f\n", $1 + $2, $3 }' "$work/push-$kind.time" >"$pushed/push-$kind"
}
pushed=$BENCH_DIR/housekeeping-pushed-$pushes
if [[ ${HK_REUSE_PUSHES:-0} == 1 && -f $pushed/done ]]; then
    echo "housekeeping: reusing the pushes of the last run" >&2
else
    rm -rf "$pushed"
    mkdir -p "$pushed"
    echo "housekeeping: $pushes pushes to refstore..." >&2
    push_all refstore "$pushed/pushed.git" "$REFSTORE" receive-pack
    if [[ ${HK_GIT_PUSHES:-1} == 1 ]]; then
        echo "housekeeping: $pushes pushes to git..." >&2
        push_all git "$pushed/pushed-git.git" "$GIT" receive-pack
    fi
    touch "$pushed/done"
fi
for repo in "$pushed"/*.git; do
    [[ $("$GIT" -C "$repo" rev-parse main) == "$last" ]] ||
        { echo "housekeeping: $repo does not have every push" >&2; exit 1; }
done

# record_cpu ROW VARIANT GIT_FILE REFSTORE_FILE: files of "cpu wall" lines;
# records the medians with CPU columns.
median() {
    sort -n -k"$2" "$1" | awk -v c="$2" '{ v[NR] = $c } END { print v[int((NR + 1) / 2)] }'
}
record_cpu() {
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$(median "$3" 2)" "$(median "$4" 2)" \
        "$(median "$3" 1)" "$(median "$4" 1)" >>"$results"
}
if [[ -f $pushed/push-git ]]; then
    record_cpu housekeeping "$pushes pushes (receive-pack, loose)" "$pushed/push-git" "$pushed/push-refstore"
fi

# timed_run OUT CMD...: runs CMD once; appends "cpu wall" to OUT.
timed_run() {
    local out=$1
    shift
    local TIMEFORMAT='%3U %3S %3R'
    { time "$@" >/dev/null 2>"$work/stderr"; } 2>"$work/time" ||
        { cat "$work/stderr" >&2; echo "housekeeping: failed: $*" >&2; exit 1; }
    awk '{ printf "%.3f %.3f\n", $1 + $2, $3 }' "$work/time" >>"$out"
}

# copy NAME: a copy of the pushed repository, flushed.
copy() {
    rm -rf "$work/$1.git"
    cp -a "$pushed/pushed.git" "$work/$1.git"
    sync
}

echo "housekeeping: maintenance..." >&2
copy ours-incr
timed_run "$work/maint-ours-incr" "$REFSTORE" -C "$work/ours-incr.git" maintenance run \
    --task=loose-objects --task=incremental-repack
copy git-incr
timed_run "$work/maint-git-incr" "$GIT" -C "$work/git-incr.git" maintenance run \
    --task=loose-objects --task=incremental-repack
copy git-geometric
timed_run "$work/maint-git-geometric" "$GIT" -C "$work/git-geometric.git" repack -q \
    --geometric=2 -d --write-midx --write-bitmap-index
record_cpu housekeeping "maintenance: git maintenance run --task=loose-objects --task=incremental-repack vs refstore's" \
    "$work/maint-git-incr" "$work/maint-ours-incr"
record_cpu housekeeping "maintenance: git repack --geometric=2 -d --write-midx --write-bitmap-index vs refstore loose-objects + incremental-repack" \
    "$work/maint-git-geometric" "$work/maint-ours-incr"

copy ours
timed_run "$work/maint-ours" "$REFSTORE" -C "$work/ours.git" maintenance run
copy git-adb
timed_run "$work/maint-git-adb" sh -c "'$GIT' -C '$work/git-adb.git' repack -adbq && '$GIT' -C '$work/git-adb.git' pack-refs --all"
record_cpu housekeeping "maintenance: git repack -adb + pack-refs --all vs refstore maintenance run (every task)" \
    "$work/maint-git-adb" "$work/maint-ours"

for repo in git-incr git-geometric ours-incr ours git-adb; do
    "$GIT" -C "$work/$repo.git" fsck --full --no-progress 2>/dev/null ||
        { echo "housekeeping: git fsck fails on $repo.git" >&2; exit 1; }
done

# Sizes and files each housekeeping left.
describe() {
    local dir=$work/$1.git/objects
    local packs loose bytes
    packs=$(find "$dir/pack" -name '*.pack' | wc -l)
    loose=$(find "$dir" -mindepth 2 -path "$dir/??/*" -type f | wc -l)
    bytes=$(find "$dir/pack" -name '*.pack' -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }')
    local midx=no bitmap=no graph=no
    [[ ! -f $dir/pack/multi-pack-index ]] || midx=yes
    compgen -G "$dir/pack/*.bitmap" >/dev/null && bitmap=yes
    [[ ! -e $dir/info/commit-graph && ! -e $dir/info/commit-graphs ]] || graph=yes
    extra "| $2 | $(median "$3" 2) | $(median "$3" 1) | $packs | $bytes | $loose | $midx | $bitmap | $graph |"
}
extra "### housekeeping: $pushes single-commit pushes, then housekeeping of copies of the repository"
extra ""
extra "| housekeeping | wall s | CPU s | packs | pack bytes | loose objects | midx | bitmap | commit-graph |"
extra "|---|---:|---:|---:|---:|---:|---|---|---|"
describe git-incr "git maintenance run --task=loose-objects --task=incremental-repack" "$work/maint-git-incr"
describe git-geometric "git repack --geometric=2 -d --write-midx --write-bitmap-index" "$work/maint-git-geometric"
describe ours-incr "refstore maintenance run --task=loose-objects --task=incremental-repack" "$work/maint-ours-incr"
describe git-adb "git repack -adb && git pack-refs --all" "$work/maint-git-adb"
describe ours "refstore maintenance run" "$work/maint-ours"
extra ""

# Serving. The server runs under bash's `time` (its children included).
timed=$work/timed
cat >"$timed" <<TIMED
#!/usr/bin/env bash
TIMEFORMAT='%3U %3S %3R'
{ time "\$@" 2>&3; } 3>&2 2>"$work/server-cpu"
TIMED
chmod +x "$timed"

# serve OUT SERVER GIT_ARGS...: one git command whose upload-pack is
# SERVER, timed; appends the server's "cpu wall" to OUT.
serve() {
    local out=$1 server=$2
    shift 2
    rm -f "$work/server-cpu"
    "$GIT" "$@" --upload-pack="$timed $server" >/dev/null 2>&1 ||
        { echo "housekeeping: failed: git $*" >&2; exit 1; }
    awk '{ printf "%.3f %.3f\n", $1 + $2, $3 }' "$work/server-cpu" >>"$out"
}

# A client that has every push but the last 100.
client=$work/client-base.git
"$GIT" init -q --bare "$client"
"$GIT" -C "$client" fetch -q "$src/repo.git" "$before_last_100:refs/heads/main"
head -n $((pushes - 100)) "$src/commits" | awk '{ printf "create refs/heads/push/%d %s\n", NR, $1 }' |
    "$GIT" -C "$client" update-ref --stdin
"$GIT" -C "$client" repack -adq

echo "housekeeping: serving..." >&2
for server_kind in refstore git; do
    server_cmd="$REFSTORE upload-pack"
    [[ $server_kind == refstore ]] || server_cmd="$GIT upload-pack"
    for repo in git-adb ours; do
        clone_out=$work/clone-$server_kind-$repo
        fetch_out=$work/fetch-$server_kind-$repo
        : >"$clone_out"
        : >"$fetch_out"
        for ((i = 0; i < fetch_runs; i++)); do
            rm -rf "$work/clone.git"
            serve "$clone_out" "$server_cmd" clone -q --bare --no-local "file://$work/$repo.git" "$work/clone.git"
            rm -rf "$work/fetch.git"
            cp -a "$client" "$work/fetch.git"
            serve "$fetch_out" "$server_cmd" -C "$work/fetch.git" fetch -q "file://$work/$repo.git" \
                '+refs/heads/*:refs/heads/*'
        done
    done
    record_cpu housekeeping "$server_kind upload-pack: full clone, git repack -adb vs refstore-maintained" \
        "$work/clone-$server_kind-git-adb" "$work/clone-$server_kind-ours"
    record_cpu housekeeping "$server_kind upload-pack: fetch of the last 100 pushes, git repack -adb vs refstore-maintained" \
        "$work/fetch-$server_kind-git-adb" "$work/fetch-$server_kind-ours"
    compare housekeeping "$server_kind upload-pack: ls-remote, git repack -adb vs refstore-maintained" true \
        "$GIT ls-remote --upload-pack='$server_cmd' file://$work/git-adb.git" \
        "$GIT ls-remote --upload-pack='$server_cmd' file://$work/ours.git"
done
extra "In the housekeeping rows from \"upload-pack\" on, the git column is the repository repacked by \`git repack -adb\`, the refstore column the one \`refstore maintenance run\` kept; both are served by the same program. Clone and fetch CPU is the server's (upload-pack and its children)."
