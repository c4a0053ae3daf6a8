# Serving a repository holding one large blob made of zeros (a zlib bomb:
# 600 MB that compresses to 0.6 MB), loose and packed, to
# `git clone --bare --no-local`: the server's peak RSS and CPU (user +
# system, children included, from /usr/bin/time). refstore must stay under
# 64 MB per request: a packed blob is copied compressed, a loose
# one inflated and compressed again in pieces.
megabytes=${LARGE_BLOB_MB:-600}
work=$BENCH_DIR/large-blob
loose=$work/loose.git
packed=$work/packed.git
if [[ ! -d $packed ]]; then
    rm -rf "$work"
    mkdir -p "$work"
    "$GIT" init -q --bare "$loose"
    blob=$(head -c "${megabytes}M" /dev/zero | "$GIT" -C "$loose" hash-object -w --stdin)
    tree=$(printf '100644 blob %s\tzeros\n' "$blob" | "$GIT" -C "$loose" mktree)
    commit=$("$GIT" -C "$loose" commit-tree -m "$megabytes MB of zeros" "$tree")
    "$GIT" -C "$loose" update-ref refs/heads/main "$commit"
    "$GIT" -C "$loose" symbolic-ref HEAD refs/heads/main
    cp -r "$loose" "$packed"
    "$GIT" -C "$packed" repack -adq
fi

extra "### large-blob: serving one blob of $megabytes MB of zeros"
extra ""
extra "| stored | server | CPU s | peak RSS MiB |"
extra "|---|---|---:|---:|"
for stored in loose packed; do
    for server in git refstore; do
        cmd="$GIT upload-pack"
        [[ $server == git ]] || cmd="$REFSTORE upload-pack"
        rm -rf "$work/clone.git"
        "$GIT" clone -q --bare --no-local "file://$work/$stored.git" "$work/clone.git" \
            --upload-pack="/usr/bin/time -o $work/time -f '%U %S %M' $cmd" >/dev/null 2>&1
        read -r user system rss <"$work/time"
        cpu=$(echo "$user + $system" | bc)
        extra "| $stored | $server | $cpu | $((rss / 1024)) |"
        declare "cpu_$server=$cpu"
    done
    record large-blob "$stored CPU" "$cpu_git" "$cpu_refstore"
done
extra ""

# The same server serving concurrent requests for a blob below git's
# core.bigFileThreshold (500 MiB of zeros): 4 pushes at once, then 16
# clones at once. refstore is one `refstore serve` process for all of
# them: its peak (VmHWM, the kernel's record) and the peak of its
# anonymous memory (RssAnon, read every 10 ms), divided by the requests
# for a per-request figure. git runs a process tree per request (here
# `receive-pack`/`upload-pack` over file://, as git-daemon or sshd would
# run them): the peak resident memory of each tree, from /usr/bin/time,
# the largest of the requests. Each request must stay under 64 MiB.
# The HTTP client is the git on PATH ($GIT may be built without curl).
serve_mb=${LARGE_BLOB_SERVE_MB:-500}
pushes=${LARGE_BLOB_PUSHES:-4}
clones=${LARGE_BLOB_CLONES:-16}
served=$work/served-$serve_mb
src=$served/src
if [[ ! -d $src ]]; then
    rm -rf "$served"
    mkdir -p "$served"
    "$GIT" init -q -b main "$src"
    truncate -s "${serve_mb}M" "$src/zeros"
    "$GIT" -C "$src" add zeros
    "$GIT" -C "$src" commit -q -m "$serve_mb MiB of zeros"
    # Packed, so each push copies 0.6 MB instead of compressing again.
    "$GIT" -C "$src" repack -adq
fi

# fresh_repos DIR N: N empty bare repositories r1..rN in DIR.
fresh_repos() {
    rm -rf "$1"
    mkdir -p "$1"
    for i in $(seq "$2"); do "$GIT" init -q --bare "$1/r$i.git"; done
}

# largest FILE...: the largest first number of the files.
largest() {
    cat "$@" | sort -n | tail -1
}

