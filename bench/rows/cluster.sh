# What etcd costs: a node of a 3-node refstore cluster (refs in a 3-member
# etcd on loopback, objects copied to 2 nodes) against one refstore node
# alone (refs in the repository's own files), both over smart HTTP with git
# as the client:
# - a push of 100 new refs (no new objects, so the ref transaction is what
#   is measured): latency of one pusher, and latency and throughput with 8
#   concurrent pushers (spread over the cluster's three nodes);
# - `git ls-remote` of a repository with 100k refs: the first on the node
#   (the cluster node reads every ref from etcd), then with the node's copy
#   warm (the advertisement costs one linearizable etcd read).
# Both nodes run here with the same options; only --cluster differs. The
# row prints its own table (single node vs cluster), not git vs refstore.
command -v etcd >/dev/null || { echo "error: etcd is missing (scripts/install-deps installs it)" >&2; exit 1; }
base=$BENCH_DIR/cluster
rm -rf "$base"
mkdir -p "$base"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# etcd: 3 members.
initial="" endpoints="" clients=()
for m in m1 m2 m3; do
    c=$(free_port) p=$(free_port)
    clients+=("$c")
    eval "peer_$m=$p client_$m=$c"
    initial+="${initial:+,}$m=http://127.0.0.1:$p"
    endpoints+="${endpoints:+, }\"http://127.0.0.1:$c\""
done
for m in m1 m2 m3; do
    eval "p=\$peer_$m c=\$client_$m"
    etcd --name "$m" --data-dir "$base/etcd-$m" \
        --listen-client-urls "http://127.0.0.1:$c" --advertise-client-urls "http://127.0.0.1:$c" \
        --listen-peer-urls "http://127.0.0.1:$p" --initial-advertise-peer-urls "http://127.0.0.1:$p" \
        --initial-cluster "$initial" --initial-cluster-state new \
        --max-txn-ops 100000 --max-request-bytes 33554432 \
        --logger zap --log-outputs "$base/etcd-$m.log" &
    pids+=($!)
done
for c in "${clients[@]}"; do
    until python3 - "$c" <<'PY' 2>/dev/null
