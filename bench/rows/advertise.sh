# Advertising every ref of a repository with 100k and
# 1M refs, protocol v0 (`upload-pack --advertise-refs`) and v2 (`ls-refs`
# with peel and symrefs), refstore upload-pack against git upload-pack.
# Besides wall time the row reports CPU time (user + system, from
# hyperfine) and the number of write calls (strace), since the advertisement
# is what a busy server does most.
commit_of() { "$GIT" -C "$1" rev-parse HEAD; }
ls_refs=$BENCH_DIR/advertise-ls-refs-request
# command=ls-refs, delimiter, peel, symrefs, flush: pkt-lines by hand.
printf '0014command=ls-refs\n00010009peel\n000csymrefs\n0000' >"$ls_refs"

extra "### advertise: CPU time and write calls"
extra ""
extra "| refs | protocol | git CPU | refstore CPU | CPU ratio | git writes | refstore writes |"
extra "|---:|---|---:|---:|---:|---:|---:|"

writes() {
    local out=$BENCH_DIR/advertise-strace
    strace -f -qq -c -o "$out" -e trace=write,writev,sendto,sendmsg bash -c "$1" >/dev/null 2>&1
    awk '$NF ~ /^(write|writev|sendto|sendmsg)$/ { calls += $4 } END { print calls + 0 }' "$out"
}

cpu() {
    jq '[.results[] | select(.command=="'"$2"'") | (.user + .system)] | .[0]' "$1"
}

for n in 100000 1000000; do
    repo=$BENCH_DIR/advertise-$n.git
    if [[ ! -d $repo ]]; then
        "$GIT" init -q --bare "$repo"
        tree=$("$GIT" -C "$repo" mktree </dev/null)
        commit=$(echo base | "$GIT" -C "$repo" commit-tree "$tree")
        {
            echo "# pack-refs with: peeled fully-peeled sorted "
            awk -v c="$commit" -v n="$n" 'BEGIN { for (i = 0; i < n; i++) printf "%s refs/heads/b%07d\n", c, i }'
        } >"$repo/packed-refs"
        "$GIT" -C "$repo" symbolic-ref HEAD refs/heads/b0000000
    fi
    label=$((n / 1000))k
    for protocol in v0 v2; do
        if [[ $protocol == v0 ]]; then
            git_cmd="$GIT upload-pack --advertise-refs $repo >/dev/null"
            ours="$REFSTORE upload-pack --advertise-refs $repo >/dev/null"
        else
            git_cmd="GIT_PROTOCOL=version=2 $GIT upload-pack --stateless-rpc $repo <$ls_refs >/dev/null"
            ours="GIT_PROTOCOL=version=2 $REFSTORE upload-pack --stateless-rpc $repo <$ls_refs >/dev/null"
        fi
        # Both must produce the same advertisement before it is timed.
        diff <(bash -c "${git_cmd%>/dev/null} | grep -a -v agent=" ) <(bash -c "${ours%>/dev/null} | grep -a -v agent=") >/dev/null \
            || echo "warning: advertisements differ for $label $protocol (beyond agent=)" >&2
        variant="$label refs, $protocol"
        compare advertise "$variant" "true" "$git_cmd" "$ours"
        json=$root/bench/out/advertise-${variant//[^A-Za-z0-9_.-]/_}.json
        g=$(cpu "$json" git)
        r=$(cpu "$json" refstore)
        cpu_cells=$(awk -v g="$g" -v r="$r" 'BEGIN { printf "%.0f ms | %.0f ms | %.2f", g * 1000, r * 1000, r / g }')
        extra "| $label | $protocol | $cpu_cells | $(writes "$git_cmd") | $(writes "$ours") |"
    done
done
extra ""
