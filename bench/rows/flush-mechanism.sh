# The cost of making N loose-ref-sized files durable with each flush method
# (refstore's own mechanisms; git has no equivalent single command).
extra "### flush mechanisms (N files, median of ${RUNS} rounds)"
extra ""
extra "$("$BENCH_BIN/flush_mechanism" "$BENCH_DIR/flush-bench" "$RUNS")"