import sys, urllib.request
sys.exit(0 if b'"health":"true"' in urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/health", timeout=1).read() else 1)
PY
    do sleep 0.2; done
done

# The repositories: push.git (main at one commit) and adv.git (100k refs),
# one root per node.
src=$base/src
"$GIT" init -q "$src"
"$GIT" -C "$src" commit -q --allow-empty -m base
commit=$("$GIT" -C "$src" rev-parse HEAD)
echo "alice:pw" >"$base/users"
single_port=$(free_port) cluster_port=$(free_port) n2_port=$(free_port) n3_port=$(free_port)
echo "a secret the bench's nodes share" >"$base/cluster.secret"
for node in single cluster cluster-n2 cluster-n3; do
    root=$base/root-$node
    mkdir -p "$root"
    "$GIT" init -q --bare "$root/push.git"
    "$GIT" -C "$src" push -q "$root/push.git" main
    "$GIT" init -q --bare "$root/adv.git"
    "$GIT" -C "$src" push -q "$root/adv.git" main
    {
        echo "# pack-refs with: peeled fully-peeled sorted "
        awk -v c="$commit" 'BEGIN { for (i = 0; i < 100000; i++) printf "%s refs/heads/b%07d\n", c, i }'
    } >"$root/adv.git/packed-refs"
done
for n in n1 n2 n3; do
    cat >"$base/cluster-$n.toml" <<TOML
etcd = [$endpoints]
node = "$n"
object_copies = 2
secret_file = "cluster.secret"
[nodes]
n1 = "http://127.0.0.1:$cluster_port"
n2 = "http://127.0.0.1:$n2_port"
n3 = "http://127.0.0.1:$n3_port"
TOML
done
for repo in push adv; do
    "$REFSTORE" cluster import --cluster "$base/cluster-n1.toml" "$base/root-cluster/$repo.git"
done
"$REFSTORE" serve --listen "127.0.0.1:$single_port" --root "$base/root-single" --allow-push \
    --credentials "$base/users" --workers 16 2>"$base/single.log" &
pids+=($!)
"$REFSTORE" serve --listen "127.0.0.1:$cluster_port" --root "$base/root-cluster" --allow-push \
    --credentials "$base/users" --workers 16 --cluster "$base/cluster-n1.toml" 2>"$base/cluster.log" &
pids+=($!)
for n in n2 n3; do
    eval "port=\$${n}_port"
    "$REFSTORE" serve --listen "127.0.0.1:$port" --root "$base/root-cluster-$n" --allow-push \
        --credentials "$base/users" --workers 16 --cluster "$base/cluster-$n.toml" 2>"$base/cluster-$n.log" &
    pids+=($!)
done
sleep 1

# push_refs NODE PORT PUSHER ROUND: one push of 100 new refs; prints its
# latency in seconds.
push_refs() {
    local specs=() i
    for ((i = 0; i < 100; i++)); do specs+=("main:refs/heads/p$3/r$4/b$i"); done
    local start end
    start=$(date +%s%N)
    "$GIT" -C "$src" push -q "http://alice:pw@127.0.0.1:$2/push.git" "${specs[@]}"
    end=$(date +%s%N)
    awk -v s="$start" -v e="$end" 'BEGIN { printf "%.6f\n", (e - s) / 1e9 }'
}
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

declare -A one eight rate adv cold
for node in single cluster; do
    eval "port=\$${node}_port"
    one[$node]=$(for ((r = 0; r < RUNS * 2; r++)); do push_refs "$node" "$port" solo "$r"; done | median)
    start=$(date +%s%N)
    pushers=()
    for ((p = 0; p < 8; p++)); do
        target=$port
        if [[ $node == cluster ]]; then
            case $((p % 3)) in 1) target=$n2_port ;; 2) target=$n3_port ;; esac
        fi
        (for ((r = 0; r < RUNS; r++)); do push_refs "$node" "$target" "$p" "$r"; done) >"$base/$node-pusher-$p" &
        pushers+=($!)
    done
    wait "${pushers[@]}"
    end=$(date +%s%N)
    eight[$node]=$(cat "$base/$node"-pusher-* | median)
    rate[$node]=$(awk -v n=$((8 * RUNS)) -v s="$start" -v e="$end" 'BEGIN { printf "%.1f", n / ((e - s) / 1e9) }')
    # The first listing of the repository on the node: the cluster node
    # reads every ref from etcd and starts its watch.
    start=$(date +%s%N)
    "$GIT" ls-remote "http://127.0.0.1:$port/adv.git" >/dev/null
    end=$(date +%s%N)
    cold[$node]=$(awk -v s="$start" -v e="$end" 'BEGIN { printf "%.6f", (e - s) / 1e9 }')
    json=$base/adv-$node.json
    hyperfine --style none --runs "$RUNS" --warmup 2 --export-json "$json" \
        "$GIT ls-remote http://127.0.0.1:$port/adv.git >/dev/null" >/dev/null
    adv[$node]=$(jq '.results[0].median' "$json")
done

ms() { awk -v s="$1" 'BEGIN { printf "%.1f ms", s * 1000 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b / a }'; }
extra "### cluster: one refstore node alone vs a node of a 3-node cluster (refs in a 3-member etcd on loopback, object_copies = 2)"
extra ""
extra "| workload | single node | cluster node | cluster / single |"
extra "|---|---:|---:|---:|"
extra "| push of 100 new refs, 1 pusher (median latency) | $(ms "${one[single]}") | $(ms "${one[cluster]}") | $(ratio "${one[single]}" "${one[cluster]}") |"
extra "| push of 100 new refs, 8 concurrent pushers (median latency) | $(ms "${eight[single]}") | $(ms "${eight[cluster]}") | $(ratio "${eight[single]}" "${eight[cluster]}") |"
extra "| push of 100 new refs, 8 concurrent pushers (pushes/s) | ${rate[single]} | ${rate[cluster]} | $(ratio "${rate[single]}" "${rate[cluster]}") |"
extra "| ls-remote of 100k refs, first on the node (one run) | $(ms "${cold[single]}") | $(ms "${cold[cluster]}") | $(ratio "${cold[single]}" "${cold[cluster]}") |"
extra "| ls-remote of 100k refs (median) | $(ms "${adv[single]}") | $(ms "${adv[cluster]}") | $(ratio "${adv[single]}" "${adv[cluster]}") |"
extra ""
cleanup
trap - EXIT
