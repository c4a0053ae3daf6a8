# Pack and etcd housekeeping in cluster mode: CHK_PUSHES (default 1000)
# single-commit pushes over smart HTTP from three concurrent pushers, one
# per node of a cluster (refs in a one-member etcd on loopback,
# object_copies = 2), each pusher advancing a branch of its own so that
# every push is a fast-forward; the nodes run their background maintenance
# as nodes do by default. Then, as an operator's cluster would: the
# leader's etcd housekeeping (compaction_retention_s = 5,
# defrag_interval_s = 20 in the row's cluster files) compacts etcd's
# history past the last push and defragments the member, and
# `refstore maintenance run --cluster` runs on every node (time, one run
# each). Reported:
# - the push rate;
# - etcd's revision, database size and size in use after the pushes, once
#   the leader compacted past them, and once it defragmented afterwards
#   (read from the member's status, the same status the housekeeping reads);
# - packs per node (those readers list) before and after the final
#   maintenance, and rolled-up packs whose data waits out its expiry;
# - server CPU (the node process's user + system time, from /proc) and
#   time of a full clone and of a fetch of the last 100 pushes, through
#   node n1 before and after its final maintenance, and through a single
#   node (`refstore serve` without --cluster) holding the same history as
#   one push, maintained by `refstore maintenance run`, with the ratio of
#   n1's (after) to the single node's: what a node costs against a
#   repository that never had many packs.
# CHK_FETCH_RUNS (default 5) runs of CHK_BATCH (default 20) clones and as
# many fetches each, n1's runs after maintenance alternating with the
# single node's so that both meet the same load; medians of the runs'
# means. CHK_STEP (default 1) pushes only every CHK_STEP-th
# commit, several commits a push: the same history in fewer pushes, to
# tell what grows with the number of pushes from what grows with history.
command -v etcd >/dev/null || { echo "error: etcd is missing (scripts/install-deps installs it)" >&2; exit 1; }
pushes=${CHK_PUSHES:-1000}
fetch_runs=${CHK_FETCH_RUNS:-5}
step=${CHK_STEP:-1}
((step >= 1)) || { echo "cluster-housekeeping: CHK_STEP must be at least 1" >&2; exit 1; }
((pushes > 100)) || { echo "cluster-housekeeping: CHK_PUSHES must be more than 100" >&2; exit 1; }
base=$BENCH_DIR/cluster-housekeeping
rm -rf "$base"
mkdir -p "$base"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

etcd_client=$(free_port) etcd_peer=$(free_port)
etcd --name m1 --data-dir "$base/etcd" \
    --listen-client-urls "http://127.0.0.1:$etcd_client" --advertise-client-urls "http://127.0.0.1:$etcd_client" \
    --listen-peer-urls "http://127.0.0.1:$etcd_peer" --initial-advertise-peer-urls "http://127.0.0.1:$etcd_peer" \
    --initial-cluster "m1=http://127.0.0.1:$etcd_peer" --initial-cluster-state new \
    --logger zap --log-outputs "$base/etcd.log" &
