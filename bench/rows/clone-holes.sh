# Serving a full clone from a bitmapped pack that also holds objects the
# clone does not want, as hosts keep repositories: server CPU (user +
# system, children included), wall time, peak RSS and pack bytes of
# `git clone --bare --no-local`, through `git upload-pack` and through
# `refstore upload-pack`, and each server's "pack-reused" count (entries
# sent as stored).
#
#   (h) hidden refs: a copy of the repository repacked with
#       `git repack -adb` (every ref, so the pack and its bitmap hold the
#       hidden refs' objects), then CLONE_HIDE (default refs/pull) hidden
#   (f) a pooled fork: a pool holding that bitmapped pack with every ref,
#       and a fork borrowing its objects through objects/info/alternates
#       whose own refs are the pool's less CLONE_HIDE
#
# The repository is given by path and never modified: CLONE_REPO=/path/to/
# bare.git (e.g. a mirror with refs/pull/*). CLONE_HIDE is one or more
# for-each-ref patterns, space-separated (e.g. "refs/heads/seen
# refs/heads/next" for git.git). CLONE_RUNS (default 3) runs of each
# clone; medians are reported.
require_repository clone-holes || return 0
hide=${CLONE_HIDE:-refs/pull}
work=$BENCH_DIR/clone-holes
rm -rf "$work"
mkdir -p "$work"
source "$root/bench/lib/clone.sh"
clone_timing "$work"

# hide_refs REPO: makes CLONE_HIDE invisible to clients of REPO, its
# objects kept. Deleting them gives the server the same shape as
# transfer.hideRefs does; with a refstore that reads hideRefs, the line
# below may set it instead: git config -C "$1" transfer.hideRefs "$hide"
hide_refs() {
    # shellcheck disable=SC2086 # patterns, split on purpose
    "$GIT" -C "$1" for-each-ref --format='delete %(refname)' $hide | "$GIT" -C "$1" update-ref --stdin
}

# pack_reused SOURCE SERVER_CMD: the "pack-reused" count of a clone of
# SOURCE served by SERVER_CMD.
pack_reused() {
    rm -rf "$work/clone.git"
    "$GIT" clone --progress --bare --no-local --upload-pack="$2" "file://$1" "$work/clone.git" 2>&1 |
        tr '\r' '\n' | sed -n 's/.*pack-reused \([0-9]*\).*/\1/p' | tail -1
}

# A pool: every ref of the repository, repacked with a bitmap. A mirror
# clone, so that it has one pack (a repack beside alternates that are a
# partial clone's keeps their promisor pack too); where refs name objects
# the repository lacks, which a clone refuses, a copy borrowing its
# objects, repacked.
pool=$work/pool.git
if ! "$GIT" clone -q --bare --mirror --no-local "$repo" "$pool" 2>/dev/null; then
    rm -rf "$pool"
    shallow_copy "$pool"
fi
"$GIT" -C "$pool" repack -adbq
rm -f "$pool/objects/info/alternates"

# shellcheck disable=SC2086
extra "### clone-holes: serving $(basename "$repo") with $("$GIT" -C "$pool" for-each-ref $hide | wc -l) refs under $hide hidden ($("$GIT" -C "$pool" count-objects -v | sed -n 's/^size-pack: //p') KiB of packs)"
extra ""
extra "| case | server | CPU s | wall s | peak RSS MiB | pack bytes |"
extra "|---|---|---:|---:|---:|---:|"

hidden=$work/hidden.git
cp -r "$pool" "$hidden"
hide_refs "$hidden"
CLONE_RUNS=${CLONE_RUNS:-3} full_clone clone-holes "(h) full clone, $hide hidden" "$hidden"

fork=$work/fork.git
shallow_copy "$fork" "$pool"
hide_refs "$fork"
CLONE_RUNS=${CLONE_RUNS:-3} full_clone clone-holes "(f) full clone of a pooled fork" "$fork"

extra ""
for case in "(h):$hidden" "(f):$fork"; do
    g=$(pack_reused "${case#*:}" "$GIT upload-pack")
    r=$(pack_reused "${case#*:}" "$REFSTORE upload-pack")
    extra "${case%%:*} pack-reused: git $g, refstore $r"
done
extra ""
extra "Server CPU includes pack-objects for git."
