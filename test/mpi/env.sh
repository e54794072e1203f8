# env.sh — sourced by the MPI tests: Open MPI's settings for the test
# machines (not the product's): they run as root, with more ranks than cores,
# and under the sanitizers Open MPI's own leaks at init and exit are not ours.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
# a rank waiting in MPI gives its core away (2 cores, up to 4 ranks)
export OMPI_MCA_mpi_yield_when_idle=1
# no single-copy (CMA) between ranks: ptrace may be forbidden in containers
export OMPI_MCA_btl_vader_single_copy_mechanism=none
# Open MPI's libraries have no frame pointers: full unwinding lets the
# suppressions (by library) see where its allocations come from.
export LSAN_OPTIONS="suppressions=${ROOT:-.}/test/lsan.supp:print_suppressions=0:fast_unwind_on_malloc=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
# skip when this build has no MPI or mpirun is missing
mpi_available() {
  command -v mpirun >/dev/null 2>&1 || { echo "skipped: mpirun is not installed"; return 1; }
  ldd "$PR" 2>/dev/null | grep -q libmpi || { echo "skipped: $PR was built without MPI (make MPI=0)"; return 1; }
}
