#!/usr/bin/env bash
# tests/check_cycles.sh — proves that a layer's file dependency graph is acyclic.
# Layer: tests. Usage: tests/check_cycles.sh BUILD LAYER...   (`make check-layers` runs it for
# repl, viz, lua and core; core/kernels/ is not a layer folder of its own and is not checked)
# An edge A -> B means that A.o (built from LAYER/A.c) uses a global symbol that B.o defines:
# the real dependency, which a shared header declaring every file's functions would hide from an
# include-only check. Each layer's files must form a DAG (tsort finds an order); a cycle is
# printed and the status is 1. Objects not built yet are skipped.
set -u
build=${1:?usage: tests/check_cycles.sh BUILD LAYER...}
shift
status=0
for layer in "$@"; do
    shopt -s nullglob
    objs=("$build/$layer"/*.o)
    shopt -u nullglob
    [ ${#objs[@]} -gt 0 ] || continue
    defs=$(for o in "${objs[@]}"; do
        nm -g --defined-only "$o" | awk -v p="$(basename "$o" .o)" 'NF == 3 { print $3, p }'
    done)
    edges=$(for o in "${objs[@]}"; do
        p=$(basename "$o" .o)
        nm -u "$o" | awk '{ print $NF }' | sort -u | join - <(echo "$defs" | sort -k1,1) \
            | awk -v p="$p" '$2 != p { print p, $2 }'
    done | sort -u)
    if ! out=$(echo "$edges" | tsort 2>&1 >/dev/null) || [ -n "$out" ]; then
        echo "check-cycles: $layer/ has a dependency cycle:"
        echo "$out" | sed 's/^tsort: /  /'
        status=1
    fi
done
[ "$status" -eq 0 ] && echo "check-cycles: ok ($*)"
exit "$status"
