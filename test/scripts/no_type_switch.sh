# no_type_switch.sh — the core never switches on an op's type: what it must
# know of an op (an update op, a collective, a gradient clip) is a PD_OP_*
# flag on its pd_op_def (lib/core/op.h, docs/architecture.md). Fails on a
# compare of an op's type string, or of a type name the flags stand for, in
# lib/core or cmd; registry.c, which looks ops up by name, is left out.
cd "$ROOT" || exit 1
bad=0
for pat in \
  'str(n)?(case)?cmp\([^;]*def->type' \
  'str(n)?(case)?cmp\([^;]*"(sgd|momentum|adam|allreduce|clip_by_global_norm)"'; do
  hits=$(grep -nE "$pat" lib/core/*.c lib/core/*.h cmd/*.c cmd/*.h 2>/dev/null | grep -v '^lib/core/registry\.c:')
  if [ -n "$hits" ]; then
    echo "FAIL: op-type compare (pattern $pat); use a PD_OP_* flag:"
    echo "$hits"
    bad=1
  fi
done
[ $bad = 0 ] && echo "ok: no op-type compare in lib/core or cmd"
exit $bad
