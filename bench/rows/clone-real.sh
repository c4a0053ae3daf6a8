# Serving a real repository: `git clone --bare --no-local` and
# fetches through `git upload-pack` (with its pack-objects) and through
# `refstore upload-pack`, measuring the server: CPU (user + system, its
# children included, from /usr/bin/time), its wall time, its peak RSS, and
# the pack bytes it sent (GIT_TRACE_PACKFILE on the client).
#
#   (a) full clone, no bitmaps (the repository as given)
#   (a2) full clone with a commit-graph (a copy with
#       `git commit-graph write --reachable`; only with CLONE_GRAPH=1)
#   (b) full clone with bitmaps (a copy repacked with `git repack -adb`;
#       only with CLONE_BITMAPS=1, the repack takes minutes)
#   (c) fetch of one new commit
#   (d) fetch after 100 new commits (the client asks for thin-pack, as
#       `git fetch` does)
#   (e) `--depth 1` clone, as CI systems make on every run (FETCH_RUNS
#       runs; CLONE_DEPTH=0 skips it)
#
# The repository is given by path and never modified: CLONE_REPO=/path/to/
# bare.git (e.g. git.git brought with the `fetch` tool). Without it the row
# says so and measures nothing. CLONE_RUNS (default 1) runs of each full
# clone, FETCH_RUNS (default 3) of each fetch; medians are reported.
# CLONE_FULL=0 skips the full clones, (a) and (b), to measure the fetches
# alone.
require_repository clone-real || return 0
fetch_runs=${FETCH_RUNS:-3}
work=$BENCH_DIR/clone-real
rm -rf "$work"
mkdir -p "$work"

source "$root/bench/lib/clone.sh"
clone_timing "$work"

head_ref=$("$GIT" -C "$repo" symbolic-ref HEAD)
branch=${head_ref#refs/heads/}

extra "### clone-real: serving $(basename "$repo") ($("$GIT" -C "$repo" count-objects -v | sed -n 's/^size-pack: //p') KiB of packs)"
extra ""
extra "| case | server | CPU s | wall s | peak RSS MiB | pack bytes |"
extra "|---|---|---:|---:|---:|---:|"

if [[ ${CLONE_FULL:-1} == 1 ]]; then
    full_clone clone-real "(a) full clone" "$repo"
fi

# Only what a clone asks for: other refs (a mirror's refs/pull/*) may
# name objects the repository lacks, on which a repack fails.
clone_refs_only() {
    "$GIT" -C "$1" for-each-ref --format='delete %(refname)' |
        grep -v -E ' refs/(heads|tags)/' | "$GIT" -C "$1" update-ref --stdin
}

if [[ ${CLONE_FULL:-1} == 1 && ${CLONE_GRAPH:-0} == 1 ]]; then
    graphed=$work/graph.git
    shallow_copy "$graphed"
    clone_refs_only "$graphed"
    "$GIT" -C "$graphed" commit-graph write --reachable
    full_clone clone-real "(a2) full clone, commit-graph" "$graphed"
fi

if [[ ${CLONE_FULL:-1} == 1 && ${CLONE_BITMAPS:-0} == 1 ]]; then
    bitmapped=$work/bitmap.git
    shallow_copy "$bitmapped"
    clone_refs_only "$bitmapped"
    "$GIT" -C "$bitmapped" repack -adbq
    rm "$bitmapped/objects/info/alternates"
    full_clone clone-real "(b) full clone, bitmaps" "$bitmapped"
fi

# depth_clone CASE SOURCE DEPTH: (e), a shallow clone of DEPTH commits.
depth_clone() {
    local case=$1 source=$2 depth=$3 g r
    for server in git refstore; do
        local out=$work/depth-$server
        : >"$out"
        local cmd="$GIT upload-pack"
        [[ $server == git ]] || cmd="$REFSTORE upload-pack"
        for ((i = 0; i < fetch_runs; i++)); do
            rm -rf "$work/clone.git"
            measure "$out" "$cmd" clone -q --bare --no-local --depth "$depth" "file://$source" "$work/clone.git"
        done
    done
    g=$(report "$case" "git" "$work/depth-git")
    r=$(report "$case" "refstore" "$work/depth-refstore")
    record clone-real "$case CPU" "$g" "$r"
}

if [[ ${CLONE_DEPTH:-1} == 1 ]]; then
    depth_clone "(e) --depth 1 clone" "$repo" 1
fi

# fetch CASE COMMITS: the server gets COMMITS new commits on its HEAD
# branch (each appending a line to one file), a client with the old refs
# fetches them.
fetch() {
    local case=$1 commits=$2
    local server=$work/server.git client=$work/client.git
    rm -rf "$server" "$client"
    shallow_copy "$server"
    shallow_copy "$client"
    local old file now
    # New commits are newer than everything else, as pushes are.
    now=$(date +%s)
    old=$("$GIT" -C "$server" rev-parse "$head_ref")
    # The first file at the top of the tree.
    file=$("$GIT" -C "$server" ls-tree "$old" | awk '$2 == "blob" && !found { print $4; found = 1 }')
    {
        local content
        content=$("$GIT" -C "$server" cat-file blob "$old:$file")
        for ((c = 1; c <= commits; c++)); do
            content+=$'\n'"bench line $c"
            printf 'commit %s\ncommitter bench <bench@refstore.invalid> %d +0000\ndata 9\nbench %03d\n' \
                "$head_ref" $((now + c)) "$c"
            ((c > 1)) || printf 'from %s\n' "$old"
            printf 'M 100644 inline %s\ndata %d\n%s\n' "$file" "$(printf '%s' "$content" | wc -c)" "$content"
        done
    } | "$GIT" -C "$server" fast-import --quiet
    for server_kind in git refstore; do
        local out=$work/fetch-$commits-$server_kind
        : >"$out"
        local cmd="$GIT upload-pack"
        [[ $server_kind == git ]] || cmd="$REFSTORE upload-pack"
        for ((i = 0; i < fetch_runs; i++)); do
            # Forget what the last run received.
            find "$client/objects" -mindepth 1 -maxdepth 1 -name '??' -exec rm -rf {} +
            rm -f "$client/objects/pack/"*
            "$GIT" -C "$client" update-ref "$head_ref" "$old"
            measure "$out" "$cmd" -C "$client" fetch -q "file://$server" "+$head_ref:$head_ref"
        done
    done
    local g r
    g=$(report "$case" "git" "$work/fetch-$commits-git")
    r=$(report "$case" "refstore" "$work/fetch-$commits-refstore")
    record clone-real "$case CPU" "$g" "$r"
}

fetch "(c) fetch 1 commit" 1
fetch "(d) fetch 100 commits" 100
extra ""
extra "Server CPU includes pack-objects for git."
