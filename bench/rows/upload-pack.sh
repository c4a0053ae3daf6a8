# Serving a clone of a repository whose objects are all loose, so no
# stored delta can be reused: `git clone --no-local` through refstore
# upload-pack against git upload-pack (time), and the bytes each server
# sends for the same protocol v2 fetch of the whole history (size; both
# compute deltas: git searching a window of similar objects, refstore
# pairing the versions of each path).
template=$BENCH_DIR/upload-pack-template
if [[ ! -d $template ]]; then
    "$GIT" init -q "$template"
    "$GIT" -C "$template" config gc.auto 0
    for ((c = 0; c < 200; c++)); do
        for ((f = 0; f < 10; f++)); do
            # Files that grow a little with every commit, as source files do.
            printf 'commit %d changes line %d of file %d\n' "$c" "$c" "$f" >>"$template/file$f.txt"
        done
        mkdir -p "$template/dir$((c % 7))"
        printf 'note %d\n' "$c" >"$template/dir$((c % 7))/note.txt"
        "$GIT" -C "$template" add -A
        "$GIT" -C "$template" commit -q -m "commit $c"
    done
fi
objects=$("$GIT" -C "$template" count-objects -v | sed -n 's/^count: //p')

clone=$BENCH_DIR/upload-pack-clone
mkdir -p "$BENCH_DIR/upload-pack-aside"
prepare="[ ! -e $clone ] || mv $clone $BENCH_DIR/upload-pack-aside/\$(date +%s%N)"
compare upload-pack "clone of 200 commits, $objects loose objects" "$prepare" \
    "$GIT clone -q --no-local file://$template $clone" \
    "$GIT clone -q --no-local --upload-pack='$REFSTORE upload-pack' file://$template $clone"

# One v2 fetch request for the whole history, without progress messages.
request=$BENCH_DIR/upload-pack-request
head=$("$GIT" -C "$template" rev-parse HEAD)
pkt() { printf '%04x%s\n' $((${#1} + 5)) "$1"; }
{
    pkt "command=fetch"
    printf '0001'
    pkt "no-progress"
    pkt "want $head"
    pkt "done"
    printf '0000'
} >"$request"
git_bytes=$(GIT_PROTOCOL=version=2 "$GIT" upload-pack --stateless-rpc "$template" <"$request" | wc -c)
refstore_bytes=$(GIT_PROTOCOL=version=2 "$REFSTORE" upload-pack --stateless-rpc "$template" <"$request" | wc -c)
extra "### upload-pack: bytes sent for a full fetch of $objects loose objects

| server | bytes | ratio |
|---|---|---|
| git upload-pack | $git_bytes | 1.00 |
| refstore upload-pack | $refstore_bytes | $(echo "scale=2; $refstore_bytes / $git_bytes" | bc) |
"
