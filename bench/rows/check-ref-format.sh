# Per-invocation cost of a plumbing command: process start, argument parsing
# and a name check. Everything else compares against this floor.
compare check-ref-format "valid name" "true" \
    "$GIT check-ref-format refs/heads/feature/x" \
    "$REFSTORE check-ref-format refs/heads/feature/x"