pids+=($!)
until python3 - "$etcd_client" <<'PY' 2>/dev/null
import sys, urllib.request
sys.exit(0 if b'"health":"true"' in urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/health", timeout=1).read() else 1)
PY
do sleep 0.2; done

# The history: commit n changes one of 50 files, as in housekeeping.sh.
src=$base/src
"$GIT" init -q -b main "$src"
one_file_commits "$src" "$pushes" "$base/marks"
sort -t: -k2 -n "$base/marks" | awk '{ print $2 }' >"$base/commits"
first=$(head -1 "$base/commits")

echo "alice:pw" >"$base/users"
echo "a secret the bench's nodes share" >"$base/cluster.secret"
ports=() nodes_table=""
for n in 1 2 3; do
    ports+=("$(free_port)")
    nodes_table+="n$n = \"http://127.0.0.1:${ports[n - 1]}\""$'\n'
done
for n in 1 2 3; do
    root=$base/root-n$n
    mkdir -p "$root"
    "$GIT" init -q --bare "$root/repo.git"
    "$GIT" -C "$src" push -q "$root/repo.git" "$first:refs/heads/main"
    cat >"$base/cluster-n$n.toml" <<TOML
etcd = ["http://127.0.0.1:$etcd_client"]
node = "n$n"
object_copies = 2
compaction_retention_s = 5
defrag_interval_s = 20
secret_file = "cluster.secret"
[nodes]
$nodes_table
TOML
done
"$REFSTORE" cluster import --cluster "$base/cluster-n1.toml" "$base/root-n1/repo.git"
node_pids=()
for n in 1 2 3; do
    "$REFSTORE" serve --listen "127.0.0.1:${ports[n - 1]}" --root "$base/root-n$n" --allow-push \
        --credentials "$base/users" --workers 8 \
        --cluster "$base/cluster-n$n.toml" 2>"$base/n$n.log" &
    pids+=($!)
    node_pids+=($!)
done
single_port=$(free_port)
mkdir -p "$base/root-single"
"$GIT" init -q --bare "$base/root-single/repo.git"
"$REFSTORE" serve --listen "127.0.0.1:$single_port" --root "$base/root-single" --allow-push \
    --credentials "$base/users" --workers 8 --maintenance-workers 0 2>"$base/single.log" &
pids+=($!)
single_pid=$!
sleep 1

# etcd_status: "revision db_size in_use" of the member, from its status
# (the JSON gateway of the maintenance API).
etcd_status() {
    python3 - "$etcd_client" <<'PY'
import json, sys, urllib.request
req = urllib.request.Request(f"http://127.0.0.1:{sys.argv[1]}/v3/maintenance/status", data=b"{}", method="POST")
s = json.load(urllib.request.urlopen(req, timeout=10))
print(s["header"]["revision"], s["dbSize"], s.get("dbSizeInUse", s["dbSize"]))
PY
}

# The pushes, one commit each (CHK_STEP commits with CHK_STEP > 1): push p
# (of commit p * step) goes through node n(k+1), k = p modulo 3, to a
# branch of that pusher's own, so that the three push at once and each
# push is a fast-forward.
pusher() {
    local k=$1 port=${ports[$1]} i=0 commit
    while read -r commit; do
        i=$((i + 1))
        ((i == 1 || i % step != 0 || (i / step) % 3 != k)) && continue
        "$GIT" -C "$src" push -q "http://alice:pw@127.0.0.1:$port/repo.git" "$commit:refs/heads/p$k" ||
            { echo "cluster-housekeeping: push $i through n$((k + 1)) failed" >&2; return 1; }
    done <"$base/commits"
}
start=$(date +%s%N)
pushers=()
for k in 0 1 2; do
    pusher "$k" &
    pushers+=($!)
done
for p in "${pushers[@]}"; do wait "$p"; done
end=$(date +%s%N)
push_rate=$(awk -v n=$((pushes / step - (step == 1 ? 1 : 0))) -v s="$start" -v e="$end" 'BEGIN { printf "%.1f", n / ((e - s) / 1e9) }')
last=$(tail -1 "$base/commits")
"$GIT" -C "$src" push -q "http://alice:pw@127.0.0.1:${ports[0]}/repo.git" "$last:refs/heads/main"

# etcd before and after the leader's compaction and defragmentation: wait
# (at most 5 minutes) for a compaction to a revision at least the one
# after the pushes, then for a defragmentation logged after it.
logged() { cat "$base"/n?.log | grep "$1" || true; }
read -r rev_pushed db_pushed use_pushed <<<"$(etcd_status)"
compacted_to=0 waited=0
while ((compacted_to < rev_pushed)); do
    ((waited < 300)) || { echo "cluster-housekeeping: no compaction past revision $rev_pushed in 300 s" >&2; exit 1; }
    sleep 1 && waited=$((waited + 1))
    compacted_to=$(logged "compacted etcd's history" | sed -n 's/.*revision=\([0-9]*\).*/\1/p' | sort -n | tail -1)
    compacted_to=${compacted_to:-0}
done
read -r rev_compacted db_compacted use_compacted <<<"$(etcd_status)"
defrags=$(logged "defragmented an etcd member" | wc -l)
until (($(logged "defragmented an etcd member" | wc -l) > defrags)); do
    ((waited < 300)) || { echo "cluster-housekeeping: no defragmentation in 300 s" >&2; exit 1; }
    sleep 1 && waited=$((waited + 1))
done
read -r rev_defrag db_defrag use_defrag <<<"$(etcd_status)"
"$GIT" -C "$src" push -q "http://alice:pw@127.0.0.1:$single_port/repo.git" main
"$REFSTORE" maintenance run --quiet "$base/root-single/repo.git"

# packs_of NODE: the packs readers see (those with an index); hidden_of
# NODE: rolled-up packs whose data waits out refstore.redundantPackExpire.
packs_of() { find "$base/root-$1/repo.git/objects/pack" -name '*.idx' | wc -l; }
hidden_of() { echo $(($(find "$base/root-$1/repo.git/objects/pack" -name '*.pack' | wc -l) - $(packs_of "$1"))); }
# cpu_ticks PID: user + system clock ticks the process has used.
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
tick=$(getconf CLK_TCK)
last100=$(sed -n "$((pushes - 100))p" "$base/commits")
# serve_run LABEL PORT PID: one run's server CPU (ms) and time (ms) of a
# full clone and of a fetch of the last 100 pushes, each the mean of $batch
# made back to back (the CPU counter moves in 10 ms ticks: one fetch alone
# would read 0 or 10), appended to <LABEL>-{clone,fetch}-{cpu,time}.
batch=${CHK_BATCH:-20}
per_op() { awk -v d="$1" -v u="$2" -v n="$batch" 'BEGIN { printf "%.2f\n", d / u / n }'; }
serve_run() {
    local label=$1 port=$2 pid=$3 i before after s e
    local url="http://alice:pw@127.0.0.1:$port/repo.git"
    rm -rf "$base/clones" && mkdir -p "$base/clones"
    before=$(cpu_ticks "$pid") s=$(date +%s%N)
    for ((i = 0; i < batch; i++)); do "$GIT" clone -q --bare "$url" "$base/clones/$i"; done
    e=$(date +%s%N) after=$(cpu_ticks "$pid")
    per_op $(((after - before) * 1000)) "$tick" >>"$base/$label-clone-cpu"
    per_op $((e - s)) 1000000 >>"$base/$label-clone-time"
    rm -rf "$base/fetches" && mkdir -p "$base/fetches"
    for ((i = 0; i < batch; i++)); do
        "$GIT" init -q --bare "$base/fetches/$i"
        "$GIT" -C "$src" push -q "$base/fetches/$i" "$last100:refs/heads/main"
    done
    before=$(cpu_ticks "$pid") s=$(date +%s%N)
    for ((i = 0; i < batch; i++)); do "$GIT" -C "$base/fetches/$i" fetch -q "$url" main; done
    e=$(date +%s%N) after=$(cpu_ticks "$pid")
    per_op $(((after - before) * 1000)) "$tick" >>"$base/$label-fetch-cpu"
    per_op $((e - s)) 1000000 >>"$base/$label-fetch-time"
}
declare -A packs_before packs_after maint_ms
declare -A hidden_before
for n in 1 2 3; do packs_before[$n]=$(packs_of "n$n") hidden_before[$n]=$(hidden_of "n$n"); done
for ((r = 0; r < fetch_runs; r++)); do serve_run before "${ports[0]}" "${node_pids[0]}"; done
# maintain N: the final maintenance of node N, once the node's own
# background maintenance (which holds the repository's maintenance lock)
# has let go ("skipping maintenance" otherwise); its time into maint_ms.
maintain() {
    local n=$1 waited=0 s e
    while :; do
        s=$(date +%s%N)
        "$REFSTORE" -c refstore.redundantPackExpire=now maintenance run --quiet \
            --cluster "$base/cluster-n$n.toml" "$base/root-n$n/repo.git" 2>"$base/maintain-n$n.err"
        e=$(date +%s%N)
        grep -q "skipping maintenance" "$base/maintain-n$n.err" || break
        ((waited < 600)) || { echo "cluster-housekeeping: n$n's maintenance lock held for 60 s" >&2; exit 1; }
        sleep 0.1 && waited=$((waited + 1))
    done
    cat "$base/maintain-n$n.err" >&2
    maint_ms[$n]=$(((e - s) / 1000000))
}
for n in 1 2 3; do
    maintain "$n"
    packs_after[$n]=$(packs_of "n$n")
done
for ((r = 0; r < fetch_runs; r++)); do
    serve_run after "${ports[0]}" "${node_pids[0]}"
    serve_run single "$single_port" "$single_pid"
done

cell() { median <"$base/$1"; }
# In KiB: at a few thousand pushes, MiB hides what compaction frees.
kib() { awk -v b="$1" 'BEGIN { printf "%d KiB", b / 1024 }'; }
extra "### cluster-housekeeping: $pushes commits in $((pushes / step - (step == 1 ? 1 : 0))) pushes ($step a push) by 3 concurrent pushers over 3 cluster nodes (object_copies = 2, background maintenance on), the leader's etcd compaction and defragmentation, then \`refstore maintenance run --cluster\` on each"
extra ""
extra "Load (uptime) at the end: $(uptime | sed 's/.*load average: //')."
extra ""
extra "| etcd | revision | database size | in use |"
extra "|---|---:|---:|---:|"
extra "| after the pushes | $rev_pushed | $(kib "$db_pushed") | $(kib "$use_pushed") |"
extra "| after the leader compacted to $compacted_to | $rev_compacted | $(kib "$db_compacted") | $(kib "$use_compacted") |"
extra "| after its defragmentation | $rev_defrag | $(kib "$db_defrag") | $(kib "$use_defrag") |"
extra ""
extra "Pushes: $push_rate/s. Packs per node before → after (maintenance time): n1 ${packs_before[1]} → ${packs_after[1]} (${maint_ms[1]} ms), n2 ${packs_before[2]} → ${packs_after[2]} (${maint_ms[2]} ms), n3 ${packs_before[3]} → ${packs_after[3]} (${maint_ms[3]} ms); single node: $(packs_of single) packs. Rolled-up packs waiting to expire before (no index, read by no new reader): n1 ${hidden_before[1]}, n2 ${hidden_before[2]}, n3 ${hidden_before[3]}; after: $(hidden_of n1), $(hidden_of n2), $(hidden_of n3)."
extra ""
extra "| served by | clone: server CPU | clone: time | fetch of last 100: server CPU | fetch: time |"
extra "|---|---:|---:|---:|---:|"
for label in before after single; do
    case $label in
        before) what="n1, before maintenance" ;;
        after) what="n1, after maintenance" ;;
        single) what="single node, maintained" ;;
    esac
    extra "| $what | $(cell "$label-clone-cpu") ms | $(cell "$label-clone-time") ms | $(cell "$label-fetch-cpu") ms | $(cell "$label-fetch-time") ms |"
done
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }
extra ""
extra "n1 after maintenance / single node, server CPU: clone $(ratio "$(cell after-clone-cpu)" "$(cell single-clone-cpu)"), fetch $(ratio "$(cell after-fetch-cpu)" "$(cell single-fetch-cpu)")."
extra ""
cleanup
trap - EXIT
