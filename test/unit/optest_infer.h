/* optest_infer.h — shape-function checks for the op tests: tensors that have
 * dims (maybe -1, the batch) but no storage, and running only an op's shape
 * function, as a network does at load time. (A candidate for optest.h.) */
#ifndef PD_OPTEST_INFER_H
#define PD_OPTEST_INFER_H

#include "optest.h"

/* A tensor with dims (maybe -1) and no storage. */
static inline pd_tensor *ot_shaped(pd_dtype dt, int ndim, const int64_t *dims) {
  pd_tensor *t = ot_out();
  t->dtype = dt;
  assert_int_equal(pd_tensor_set_dims(t, ndim, dims, NULL), PD_OK);
  return t;
}

/* Runs only the shape function of op `type`; returns its status and, when
 * msg is given, points it at the message (static buffer). */
static inline pd_status ot_infer(const char *type, const char *const *attrs, pd_tensor *const *ins,
                                 const int *in_n, pd_tensor *const *outs, const int *out_n,
                                 const char **msg) {
  static pd_error err;
  pd_opcall call;
  err.msg[0] = '\0';
  pd_status st = pd_opcall_init(&call, type, attrs, ins, in_n, outs, out_n, &err);
  if (!st) {
    pd_ctx c = {.op = &call.op, .vars = call.vars, .err = &err};
    st = pd_op_infer_shape(&c);
  }
  pd_opcall_free(&call);
  if (msg) *msg = err.msg;
  return st;
}

/* Asserts t has exactly these dims. */
#define ot_assert_dims(t, ...)                                                                \
  do {                                                                                        \
    const int64_t want_[] = {__VA_ARGS__};                                                    \
    int nw_ = (int)(sizeof want_ / sizeof want_[0]);                                          \
    char got_[128], exp_[128];                                                                \
    if (!pd_dims_equal((t)->ndim, (t)->dims, nw_, want_))                                     \
      fail_msg("shape %s, expected %s", pd_dims_str((t)->ndim, (t)->dims, got_, sizeof got_), \
               pd_dims_str(nw_, want_, exp_, sizeof exp_));                                   \
  } while (0)

#endif
