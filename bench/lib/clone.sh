# Helpers of the rows that serve clones and fetches of a real repository
# (clone-real.sh, clone-holes.sh), sourced by them: the server is timed
# under bash's `time` (CPU to the millisecond, children included;
# /usr/bin/time rounds to 10 ms, as much as a small fetch costs) and
# /usr/bin/time for the peak RSS; the pack bytes come from
# GIT_TRACE_PACKFILE on the client.

# clone_timing WORK: sets up the timing in the row's scratch directory
# WORK ($work and $timed for the functions below).
clone_timing() {
    work=$1
    timed=$work/timed
    cat >"$timed" <<TIMED
#!/usr/bin/env bash
TIMEFORMAT='%3U %3S %3R'
{ time /usr/bin/time -o "$work/rss" -f %M "\$@" 2>&3; } 3>&2 2>"$work/cpu"
TIMED
    chmod +x "$timed"
}

# measure OUT SERVER_CMD GIT_ARGS...: runs one git command whose
# upload-pack is SERVER_CMD, timed; appends "cpu wall rss_kb bytes" to OUT.
measure() {
    local out=$1 server=$2
    shift 2
    local trace=$work/packfile
    rm -f "$work/cpu" "$work/rss" "$trace"
    GIT_TRACE_PACKFILE=$trace "$GIT" "$@" --upload-pack="$timed $server" >/dev/null 2>&1
    local bytes rss
    bytes=$(stat -c %s "$trace")
    rss=$(tail -1 "$work/rss")
    awk -v b="$bytes" -v m="$rss" '{ printf "%.3f %.3f %d %d\n", $1 + $2, $3, m, b }' "$work/cpu" >>"$out"
}

# median OUT COLUMN: the median of a column of OUT.
median() {
    sort -n -k"$2" "$1" | awk -v c="$2" '{ v[NR] = $c } END { print v[int((NR + 1) / 2)] }'
}

# shallow_copy DEST [SOURCE]: a repository sharing SOURCE's objects
# (alternates; default $repo) with copies of its refs: cheap to make, and
# objects written into it are its own.
shallow_copy() {
    local dest=$1 source=${2:-$repo}
    "$GIT" init -q --bare "$dest"
    echo "$source/objects" >"$dest/objects/info/alternates"
    cp "$source/HEAD" "$dest/HEAD"
    [[ ! -f $source/packed-refs ]] || cp "$source/packed-refs" "$dest/packed-refs"
    cp -r "$source/refs/." "$dest/refs/"
}

# report CASE NAME OUT: one table line; echoes the median CPU.
report() {
    local cpu wall rss bytes
    cpu=$(median "$3" 1)
    wall=$(median "$3" 2)
    rss=$(median "$3" 3)
    bytes=$(median "$3" 4)
    extra "| $1 | $2 | $cpu | $wall | $((rss / 1024)) | $bytes |"
    echo "$cpu"
}

# full_clone ROW CASE SOURCE: CLONE_RUNS (default 1) full clones of
# SOURCE served by git and by refstore, recorded as ROW's "CASE CPU".
full_clone() {
    local row=$1 case=$2 source=$3 g r
    for server in git refstore; do
        local out=$work/${case//[^A-Za-z0-9]/_}-$server
        : >"$out"
        local cmd="$GIT upload-pack"
        [[ $server == git ]] || cmd="$REFSTORE upload-pack"
        for ((i = 0; i < ${CLONE_RUNS:-1}; i++)); do
            rm -rf "$work/clone.git"
            measure "$out" "$cmd" clone -q --bare --no-local "file://$source" "$work/clone.git"
        done
    done
    g=$(report "$case" "git" "$work/${case//[^A-Za-z0-9]/_}-git")
    r=$(report "$case" "refstore" "$work/${case//[^A-Za-z0-9]/_}-refstore")
    record "$row" "$case CPU" "$g" "$r"
}
