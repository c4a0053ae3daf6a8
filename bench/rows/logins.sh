# HTTP Basic logins that fail, against `refstore serve --credentials`: the
# medians of an unknown user and of a known user with a wrong password
# (one user with a bcrypt hash of htpasswd's cost, one with a plain
# password) must be within 10% of each other, or the time of a refusal
# tells which user names exist. Each attempt comes from an address of its
# own in 127.0.0.0/8 that first logged in as that user successfully, so
# the throttle of failed logins (which would delay repeated failures from
# one address or for one user) does not take part; the timing is curl's
# (connection to end of answer), the same for every kind.
runs=${LOGIN_RUNS:-60}
work=$BENCH_DIR/logins
rm -rf "$work"
mkdir -p "$work/root"
"$GIT" init -q --bare "$work/root/r.git"
hash=$(htpasswd -nbB -C 5 alice alice-pw | cut -d: -f2-)
printf 'alice:%s\nbob:bob-pw\n' "$hash" >"$work/users"
"$REFSTORE" serve --root "$work/root" --listen 127.0.0.1:0 --print-address --allow-push \
    --credentials "$work/users" >"$work/address" 2>"$work/log" &
server=$!
trap 'kill $server 2>/dev/null' EXIT
for _ in $(seq 50); do [[ -s $work/address ]] && break; sleep 0.1; done
addr=$(head -1 "$work/address")
port=${addr##*:}
url=/r.git/info/refs?service=git-receive-pack

# time_of FROM USER PASSWORD: seconds from connection to the end of the answer.
time_of() {
    curl -s -o /dev/null --interface "$1" -u "$2:$3" -w '%{time_total}\n' "http://127.0.0.1:$port$url"
}
: >"$work/unknown" ; : >"$work/bcrypt" ; : >"$work/plain"
for ((i = 0; i < runs; i++)); do
    from=127.0.$((i / 200 + 1)).$((i % 200 + 2))
    time_of "$from" alice alice-pw >/dev/null
    time_of "$from" bob bob-pw >/dev/null
    time_of "$from" "nobody$i" guess >>"$work/unknown"
    time_of "$from" alice guess >>"$work/bcrypt"
    time_of "$from" bob guess >>"$work/plain"
done
kill $server
trap - EXIT
median() { sort -g "$1" | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
unknown=$(median "$work/unknown")
bcrypt=$(median "$work/bcrypt")
plain=$(median "$work/plain")
extra "### logins: failed HTTP Basic logins, $runs each (median)"
extra ""
extra "| attempt | median | / unknown user |"
extra "|---|---:|---:|"
extra "| unknown user | $(echo "$unknown * 1000" | bc -l | xargs printf '%.2f') ms | 1.00 |"
extra "| known user (bcrypt, cost 5), wrong password | $(echo "$bcrypt * 1000" | bc -l | xargs printf '%.2f') ms | $(echo "$bcrypt / $unknown" | bc -l | xargs printf '%.2f') |"
extra "| known user (plain password), wrong password | $(echo "$plain * 1000" | bc -l | xargs printf '%.2f') ms | $(echo "$plain / $unknown" | bc -l | xargs printf '%.2f') |"