# with_server ROOT CMD...: runs CMD with $addr set to a `refstore serve`
# of ROOT, then prints "<VmHWM kB> <peak RssAnon kB>" of the server.
with_server() {
    local root=$1
    shift
    local users=$served/users
    echo "bench:pw" >"$users"
    rm -f "$served/addr"
    "$REFSTORE" serve --listen 127.0.0.1:0 --print-address --root "$root" \
        --allow-push --credentials "$users" --workers 64 >"$served/addr" 2>"$served/serve.log" &
    local pid=$!
    while [[ ! -s $served/addr ]]; do sleep 0.05; done
    addr=$(cat "$served/addr")
    export addr
    (
        while kill -0 "$pid" 2>/dev/null; do
            awk '/^RssAnon:/ {print $2}' "/proc/$pid/status" 2>/dev/null || true
            sleep 0.01
        done
    ) >"$served/anon" &
    local sampler=$! status=0
    "$@" >&2 || status=$?
    local hwm
    hwm=$(awk '/^VmHWM:/ {print $2}' "/proc/$pid/status")
    kill "$pid"
    wait "$pid" "$sampler" || true
    echo "$hwm $(largest "$served/anon")"
    return "$status"
}

# run_all N CMD: runs CMD with $i from 1 to N at once; fails if one fails.
run_all() {
    local n=$1 cmd=$2 pids=() failed=0
    for i in $(seq "$n"); do
        i=$i bash -c "$cmd" &
        pids+=($!)
    done
    for p in "${pids[@]}"; do wait "$p" || failed=1; done
    return "$failed"
}
export -f largest
client_git=$(command -v git)
export GIT served src client_git

# Pushes: git.
fresh_repos "$served/git-push" "$pushes"
run_all "$pushes" '"$GIT" -C "$src" push -q "file://$served/git-push/r$i.git" main \
    --receive-pack="/usr/bin/time -o $served/git-push/time$i -f %M $GIT receive-pack"'
git_push=$(largest "$served"/git-push/time*)
# Pushes: refstore.
fresh_repos "$served/rs-push" "$pushes"
read -r push_hwm push_anon < <(with_server "$served/rs-push" run_all "$pushes" \
    '"$client_git" -C "$src" push -q "http://bench:pw@$addr/r$i.git" main')
"$GIT" -C "$served/rs-push/r1.git" fsck --strict --no-dangling --no-progress

# Clones of the pushed (loose) blob: git.
rm -rf "$served/clones"
mkdir -p "$served/clones"
run_all "$clones" '"$GIT" clone -q --bare --no-local "file://$served/git-push/r1.git" \
    "$served/clones/git$i" \
    --upload-pack="/usr/bin/time -o $served/clones/time$i -f %M $GIT upload-pack"'
git_clone=$(largest "$served"/clones/time*)
rm -rf "$served/clones"
mkdir -p "$served/clones"
read -r clone_hwm clone_anon < <(with_server "$served/rs-push" run_all "$clones" \
    '"$client_git" clone -q --bare "http://$addr/r1.git" "$served/clones/rs$i"')
"$GIT" -C "$served/clones/rs1" fsck --strict --no-dangling --no-progress
rm -rf "$served/clones"

extra "### large-blob: $pushes pushes, then $clones clones, at once, of $serve_mb MiB of zeros"
extra ""
extra "git: the largest peak RSS of one request's processes; refstore: the one"
extra "\`refstore serve\` process for all requests (VmHWM; peak RssAnon sampled"
extra "every 10 ms), and that divided by the requests."
extra ""
extra "| requests | git MiB per request | refstore serve VmHWM MiB | refstore RssAnon MiB | refstore VmHWM MiB per request |"
extra "|---|---:|---:|---:|---:|"
extra "| $pushes pushes | $((git_push / 1024)) | $((push_hwm / 1024)) | $((push_anon / 1024)) | $((push_hwm / 1024 / pushes)) |"
extra "| $clones clones | $((git_clone / 1024)) | $((clone_hwm / 1024)) | $((clone_anon / 1024)) | $((clone_hwm / 1024 / clones)) |"
extra ""
