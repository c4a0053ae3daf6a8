# Serving a repository holding one large blob made of zeros (a zlib bomb:
# 600 MB that compresses to 0.6 MB), loose and packed, to
# `git clone --bare --no-local`: the server's peak RSS and CPU (user +
# system, children included, from /usr/bin/time). refstore must stay under
# 64 MB per request (issue 11): a packed blob is copied compressed, a loose
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
