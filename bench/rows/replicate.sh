# What replicating a push's objects costs: `git push` over HTTP on
# loopback to a `refstore serve` alone, and to a node of two that
# replicates (object_copies = 2: the push is acknowledged once the other
# node has indexed its pack durably too). Two pushes: one new commit with
# a 1 KiB file, and one with a 4 MiB file of random bytes (the pack is
# copied whole to the peer). Every run pushes a new commit to a new
# branch. Its own table (no git column: git has no replication); the
# ratio is replicated / alone.
work=$BENCH_DIR/replicate-$(date +%s%N)
mkdir -p "$work"
"$GIT" init -q -b main "$work/src"
"$GIT" -C "$work/src" commit -q --allow-empty -m base
for name in alone n1 n2; do
    mkdir -p "$work/$name"
    "$GIT" clone -q --bare "$work/src" "$work/$name/r.git"
done
echo "bench:bench-pw" >"$work/users"
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$work/secret"

# A loopback port nothing listens on right now.
port() {
    local p
    while :; do
        p=$((20000 + RANDOM % 40000))
        (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return; }
    done
}
p1=$(port)
p2=$(port)
pids=()
start() {
    local name=$1 listen=$2
    shift 2
    "$REFSTORE" serve --listen "$listen" --print-address --root "$work/$name" \
        --allow-push --credentials "$work/users" "$@" >"$work/$name.addr" 2>"$work/$name.log" &
    pids+=($!)
    for _ in $(seq 200); do [[ -s $work/$name.addr ]] && break; sleep 0.05; done
}
replicate=(--replicate-secret "$work/secret" --replicate-copies 2
    --replicate-peer "n1=http://127.0.0.1:$p1" --replicate-peer "n2=http://127.0.0.1:$p2")
start alone 127.0.0.1:0
start n1 "127.0.0.1:$p1" --replicate-node n1 "${replicate[@]}"
start n2 "127.0.0.1:$p2" --replicate-node n2 "${replicate[@]}"
alone=http://bench:bench-pw@$(head -1 "$work/alone.addr")/r.git
node=http://bench:bench-pw@127.0.0.1:$p1/r.git

extra "### replicate: push latency, a node alone vs a node replicating to one peer"
extra ""
extra "| push | alone (median) | replicated, 2 copies (median) | replicated / alone |"
extra "|---|---:|---:|---:|"
for size in 1024 4194304; do
    # A new commit holding a file of $size fresh bytes, as main of src.
    prepare="head -c $size /dev/urandom >$work/src/data && $GIT -C $work/src add data && $GIT -C $work/src commit -q -m next"
    push="$GIT -C $work/src push -q"
    json=$root/bench/out/replicate-$size.json
    hyperfine --style none --runs "$RUNS" --warmup 1 --export-json "$json" --prepare "$prepare" \
        -n alone "$push $alone main:refs/heads/b\$(date +%s%N)" \
        -n replicated "$push $node main:refs/heads/b\$(date +%s%N)" >/dev/null
    a=$(jq '.results[] | select(.command=="alone") | .median' "$json")
    r=$(jq '.results[] | select(.command=="replicated") | .median' "$json")
    extra "$(awk -v s="$size" -v a="$a" -v r="$r" 'BEGIN {
        printf "| %d KiB file | %.2f ms | %.2f ms | %.2f |", s / 1024, a * 1000, r * 1000, r / a }')"
done
extra ""
kill "${pids[@]}"
wait "${pids[@]}" 2>/dev/null || true
# Every object pushed to n1 is on its peer (by object: maintenance after
# pushes repacks each node's packs its own way).
objects() { "$GIT" -C "$1" cat-file --batch-all-objects --batch-check='%(objectname)' | sort; }
missing=$(comm -23 <(objects "$work/n1/r.git") <(objects "$work/n2/r.git") | wc -l)
if ((missing > 0)); then
    echo "replicate: $missing objects of n1 are not on its peer" >&2
    exit 1
fi
