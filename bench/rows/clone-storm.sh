# A clone storm: N clients at once cloning (or fetching) the same tip of
# one repository, as a CI system's jobs do on a push. refstore serves them
# over HTTP (`refstore serve`, its pack cache on, as by default: one pack
# computed, the others sent from it), git over git:// (`git daemon`,
# which runs upload-pack and pack-objects per client, cheaper than
# http-backend behind a web server). Measured on the server side: its CPU
# (user + system of the server process and the children it reaped, from
# /proc), the wall time from the first client's start to the last one's
# end, and the peak resident memory of the server's process tree (sampled
# every 50 ms).
#
#   full N       N concurrent `git clone --bare --no-local` of the tip
#   depth-1 N    the same with `--depth 1`
#   fetch N      N clients one commit behind fetch the new one
#
# The clients are $GIT, or git on PATH when $GIT was built without HTTP
# (STORM_CLIENT=/path/to/git chooses). N is 16 and 32 (STORM_SIZES="16
# 32"); STORM_CASES picks among full, depth-1 and fetch (default all;
# a full storm of a large repository costs the clients much: each indexes
# the whole pack). Every storm starts with an empty
# cache and a fresh server. The repository is given like clone-real's:
# CLONE_REPO=/path/to/bare.git (never modified); without it the row says
# so and measures nothing.
require_repository clone-storm || return 0
sizes=${STORM_SIZES:-16 32}
work=$BENCH_DIR/clone-storm
rm -rf "$work"
mkdir -p "$work/root" "$work/clients"
ticks=$(getconf CLK_TCK)
client=${STORM_CLIENT:-$GIT}
[[ -x $("$client" --exec-path)/git-remote-http ]] || client=$(command -v git)

# A repository sharing REPO's objects (alternates) with copies of its
# HEAD, branches and tags.
shallow_copy() {
    local dest=$1
    "$GIT" init -q --bare "$dest"
    echo "$repo/objects" >"$dest/objects/info/alternates"
    cp "$repo/HEAD" "$dest/HEAD"
    "$GIT" -C "$repo" for-each-ref --format='create %(refname) %(objectname)' refs/heads refs/tags |
        "$GIT" -C "$dest" update-ref --stdin
}

served=$work/root/storm.git
shallow_copy "$served"
head_ref=$("$GIT" -C "$served" symbolic-ref HEAD)
old=$("$GIT" -C "$served" rev-parse "$head_ref")

# cpu_ticks PID: user + system time of PID and of the children it reaped.
cpu_ticks() {
    awk '{ print $14 + $15 + $16 + $17 }' "/proc/$1/stat"
}

