/* test_op_allreduce.c — the allreduce op and where AddOptimizerOps puts it.
 * Run without mpirun (one rank), the op leaves its X as they are, in place
 * or into fresh outputs; its shape checks; with net->ranks > 1 AddOptimizerOps
 * puts one allreduce over every gradient before clipping and the updates; a
 * net printed that way is recognised when loaded back; and a net holding
 * update ops but no allreduce is refused for several ranks; with net->nccl
 * (GPUs under mpirun) it adds the op on one rank too. (The mean over
 * several ranks is checked under mpirun by test/scripts/mpi_train.py.) */
#include "optest.h"

#include "core/backward.h"
#include "dist/dist.h"
#include "core/net.h"
#include "core/netdesc_out.h"
#include "core/optimizer.h"

static void test_single_rank_identity(void **state) {
  (void)state;
  assert_int_equal(pd_dist_size(), 1);
  for (int t = 0; t < 2; t++)
    for (int in_place = 0; in_place < 2; in_place++) {
      pd_dtype dt = t ? PD_F64 : PD_F32;
      pd_tensor *x[2] = {ot_rand(dt, 2, (int64_t[]){3, 4}, 1, -1, 1, 0), ot_rand(dt, 1, (int64_t[]){5}, 2, -1, 1, 0)};
      pd_tensor *outs[2];
      for (int k = 0; k < 2; k++) outs[k] = in_place ? x[k] : ot_out();
      pd_tensor *copy[2] = {ot_rand(dt, 2, (int64_t[]){3, 4}, 1, -1, 1, 0),
                            ot_rand(dt, 1, (int64_t[]){5}, 2, -1, 1, 0)};
      ot_run("allreduce", NULL, x, (int[]){2}, outs, (int[]){2});
      for (int k = 0; k < 2; k++) {
        assert_true(pd_dims_equal(outs[k]->ndim, outs[k]->dims, x[k]->ndim, x[k]->dims));
        for (int64_t i = 0; i < pd_tensor_numel(x[k]); i++)
          assert_true(pd_tensor_get(outs[k], i) == pd_tensor_get(copy[k], i));
        if (!in_place) ot_free(outs[k]);
        ot_free(x[k]), ot_free(copy[k]);
      }
    }
}

static void test_shape_checks(void **state) {
  (void)state;
  pd_tensor *a = ot_rand(PD_F32, 1, (int64_t[]){3}, 1, -1, 1, 0), *b = ot_rand(PD_F64, 1, (int64_t[]){3}, 2, -1, 1, 0);
  pd_tensor *o1 = ot_out(), *o2 = ot_out();
  const char *msg =
      ot_run_fail("allreduce", NULL, (pd_tensor *[]){a, b}, (int[]){2}, (pd_tensor *[]){o1, o2}, (int[]){2});
  assert_non_null(strstr(msg, "all X must have one dtype"));
  msg = ot_run_fail("allreduce", NULL, (pd_tensor *[]){a, a}, (int[]){2}, (pd_tensor *[]){o1}, (int[]){1});
  assert_non_null(strstr(msg, "Out must list as many variables as X (2), got 1"));
  ot_free(a), ot_free(b), ot_free(o1), ot_free(o2);
}

static const char *NET =
    "var { name: \"x\" shape: [-1, 3] }\n"
    "var { name: \"y\" shape: [-1, 1] }\n"
    "op { type: \"fc\" inputs: [\"x\", \"w\", \"b\"] outputs: \"p\" attrs { key: \"size\" value { i: 1 } } }\n"
    "op { type: \"mse\" inputs: [\"p\", \"y\"] outputs: \"loss\" }\n";

static bool g_nccl; /* the next net's allreduce goes through NCCL */

static pd_net *trainable(const char *text, int ranks, double clip, pd_status want, char *msg, size_t size) {
  pd_net *net = NULL;
  pd_error err = {0};
  if (pd_net_from_text("t.pbtxt", text, strlen(text), NULL, &net, &err)) fail_msg("load: %s", err.msg);
  net->ranks = ranks;
  net->nccl = g_nccl;
  Paddle__OptimizerDesc opt = PADDLE__OPTIMIZER_DESC__INIT;
  opt.type = "sgd";
  opt.lr = 0.1;
  opt.clip_norm = clip;
  pd_status st = pd_net_make_trainable(net, "loss", &opt, &err);
  if (st != want) fail_msg("make_trainable: status %d, want %d: %s", st, want, err.msg);
  if (msg) snprintf(msg, size, "%s", err.msg);
  if (st) {
    pd_net_free(net);
    return NULL;
  }
  return net;
}

static int op_index(const pd_net *net, const char *type) {
  for (int o = 0; o < net->nops; o++)
    if (!strcmp(net->ops[o].def->type, type)) return o;
  return -1;
}

static void test_add_optimizer(void **state) {
  (void)state;
  pd_net *one = trainable(NET, 1, 0, PD_OK, NULL, 0);
  assert_int_equal(op_index(one, "allreduce"), -1);
  pd_net_free(one);
  /* a GPU run under mpirun (NCCL): the allreduce op on one rank too */
  g_nccl = true;
  one = trainable(NET, 1, 0, PD_OK, NULL, 0);
  g_nccl = false;
  assert_int_equal(op_index(one, "allreduce"), one->n_forward + one->n_backward);
  pd_net_free(one);

  pd_net *net = trainable(NET, 4, 1.0, PD_OK, NULL, 0);
  int ar = op_index(net, "allreduce");
  assert_int_equal(ar, net->n_forward + net->n_backward); /* the first of the optimizer part */
  assert_true(ar < op_index(net, "clip_by_global_norm") && ar < op_index(net, "sgd"));
  const pd_op *op = &net->ops[ar];
  assert_int_equal(op->in[0].n, 2);
  for (int i = 0; i < 2; i++) {
    assert_int_equal(op->in[0].vars[i], op->out[0].vars[i]); /* in place */
    assert_non_null(strstr(net->vars[op->in[0].vars[i]].name, "@GRAD"));
  }

  /* printed and loaded back: recognised as the start of the optimizer ops */
  Paddle__NetDesc *d = pd_net_to_desc(net);
  pd_buf b = {0};
  pd_error err = {0};
  assert_int_equal(pd_text_print(&d->base, 0, &b, &err), PD_OK);
  char *text = strndup(b.data, b.len);
  pd_net *back = trainable(text, 2, 1.0, PD_OK, NULL, 0);
  assert_int_equal(back->n_optimizer, net->n_optimizer);
  assert_int_equal(op_index(back, "allreduce"), back->n_forward + back->n_backward);
  pd_net_free(back);
  free(text), pd_buf_free(&b), protobuf_c_message_free_unpacked(&d->base, NULL), pd_net_free(net);

  /* update ops without an allreduce cannot train on several ranks */
  net = trainable(NET, 1, 0, PD_OK, NULL, 0);
  d = pd_net_to_desc(net);
  memset(&b, 0, sizeof b);
  assert_int_equal(pd_text_print(&d->base, 0, &b, &err), PD_OK);
  text = strndup(b.data, b.len);
  char msg[PD_ERROR_MAX];
  assert_null(trainable(text, 2, 0, PD_ERR_INPUT, msg, sizeof msg));
  assert_non_null(strstr(msg, "holds update ops but no allreduce op, so 2 ranks would train apart"));
  free(text), pd_buf_free(&b), protobuf_c_message_free_unpacked(&d->base, NULL), pd_net_free(net);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_single_rank_identity),
      cmocka_unit_test(test_shape_checks),
      cmocka_unit_test(test_add_optimizer),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
