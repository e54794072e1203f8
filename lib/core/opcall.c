/* opcall.c — one op, run on its own (see opcall.h). */
#include "core/opcall.h"

#include <stdlib.h>
#include <string.h>

#include "paddle.pb-c.h"
#include "text/textformat.h"

static pd_status fill_args(pd_arg *args, int nslots, pd_tensor *const *ts, const int *counts, int *next,
                           pd_opcall *call) {
  int k = 0;
  for (int s = 0; s < nslots; s++) {
    int n = counts ? counts[s] : 1;
    args[s].vars = calloc((size_t)(n > 0 ? n : 1), sizeof(int));
    if (!args[s].vars) return PD_ERR_RUNTIME;
    args[s].n = 0;
    for (int i = 0; i < n; i++, k++) {
      if (!ts[k]) continue;
      call->vars[*next] = ts[k];
      args[s].vars[args[s].n++] = *next;
      (*next)++;
    }
  }
  return PD_OK;
}

pd_status pd_opcall_init(pd_opcall *call, const char *type, const char *const *attrs, pd_tensor *const *ins,
                         const int *in_n, pd_tensor *const *outs, const int *out_n, pd_error *err) {
  memset(call, 0, sizeof *call);
  call->def = pd_op_find(type);
  if (!call->def) return pd_errorf(err, PD_ERR_INPUT, "unknown op \"%s\"", type);
  const pd_op_def *d = call->def;
  int total = 0;
  for (int s = 0; s < d->n_inputs; s++) total += in_n ? in_n[s] : 1;
  for (int s = 0; s < d->n_outputs; s++) total += out_n ? out_n[s] : 1;
  call->vars = calloc((size_t)total + 1, sizeof *call->vars);
  call->names = calloc((size_t)total + 1, sizeof *call->names);
  if (!call->vars || !call->names) return pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
  for (int i = 0; i < total; i++) call->names[i] = "";
  call->op.def = d;
  call->op.fwd = -1;
  call->op.names = call->names;
  for (int i = 0; i < 2; i++) pd_tensor_init(&call->op.work[i], PD_F32);
  int next = 0;
  if (fill_args(call->op.in, d->n_inputs, ins, in_n, &next, call) ||
      fill_args(call->op.out, d->n_outputs, outs, out_n, &next, call))
    return pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
  call->nvars = next;
  for (int a = 0; a < d->n_attrs; a++) {
    const pd_attr_def *ad = &d->attrs[a];
    const char *text = NULL;
    for (int i = 0; attrs && attrs[i]; i += 2)
      if (strcmp(attrs[i], ad->name) == 0) text = attrs[i + 1];
    pd_status st;
    if (text) {
      ProtobufCMessage *m = NULL;
      st = pd_text_parse(&paddle__attr_value__descriptor, text, strlen(text), ad->name, &m, NULL, err);
      if (st) return st;
      call->protos[a] = m;
      st = pd_attr_from_value(ad, (Paddle__AttrValue *)m, &call->op.attrs[a], err);
    } else {
      st = pd_attr_parse_default(ad, &call->op.attrs[a], err);
    }
    if (st) return st;
  }
  for (int i = 0; attrs && attrs[i]; i += 2) {
    bool known = false;
    for (int a = 0; a < d->n_attrs; a++) known |= strcmp(attrs[i], d->attrs[a].name) == 0;
    if (!known) return pd_errorf(err, PD_ERR_INPUT, "op \"%s\" has no attribute \"%s\"", type, attrs[i]);
  }
  return PD_OK;
}

pd_status pd_opcall_run(pd_opcall *call, pd_exec *exec, pd_error *err) {
  const pd_op_def *d = call->def;
  pd_ctx c = {.op = &call->op, .vars = call->vars, .exec = exec, .err = err};
  pd_status st = pd_op_infer_shape(&c);
  if (st) return st;
  for (int s = 0; s < d->n_outputs; s++)
    for (int i = 0; i < call->op.out[s].n; i++)
      if ((st = pd_ctx_alloc(&c, pd_out_at(&c, s, i)))) return st;
  pd_dtype dt = pd_op_key_dtype(&c);
  const pd_kernel *k = pd_op_kernel(d, PD_CPU, dt);
  if (k) return k->fn(&c);
  return pd_errorf(err, PD_ERR_INPUT, "op \"%s\" has no CPU kernel for %s", d->type, pd_dtype_name(dt));
}
void pd_opcall_free(pd_opcall *call) {
  if (!call->def) return;
  for (int s = 0; s < PD_MAX_SLOTS; s++) {
    free(call->op.in[s].vars);
    free(call->op.out[s].vars);
  }
  for (int a = 0; a < PD_MAX_ATTRS; a++)
    if (call->protos[a]) protobuf_c_message_free_unpacked(call->protos[a], NULL);
  for (int i = 0; i < 2; i++) pd_tensor_release(&call->op.work[i]);
  free(call->vars);
  free(call->names);
  memset(call, 0, sizeof *call);
}