# peak_rss PID OUT: until OUT.stop exists, samples the resident memory of
# PID's process tree; writes the peak (KiB) to OUT.
peak_rss() {
    local root_pid=$1 out=$2 peak=0 now
    while [[ ! -e $out.stop ]]; do
        now=$(ps -e -o pid=,ppid=,rss= | awk -v root="$root_pid" '
            { parent[$1] = $2; rss[$1] = $3 }
            END {
                for (p in parent) {
                    q = p
                    while (q != "" && q != 0 && q != root) q = parent[q]
                    if (q == root) total += rss[p]
                }
                print total + 0
            }')
        ((now <= peak)) || peak=$now
        sleep 0.05
    done
    echo "$peak" >"$out"
}

# start_server KIND: starts refstore serve or git daemon on $work/root;
# sets server_pid and url.
start_server() {
    rm -rf "$work/root/.refstore-pack-cache"
    if [[ $1 == refstore ]]; then
        rm -f "$work/addr"
        "$REFSTORE" serve --root "$work/root" --listen 127.0.0.1:0 --print-address \
            --workers 64 --max-connections-per-ip 128 >"$work/addr" 2>"$work/serve.log" &
        server_pid=$!
        until grep -q ':[0-9]' "$work/addr" 2>/dev/null; do sleep 0.05; done
        url="http://$(head -1 "$work/addr")/storm.git"
    else
        local port
        port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
        # git-daemon itself, not the `git` that would wait on it: its
        # children's CPU reaches /proc once the daemon has reaped them.
        "$("$GIT" --exec-path)/git-daemon" --base-path="$work/root" --export-all --reuseaddr --listen=127.0.0.1 \
            --port="$port" --max-connections=128 "$work/root" 2>"$work/daemon.log" &
        server_pid=$!
        until "$GIT" ls-remote "git://127.0.0.1:$port/storm.git" HEAD >/dev/null 2>&1; do sleep 0.05; done
        url="git://127.0.0.1:$port/storm.git"
    fi
}

stop_server() {
    kill "$server_pid"
    wait "$server_pid" 2>/dev/null || true
}

# storm KIND CASE N: N clients at once against a fresh server of KIND;
# appends "cpu_s wall_s peak_rss_kib" to $work/CASE-N-KIND.
storm() {
    local kind=$1 case=$2 n=$3 i
    rm -rf "$work/clients" && mkdir -p "$work/clients"
    if [[ $case == fetch ]]; then
        for ((i = 0; i < n; i++)); do
            shallow_copy "$work/clients/c$i.git"
            "$GIT" -C "$work/clients/c$i.git" update-ref "$head_ref" "$old"
        done
    fi
    start_server "$kind"
    # The advertisement is the same for every client: read it once so
    # that the storm measures packs.
    "$client" ls-remote "$url" >/dev/null
    local before start end
    before=$(cpu_ticks "$server_pid")
    rm -f "$work/rss" "$work/rss.stop"
    peak_rss "$server_pid" "$work/rss" &
    local sampler=$!
    start=$(date +%s.%N)
    local pids=()
    for ((i = 0; i < n; i++)); do
        case $case in
        full) "$client" clone -q --bare --no-local "$url" "$work/clients/c$i.git" & ;;
        depth-1) "$client" clone -q --bare --no-local --depth 1 "$url" "$work/clients/c$i.git" & ;;
        fetch) "$client" -C "$work/clients/c$i.git" fetch -q "$url" "+$head_ref:$head_ref" & ;;
        esac
        pids+=($!)
    done
    local failed=0
    for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
    end=$(date +%s.%N)
    # Let git daemon reap its last children.
    sleep 0.5
    local after
    after=$(cpu_ticks "$server_pid")
    touch "$work/rss.stop"
    wait "$sampler"
    stop_server
    ((failed == 0)) || { echo "clone-storm: a $kind client failed ($case $n)" >&2; exit 1; }
    awk -v b="$before" -v a="$after" -v t="$ticks" -v s="$start" -v e="$end" -v m="$(cat "$work/rss")" \
        'BEGIN { printf "%.3f %.3f %d\n", (a - b) / t, e - s, m }' >>"$work/$case-$n-$kind"
}

extra "### clone-storm: $("$client" --version) clients; $(basename "$repo") ($("$GIT" -C "$repo" count-objects -v | sed -n 's/^size-pack: //p') KiB of packs), refstore serve (HTTP, pack cache) vs git daemon"
extra ""
extra "| case | clients | server | CPU s | wall s | peak RSS MiB |"
extra "|---|---:|---|---:|---:|---:|"

# One new commit on the served HEAD for the fetch storms, made after the
# clone storms (which clone the old tip).
add_commit() {
    local now file content
    now=$(date +%s)
    file=$("$GIT" -C "$served" ls-tree "$old" | awk '$2 == "blob" && !found { print $4; found = 1 }')
    content=$("$GIT" -C "$served" cat-file blob "$old:$file")$'\n'"storm line"
    {
        printf 'commit %s\ncommitter bench <bench@refstore.invalid> %d +0000\ndata 6\nstorm\n' "$head_ref" $((now + 1))
        printf 'from %s\n' "$old"
        printf 'M 100644 inline %s\ndata %d\n%s\n' "$file" "$(printf '%s' "$content" | wc -c)" "$content"
    } | "$GIT" -C "$served" fast-import --quiet
}

for case in ${STORM_CASES:-full depth-1 fetch}; do
    [[ $case != fetch ]] || add_commit
    for n in $sizes; do
        for kind in git refstore; do
            storm "$kind" "$case" "$n"
        done
        read -r gc gw gm <"$work/$case-$n-git"
        read -r rc rw rm <"$work/$case-$n-refstore"
        extra "| $case | $n | git | $gc | $gw | $((gm / 1024)) |"
        extra "| $case | $n | refstore | $rc | $rw | $((rm / 1024)) |"
        record clone-storm "$case x$n wall" "$gw" "$rw"
        record clone-storm "$case x$n CPU" "$gc" "$rc"
    done
done
extra ""
extra "Server CPU includes upload-pack and pack-objects for git."
