# Throughput of `refstore serve` under concurrent real git clients on
# loopback: SOAK_CLIENTS client loops (default 8; each runs ls-remote v0
# and v2, fetch, clone and push in turn) for SOAK_SECONDS (default 20)
# against a release build with --workers 8. Reports operations and HTTP
# requests per second, p50/p99 latency per git operation (client side) and
# per HTTP request kind (the server's access log), and the server's peak
# resident memory. Loopback only; no comparison with git's http-backend
# (a CGI program, which needs a web server in front).
seconds=${SOAK_SECONDS:-20}
clients=${SOAK_CLIENTS:-8}
work=$BENCH_DIR/soak-$(date +%s%N)
mkdir -p "$work/root" "$work/clients"

# A repository of 100 commits over 20 files.
"$GIT" init -q -b main "$work/src"
for ((c = 0; c < 100; c++)); do
    printf 'line %d\n' "$c" >>"$work/src/file$((c % 20)).txt"
    "$GIT" -C "$work/src" add -A
    "$GIT" -C "$work/src" commit -q -m "commit $c"
done
"$GIT" clone -q --bare "$work/src" "$work/root/repo.git"
echo "bench:bench-pw" >"$work/users"

RUST_LOG=info "$REFSTORE" serve --listen 127.0.0.1:0 --print-address --root "$work/root" \
    --allow-push --credentials "$work/users" --workers 8 >"$work/addr" 2>"$work/server.log" &
server=$!
for _ in $(seq 100); do [[ -s $work/addr ]] && break; sleep 0.05; done
addr=$(head -1 "$work/addr")
url=http://$addr/repo.git
push_url=http://bench:bench-pw@$addr/repo.git

# client N: loops over the operations until the deadline, appending
# "operation milliseconds" lines to its own file.
client() {
    local n=$1 deadline=$2 dir=$work/clients/$1 i=0 tip
    "$GIT" clone -q --bare "$work/src" "$dir/push.git"
    "$GIT" clone -q --bare "$url" "$dir/fetch.git"
    tip=$("$GIT" -C "$dir/push.git" rev-parse main)
    timed() {
        local op=$1 start end
        shift
        start=$(date +%s%N)
        "$@" >/dev/null 2>>"$dir/errors" || echo "$op failed" >>"$dir/errors"
        end=$(date +%s%N)
        echo "$op $(((end - start) / 1000000))" >>"$dir/times"
    }
    while (($(date +%s) < deadline)); do
        i=$((i + 1))
        timed ls-remote-v0 "$GIT" -c protocol.version=0 ls-remote "$url"
        timed ls-remote-v2 "$GIT" -c protocol.version=2 ls-remote "$url"
        timed fetch "$GIT" -C "$dir/fetch.git" fetch -q "$url" "+refs/heads/*:refs/heads/*"
        rm -rf "$dir/clone.git"
        timed clone "$GIT" clone -q --bare "$url" "$dir/clone.git"
        tip=$(echo "client $n push $i" | "$GIT" -C "$dir/push.git" commit-tree -p "$tip" "$tip^{tree}")
        timed push "$GIT" -C "$dir/push.git" push -q "$push_url" "$tip:refs/heads/client-$n"
    done
}
export -f client
export GIT work url push_url

start=$(date +%s%N)
deadline=$(($(date +%s) + seconds))
pids=()
for ((n = 0; n < clients; n++)); do
    mkdir -p "$work/clients/$n"
    bash -c "client $n $deadline" &
    pids+=($!)
done
wait "${pids[@]}"
elapsed_ms=$((($(date +%s%N) - start) / 1000000))
peak_kib=$(awk '/^VmHWM:/ { print $2 }' "/proc/$server/status")
# utime + stime of the server, in clock ticks (fields 14 and 15; the
# command name in field 2 has no spaces).
cpu_ms=$(awk -v hz="$(getconf CLK_TCK)" '{ printf "%d", ($14 + $15) * 1000 / hz }' "/proc/$server/stat")
kill -TERM "$server"
wait "$server" || true

failures=$(cat "$work"/clients/*/errors 2>/dev/null | grep -c ' failed$' || true)
cat "$work"/clients/*/times >"$work/ops"
# Access-log lines: kind from method and URL, and the server's ms.
awk '/refstore::access/ {
    m = ""; u = ""; t = ""
    for (i = 1; i <= NF; i++) {
        if ($i ~ /^method=/) m = substr($i, 8)
        if ($i ~ /^url=/) u = substr($i, 5)
        if ($i ~ /^ms=/) t = substr($i, 4)
    }
    svc = (u ~ /receive-pack/) ? "receive-pack" : "upload-pack"
    kind = (u ~ /info\/refs/) ? "GET info/refs " svc : m " git-" svc
    gsub(/ /, "_", kind)
    print kind, t
}' "$work/server.log" >"$work/requests"

# table FILE: one markdown row per kind with count, rate, p50 and p99.
table() {
    local kind
    for kind in $(awk '{ print $1 }' "$1" | sort -u); do
        awk -v k="$kind" '$1 == k { print $2 }' "$1" | sort -n | awk -v k="${kind//_/ }" -v s="$elapsed_ms" '
            { v[NR] = $1 }
            END {
                p50 = v[int((NR - 1) * 0.50) + 1]; p99 = v[int((NR - 1) * 0.99) + 1]
                printf "| %s | %d | %.1f | %d ms | %d ms |\n", k, NR, NR / (s / 1000), p50, p99
            }'
    done
}

ops=$(wc -l <"$work/ops")
requests=$(wc -l <"$work/requests")
extra "### soak: refstore serve under $clients concurrent git clients for $((elapsed_ms / 1000)) s (release build, --workers 8, loopback)"
extra ""
extra "$ops git operations ($(awk -v n="$ops" -v s="$elapsed_ms" 'BEGIN { printf "%.1f", n / (s / 1000) }')/s), $requests HTTP requests ($(awk -v n="$requests" -v s="$elapsed_ms" 'BEGIN { printf "%.1f", n / (s / 1000) }')/s), $failures failed; server CPU $((cpu_ms / 1000)).$(printf '%03d' $((cpu_ms % 1000))) s ($(awk -v c="$cpu_ms" -v n="$requests" 'BEGIN { printf "%.2f", c / n }') ms per request), peak RSS $((peak_kib / 1024)) MiB."
extra ""
extra "| git operation (client side) | count | per s | p50 | p99 |"
extra "|---|---:|---:|---:|---:|"
extra "$(table "$work/ops")"
extra ""
extra "| HTTP request (server side) | count | per s | p50 | p99 |"
extra "|---|---:|---:|---:|---:|"
extra "$(table "$work/requests")"
extra ""
if ((failures > 0)); then
    echo "error: $failures soak operations failed; see $work/clients/*/errors" >&2
    exit 1
fi
