/* test_blocks.c — NetDesc sub-blocks (docs/netdesc.md, "Blocks"): the text
 * and binary round trip of blocks and BLOCK attributes, every structural
 * check of lib/core/block.c with its position, the top-level op checks run
 * on each block's ops with the block named, the order of the errors, `--set`
 * into blocks and repeated messages, `desc`'s copy of the blocks, and a step
 * block's ops side by side (each op's level after those of what it reads,
 * the same bits as on 1 thread). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/block.h"
#include "core/initializer.h"
#include "core/net.h"
#include "core/runner.h"
#include "cpu/parallel.h"
#include "core/netdesc_out.h"
#include "paddle.pb-c.h"
#include "text/pbset.h"
#include "text/textformat.h"

/* canonical text: fmt prints it back byte for byte */
static const char *CANON = "name: \"rnn\"\n"
                           "var {\n"
                           "  name: \"x\"\n"
                           "  shape: -1\n"
                           "  shape: 4\n"
                           "}\n"
                           "op {\n"
                           "  type: \"relu\"\n"
                           "  inputs: \"x\"\n"
                           "  outputs: \"y\"\n"
                           "  attrs {\n"
                           "    key: \"step_block\"\n"
                           "    value {\n"
                           "      type: BLOCK\n"
                           "      block: \"cell\"\n"
                           "    }\n"
                           "  }\n"
                           "}\n"
                           "block {\n"
                           "  name: \"cell\"\n"
                           "  var {\n"
                           "    name: \"w\"\n"
                           "    kind: PARAM\n"
                           "  }\n"
                           "  op {\n"
                           "    type: \"tanh\"\n"
                           "    inputs: \"x\"\n"
                           "    outputs: \"h\"\n"
                           "  }\n"
                           "  comment: \"the step\"\n"
                           "}\n";

static Paddle__NetDesc *parse(const char *text) {
  ProtobufCMessage *m = NULL;
  pd_error err = {0};
  if (pd_text_parse(&paddle__net_desc__descriptor, text, strlen(text), "t.pbtxt", &m, NULL, &err))
    fail_msg("parse: %s", err.msg);
  return (Paddle__NetDesc *)m;
}

static char *print(const ProtobufCMessage *m) {
  pd_buf b = {0};
  pd_error err = {0};
  if (pd_text_print(m, 0, &b, &err)) fail_msg("print: %s", err.msg);
  pd_buf_append(&b, "", 1);
  return b.data;
}

static void test_round_trip(void **state) {
  (void)state;
  Paddle__NetDesc *d = parse(CANON);
  assert_int_equal(d->n_block, 1);
  assert_string_equal(d->block[0]->name, "cell");
  assert_string_equal(d->block[0]->comment, "the step");
  assert_int_equal(d->block[0]->n_op, 1);
  assert_int_equal(d->block[0]->var[0]->kind, PADDLE__VAR_KIND__PARAM);
  assert_int_equal(d->op[0]->attrs[0]->value->type, PADDLE__ATTR_TYPE__BLOCK);
  assert_string_equal(d->op[0]->attrs[0]->value->block, "cell");
  char *text = print(&d->base);
  assert_string_equal(text, CANON);
  /* through the binary encoding and back */
  size_t n = protobuf_c_message_get_packed_size(&d->base);
  uint8_t *bin = malloc(n);
  protobuf_c_message_pack(&d->base, bin);
  Paddle__NetDesc *d2 = paddle__net_desc__unpack(NULL, n, bin);
  assert_non_null(d2);
  char *text2 = print(&d2->base);
  assert_string_equal(text2, CANON);
  /* a block written in one line, with a list, parses to the same */
  Paddle__NetDesc *d3 = parse(
      "name: 'rnn' var { name: 'x' shape: [-1, 4] }\n"
      "op { type: 'relu' inputs: 'x' outputs: 'y' attrs { key: 'step_block' value { type: BLOCK block: 'cell' } } }\n"
      "block { comment: 'the step' name: 'cell' var { name: 'w' kind: PARAM } op { type: 'tanh' inputs: 'x' "
      "outputs: 'h' } }\n");
  char *text3 = print(&d3->base);
  assert_string_equal(text3, CANON);
  free(text), free(text2), free(text3), free(bin);
  protobuf_c_message_free_unpacked(&d->base, NULL);
  protobuf_c_message_free_unpacked(&d2->base, NULL);
  protobuf_c_message_free_unpacked(&d3->base, NULL);
}

/* A net whose load fails with `want` in the message. */
static void fails_with(const char *text, const char *want) {
  static pd_error err;
  pd_net *net = NULL;
  if (!pd_net_from_text("t.pbtxt", text, strlen(text), NULL, &net, &err)) {
    pd_net_free(net);
    fail_msg("expected an error containing: %s", want);
  }
  if (!strstr(err.msg, want)) fail_msg("expected an error containing:\n  %s\ngot:\n  %s", want, err.msg);
  assert_int_equal(err.status, PD_ERR_INPUT);
}

#define X "var { name: 'x' shape: [-1, 4] }\n"
#define RUN(blk) "op { type: 'relu' inputs: 'x' outputs: 'y' attrs { key: 'step' value { block: '" blk "' } } }\n"

/* no op takes a BLOCK attribute yet: a structurally sound net ends at it */
static const char *AT_STEP = "t.pbtxt:2:52: op #0 \"relu\": unknown attribute \"step\"; relu takes no attributes";

static void test_sound_nets_end_at_the_block_attribute(void **state) {
  (void)state;
  fails_with(X RUN("cell") "block { name: 'cell' op { type: 'tanh' inputs: 'x' outputs: 'h' } }", AT_STEP);
  /* nested: cell runs inner; inner reads x (top level) and h (cell) */
  fails_with(X RUN("cell") "block { name: 'inner' var { name: 'k' shape: [4] } op { type: 'tanh' inputs: 'h' outputs: "
                           "'g' } }\n"
                           "block { name: 'cell' var { name: 'h' shape: [-1, 4] } op { type: 'tanh' inputs: 'x' "
                           "outputs: 'h2' attrs { key: 'sub' value { block: 'inner' } } } }\n",
             "t.pbtxt:4:107: block \"cell\", op #0 \"tanh\": unknown attribute \"sub\"; tanh takes no attributes");
  /* siblings may each declare a variable of one name: their scopes are apart */
  fails_with(X RUN("a") "op { type: 'relu' inputs: 'x' outputs: 'z' attrs { key: 'step' value { block: 'b' } } }\n"
                        "block { name: 'a' var { name: 't' shape: [4] } }\n"
                        "block { name: 'b' var { name: 't' shape: [4] } }\n",
             AT_STEP);
  /* a parameter declared in a block (it lives in the outermost scope) */
  fails_with(X RUN("cell") "block { name: 'cell' var { name: 'w' shape: [4, 4] kind: PARAM } }", AT_STEP);
}

static void test_names(void **state) {
  (void)state;
  fails_with(X RUN("cell") "block { name: '' }\nblock { name: 'cell' }",
             "t.pbtxt:3:9: block #0 has an empty name; a block needs one");
  fails_with(X RUN("cell") "block { name: 'cell' }\nblock { name: 'cell' }",
             "t.pbtxt:4:9: block \"cell\" is declared twice (t.pbtxt:3:1)");
}

static void test_references(void **state) {
  (void)state;
  fails_with(
      X RUN("cel") "block { name: 'cell' }",
      "t.pbtxt:2:72: op #0 \"relu\": attribute \"step\" names block \"cel\", which is not declared (did you mean "
      "\"cell\"?)");
  fails_with(X RUN("cell"), "t.pbtxt:2:72: op #0 \"relu\": attribute \"step\" names block \"cell\", which is not "
                            "declared (the file declares no blocks");
  /* an op inside a block names itself */
  fails_with(X RUN("a") "block { name: 'a' op { type: 'tanh' inputs: 'x' outputs: 'h' attrs { key: 'blk' value { "
                        "block: 'a' } } } }",
             "t.pbtxt:3:89: block \"a\", op #0 \"tanh\": attribute \"blk\" names block \"a\", the block the op is in; "
             "a block cannot run itself");
  /* one op, two attributes, one block */
  fails_with(X "op { type: 'relu' inputs: 'x' outputs: 'y' attrs { key: 's1' value { block: 'a' } } attrs { key: "
               "'s2' value { block: 'a' } } }\nblock { name: 'a' }",
             "op #0 \"relu\": attributes \"s1\" and \"s2\" both name block \"a\"; a block is run once");
  /* two ops, in different blocks */
  fails_with(X RUN("a") "block { name: 'a' op { type: 'tanh' inputs: 'x' outputs: 'h' attrs { key: 'blk' value { "
                        "block: 'b' } } } }\n"
                        "block { name: 'b' }\n"
                        "block { name: 'c' op { type: 'tanh' inputs: 'x' outputs: 'h' attrs { key: 'blk' value { "
                        "block: 'b' } } } }\n",
             "t.pbtxt:5:89: block \"c\", op #0 \"tanh\": attribute \"blk\" names block \"b\", which block \"a\", op "
             "#0 \"tanh\" (t.pbtxt:3:19) already runs; a block is run by exactly one op");
  /* a block nothing runs, after every reference checked */
  fails_with(X RUN("a") "block { name: 'a' }\nblock { name: 'idle' }",
             "t.pbtxt:4:9: block \"idle\" is run by no op: name it in an op's BLOCK attribute (value { block: \"idle\" "
             "}) or remove it");
}

#define CALLS(me, next)                                                                                        \
  "block { name: '" me "' op { type: 'tanh' inputs: 'x' outputs: 'h' attrs { key: 'blk' value { block: '" next \
  "' } } } }\n"

static void test_cycles(void **state) {
  (void)state;
  /* top level runs "a"; "b" and "c" run each other */
  fails_with(X RUN("a") "block { name: 'a' }\n" CALLS("b", "c") CALLS("c", "b"),
             "t.pbtxt:5:89: block \"c\", op #0 \"tanh\": attribute \"blk\" names block \"b\", which makes a cycle: "
             "\"b\" runs \"c\", which runs \"b\"; every block must be reached from the top-level ops");
  /* three in a loop, named from the first declared of them; "d" leads into
   * it ("z" runs it, an op of "r" runs "z") */
  fails_with(
      X RUN(
          "a") "block { name: 'a' }\nblock { name: 'd' }\n"
               "block { name: 'r' op { type: 'tanh' inputs: 'x' outputs: 'h' attrs { key: 'blk' value { block: 'p' "
               "} } } op { type: 'tanh' inputs: 'x' outputs: 'g' attrs { key: 'blk' value { block: 'z' } } } }\n" CALLS(
                   "p", "q") CALLS("q", "r") CALLS("z", "d"),
      "t.pbtxt:7:89: block \"q\", op #0 \"tanh\": attribute \"blk\" names block \"r\", which makes a cycle: "
      "\"r\" runs \"p\", which runs \"q\", which runs \"r\"");
}

static void test_variables(void **state) {
  (void)state;
  /* inner redeclares its parent block's variable */
  fails_with(X RUN("outer") "block { name: 'outer' var { name: 'h' } op { type: 'tanh' inputs: 'x' outputs: 'h' attrs "
                            "{ key: 'b' value { block: 'inner' } } } }\n"
                            "block { name: 'inner' var { name: 'h' } }\n",
             "t.pbtxt:4:29: block \"inner\": variable \"h\" is declared in block \"outer\" too (t.pbtxt:3:23), which "
             "encloses it; a block sees the variables of the blocks around it, so declare it once");
  /* the inner block declared first in the file: still the inner one is named */
  fails_with(X RUN("outer") "block { name: 'inner' var { name: 'h' } }\n"
                            "block { name: 'outer' var { name: 'h' } op { type: 'tanh' inputs: 'x' outputs: 'h' attrs "
                            "{ key: 'b' value { block: 'inner' } } } }\n",
             "t.pbtxt:3:29: block \"inner\": variable \"h\" is declared in block \"outer\" too (t.pbtxt:4:23)");
  /* a top-level variable, two levels up */
  fails_with(X RUN("outer") "block { name: 'outer' op { type: 'tanh' inputs: 'x' outputs: 'h' attrs { key: 'b' value "
                            "{ block: 'inner' } } } }\n"
                            "block { name: 'inner' var { name: 'x' } }\n",
             "t.pbtxt:4:29: block \"inner\": variable \"x\" is declared in the top level too (t.pbtxt:1:1)");
  /* a parameter in one block, the same name in a sibling */
  fails_with(X RUN("a") "op { type: 'relu' inputs: 'x' outputs: 'z' attrs { key: 'step' value { block: 'b' } } }\n"
                        "block { name: 'a' var { name: 'w' kind: PARAM } }\n"
                        "block { name: 'b' var { name: 'w' } }\n",
             "t.pbtxt:5:25: block \"b\": variable \"w\" is declared in block \"a\" too (t.pbtxt:4:19); a parameter "
             "lives in the outermost scope, which every block sees, so declare it once");
  /* a parameter of a block and a top-level variable: the top level encloses it */
  fails_with(X RUN("a") "block { name: 'a' var { name: 'x' kind: PARAM } }\n",
             "t.pbtxt:3:25: block \"a\": variable \"x\" is declared in the top level too (t.pbtxt:1:1), which "
             "encloses it");
  /* a parameter of the outer block, a temporary of the same name inside */
  fails_with(X RUN("outer") "block { name: 'outer' var { name: 'w' kind: PARAM } op { type: 'tanh' inputs: 'x' "
                            "outputs: 'h' attrs { key: 'b' value { block: 'inner' } } } }\n"
                            "block { name: 'inner' var { name: 'w' } }\n",
             "t.pbtxt:4:29: block \"inner\": variable \"w\" is declared in block \"outer\" too (t.pbtxt:3:23), "
             "which encloses it");
  /* three deep, the middle and the innermost redeclare: the first in the file is named, with the nearest outer */
  fails_with(X RUN("b1") "block { name: 'b1' var { name: 't' } op { type: 'tanh' inputs: 'x' outputs: 'h' attrs { key: "
                         "'b' value { block: 'b2' } } } }\n"
                         "block { name: 'b3' var { name: 't' } }\n"
                         "block { name: 'b2' var { name: 't' } op { type: 'tanh' inputs: 'x' outputs: 'h' attrs { key: "
                         "'b' value { block: 'b3' } } } }\n",
             "t.pbtxt:4:26: block \"b3\": variable \"t\" is declared in block \"b2\" too (t.pbtxt:5:20), which "
             "encloses it");
  /* declared twice in one block: the top-level check, naming the block */
  fails_with(X RUN("a") "block { name: 'a' var { name: 'w' } var { name: 'w' } }\n",
             "t.pbtxt:3:43: block \"a\": variable \"w\" is declared twice");
}

static void test_block_ops(void **state) {
  (void)state;
  fails_with(X RUN("cell") "block {\n name: 'cell'\n op { type: 'tanh' inputs: 'x' outputs: 'h' }\n op { type: "
                           "'tahn' inputs: 'h' outputs: 'g' }\n}\n",
             "t.pbtxt:6:7: block \"cell\", op #1: unknown op type \"tahn\" (did you mean \"tanh\"?)");
  fails_with(X RUN("cell") "block { name: 'cell' op { type: 'elementwise_add' inputs: 'x' outputs: 'h' } }",
             "block \"cell\", op #0 \"elementwise_add\": input \"Y\"");
  fails_with(X RUN("cell") "block { name: 'cell' op { type: 'fc' inputs: ['x', 'w'] outputs: 'h' attrs { key: 'sise' "
                           "value { i: 3 } } } }",
             "block \"cell\", op #0 \"fc\": unknown attribute \"sise\" (did you mean \"size\"?)");
  fails_with(X RUN("cell") "block { name: 'cell' var { name: 'v' shape: [2, -1] } }",
             "block \"cell\": variable \"v\": dimension 1 is -1");
  /* the structural errors come first: a block nothing runs, declared after
   * a block with a bad op */
  fails_with(X RUN("cell") "block { name: 'cell' op { type: 'nope' } }\nblock { name: 'idle' }",
             "block \"idle\" is run by no op");
  /* and a bad block op before the top-level op naming the block */
  fails_with(X RUN("cell") "block { name: 'cell' op { type: 'nope' } }", "block \"cell\", op #0: unknown op type");
}

/* A net from text on the CPU, ready to run, with its [rows, 4, 64] input
 * x allocated (the caller fills it). */
typedef struct loaded {
  pd_net *net;
  pd_scope *scope;
  pd_runner r;
  pd_tensor *x;
} loaded;

static void load(loaded *l, const char *text, int64_t rows) {
  pd_error err = {0};
  l->net = NULL;
  if (pd_net_from_text("t.pbtxt", text, strlen(text), NULL, &l->net, &err)) fail_msg("%s", err.msg);
  l->scope = pd_scope_new(NULL);
  assert_int_equal(pd_net_select_kernels(l->net, PD_CPU, &err), PD_OK);
  assert_int_equal(pd_runner_init(&l->r, l->net, l->scope, NULL, &err), PD_OK);
  l->x = l->r.t[pd_net_var(l->net, "x")];
  assert_int_equal(pd_tensor_set_dims(l->x, 3, (int64_t[]){rows, 4, 64}, &err), PD_OK);
  assert_int_equal(pd_tensor_alloc(l->x, &err), PD_OK);
}

static void run_loaded(loaded *l) {
  pd_error err = {0};
  if (pd_runner_run(&l->r, 0, l->net->nops, &err)) fail_msg("%s", err.msg);
}

static void unload(loaded *l) {
  pd_runner_free(&l->r);
  pd_scope_free(l->scope);
  pd_net_free(l->net);
}

/* A random op in a step block draws new numbers at every step, and two
 * blocks with the same ops draw different ones: dropout masks of two
 * recurrent ops over a sequence of ones, while training. */
static void test_block_random_streams(void **state) {
  (void)state;
  static const char *text =
      "var { name: 'x' shape: [-1, 4, 64] }\n"
      "block { name: 'a' op { type: 'dropout' inputs: 'x_t' outputs: ['d', 'm'] } }\n"
      "block { name: 'b' op { type: 'dropout' inputs: 'x_t' outputs: ['d', 'm'] } }\n"
      "op { type: 'recurrent' inputs: 'x' outputs: 'da' attrs { key: 'step_block' value { block: 'a' } } "
      "attrs { key: 'inputs' value { strings: 'x_t' } } attrs { key: 'outputs' value { strings: 'd' } } }\n"
      "op { type: 'recurrent' inputs: 'x' outputs: 'db' attrs { key: 'step_block' value { block: 'b' } } "
      "attrs { key: 'inputs' value { strings: 'x_t' } } attrs { key: 'outputs' value { strings: 'd' } } }\n";
  loaded l;
  load(&l, text, 2);
  l.r.exec.training = true, l.r.exec.seed = 3;
  for (int64_t i = 0; i < 2 * 4 * 64; i++) pd_tensor_set(l.x, i, 1);
  run_loaded(&l);
  const float *a = PD_DATA(l.r.t[pd_net_var(l.net, "da")], float), *b = PD_DATA(l.r.t[pd_net_var(l.net, "db")], float);
  int kept = 0;
  for (int i = 0; i < 64; i++) kept += a[i] != 0;
  assert_true(kept > 8 && kept < 56); /* p = 0.5 */
  for (int t = 1; t < 4; t++)         /* step t of row 0 against step 0 */
    assert_memory_not_equal(a, a + t * 64, 64 * sizeof(float));
  assert_memory_not_equal(a + 64, a + 4 * 64, 64 * sizeof(float)); /* step 1 of rows 0 and 1 */
  assert_memory_not_equal(a, b, 4 * 64 * sizeof(float));           /* the other block */
  unload(&l);
}

/* A step block's independent ops side by side (lib/core/block.c, "Ops side
 * by side"): on 2 threads some of them run side by side, the op reading all
 * of them never does, nothing does on 1 thread, and the values are the same
 * bits either way (elementwise ops, a view of another op's output read
 * beside that output's other reader). */
static void run_side(int threads, float *out, bool *side, int *level) {
  static const char *text =
      "var { name: 'x' shape: [-1, 4, 64] }\n"
      "block { name: 'cell'\n"
      "  op { type: 'scale' inputs: 'x_t' outputs: 'a' attrs { key: 'scale' value { f: 0.5 } } }\n"
      "  op { type: 'tanh' inputs: 'x_t' outputs: 'b' }\n"
      "  op { type: 'reshape' inputs: 'a' outputs: 'av' attrs { key: 'shape' value { ints: [0, 64] } } }\n"
      "  op { type: 'sigmoid' inputs: 'b' outputs: 'sb' }\n"
      "  op { type: 'tanh' inputs: 'av' outputs: 'r' }\n"
      "  op { type: 'sigmoid' inputs: 'a' outputs: 'sa' }\n"
      "  op { type: 'sum' inputs: ['r', 'sb', 'sa'] outputs: 'h' } }\n"
      "op { type: 'recurrent' inputs: 'x' outputs: 'hs' attrs { key: 'step_block' value { block: 'cell' } } "
      "attrs { key: 'inputs' value { strings: 'x_t' } } attrs { key: 'outputs' value { strings: 'h' } } }\n";
  pd_set_threads(threads);
  loaded l;
  load(&l, text, 3);
  l.r.exec.threads = threads;
  for (int64_t i = 0; i < 3 * 4 * 64; i++) pd_tensor_set(l.x, i, (double)((i * 37) % 101) / 25.0 - 2.0);
  run_loaded(&l);
  memcpy(out, PD_DATA(l.r.t[pd_net_var(l.net, "hs")], float), sizeof(float) * 3 * 4 * 64);
  assert_int_equal(l.net->nblocks, 1);
  for (int o = 0; o < 7; o++) side[o] = pd_block_side_by_side(l.net->blocks[0], o);
  for (int o = 0; o < 7; o++) level[o] = pd_block_level(l.net->blocks[0], o);
  unload(&l);
}

static void test_side_by_side(void **state) {
  (void)state;
  float one[3 * 4 * 64], two[3 * 4 * 64];
  bool side1[7], side2[7];
  int level1[7], level2[7];
  run_side(1, one, side1, level1);
  run_side(2, two, side2, level2);
  pd_set_threads(0);
  assert_memory_equal(one, two, sizeof one);
  int n = 0;
  for (int o = 0; o < 7; o++) {
    assert_false(side1[o]);
    n += side2[o];
  }
  assert_true(n >= 2);
  assert_false(side2[6]); /* the sum reads every other op's output: alone */
  /* every op after the ops whose outputs it reads (a view's readers after
   * the op that wrote what it views); 1 thread plans nothing */
  static const int reads[7][3] = {{-1, -1, -1}, {-1, -1, -1}, {0, -1, -1}, {1, -1, -1},
                                  {2, 0, -1},   {0, -1, -1},  {4, 3, 5}};
  for (int o = 0; o < 7; o++) {
    assert_int_equal(level1[o], -1);
    assert_true(level2[o] >= 0);
    for (int k = 0; k < 3 && reads[o][k] >= 0; k++) assert_true(level2[o] > level2[reads[o][k]]);
  }
  double want = 0.5 * (((5 * 37) % 101) / 25.0 - 2.0); /* element 5 of step 0, row 0 */
  assert_float_equal(one[5], tanh(want) + 1 / (1 + exp(-tanh(2 * want))) + 1 / (1 + exp(-want)), 1e-6);
}

static void test_set(void **state) {
  (void)state;
  Paddle__NetDesc *d = parse(CANON);
  pd_error err = {0};
  assert_int_equal(pd_pb_set(&d->base, "block[cell].comment=another step", &err), PD_OK);
  assert_string_equal(d->block[0]->comment, "another step");
  assert_int_equal(pd_pb_set(&d->base, "block[0].op[0].type=sigmoid", &err), PD_OK);
  assert_string_equal(d->block[0]->op[0]->type, "sigmoid");
  assert_int_equal(pd_pb_set(&d->base, "block[\"cell\"].var[w].no_gradient=true", &err), PD_OK);
  assert_true(d->block[0]->var[0]->no_gradient);
  assert_int_equal(pd_pb_set(&d->base, "op[0].attrs[0].value.block=other", &err), PD_OK);
  assert_string_equal(d->op[0]->attrs[0]->value->block, "other");
  /* an op by the variable it writes; a map entry by its key, its value's
   * field the one it holds, or (a new key) the one the value's form implies */
  assert_int_equal(pd_pb_set(&d->base, "op[y].attrs.step_block=other2", &err), PD_OK);
  assert_string_equal(d->op[0]->attrs[0]->value->block, "other2");
  assert_int_equal(pd_pb_set(&d->base, "block[cell].op[h].attrs.size=256", &err), PD_OK);
  assert_int_equal(d->block[0]->op[0]->n_attrs, 1);
  assert_string_equal(d->block[0]->op[0]->attrs[0]->key, "size");
  assert_int_equal(d->block[0]->op[0]->attrs[0]->value->i, 256);
  assert_int_equal(pd_pb_set(&d->base, "block[cell].op[h].attrs.size=128", &err), PD_OK);
  assert_int_equal(d->block[0]->op[0]->n_attrs, 1);
  assert_int_equal(d->block[0]->op[0]->attrs[0]->value->i, 128);
  assert_int_equal(pd_pb_set(&d->base, "block[cell].op[0].attrs.dims=[1, 2]", &err), PD_OK);
  assert_int_equal(pd_pb_set(&d->base, "block[cell].op[0].attrs.dims=[3]", &err), PD_OK); /* replaced */
  assert_int_equal(d->block[0]->op[0]->attrs[1]->value->n_ints, 1);
  assert_int_equal(d->block[0]->op[0]->attrs[1]->value->ints[0], 3);
  assert_int_equal(pd_pb_set(&d->base, "block[cell].op[0].attrs[size].value.i=64", &err), PD_OK);
  assert_int_equal(d->block[0]->op[0]->attrs[0]->value->i, 64);
  assert_int_equal(pd_pb_set(&d->base, "op[0].inputs=x2", &err), PD_OK); /* a repeated scalar: appended */
  assert_int_equal(d->op[0]->n_inputs, 2);
  assert_int_equal(pd_pb_set(&d->base, "var[x].shape=7", &err), PD_OK);
  assert_int_equal(d->var[0]->n_shape, 3);
  /* names may hold dots */
  assert_int_equal(pd_pb_set(&d->base, "var[x].name=a.b", &err), PD_OK);
  assert_int_equal(pd_pb_set(&d->base, "var[a.b].comment=dotted", &err), PD_OK);
  assert_string_equal(d->var[0]->comment, "dotted");
  static const struct {
    const char *set, *msg;
  } bad[] = {
      {"block[2].name=x", "--set 'block[2].name=x': block[2]: the net has 1 block (0..0)"},
      {"block[nope].name=x", "--set 'block[nope].name=x': block[nope]: no block named \"nope\""},
      {"block[cell].op[3].type=x", "--set 'block[cell].op[3].type=x': op[3]: block[cell] has 1 op (0..0)"},
      {"op[nope].type=x", "--set 'op[nope].type=x': op[nope]: no op writes \"nope\""},
      {"block[cell].op[h].attrs.size=abc",
       "--set 'block[cell].op[h].attrs.size=abc': size: expected an integer, got \"abc\""},
      {"block[cell]=x", "\"block[cell]\" is a message; set one of its fields (block[cell].FIELD=VALUE)"},
      {"train[0].loss=x", "\"train\" is not a repeated message; [INDEX] and [NAME] pick one of those"},
      {"name[0].x=y", "\"name\" is not a repeated message"},
      {"block.name=x",
       "\"block\" is not a single message, so it has no fields (pick one: block[INDEX] or block[NAME])"},
      {"op.type=relu", "\"op\" is not a single message, so it has no fields (pick one: op[INDEX] or op[OUTPUT])"},
      {"block[cell].nme=x", "paddle.BlockDesc has no field \"nme\" (did you mean \"name\"?)"},
      {"block[cell.name=x", "has no field \"block[cell\""},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    if (pd_pb_set(&d->base, bad[i].set, &err) != PD_ERR_INPUT) fail_msg("%s: expected an error", bad[i].set);
    if (!strstr(err.msg, bad[i].msg)) fail_msg("%s:\n  expected %s\n  got %s", bad[i].set, bad[i].msg, err.msg);
  }
  protobuf_c_message_free_unpacked(&d->base, NULL);
}

/* desc prints the blocks as the file gives them (a net with blocks does not
 * load yet, so one is added to a loaded net's desc here) */
static void test_desc_copies_blocks(void **state) {
  (void)state;
  const char *text = X "op { type: 'relu' inputs: 'x' outputs: 'y' }\n";
  pd_net *net = NULL;
  pd_error err = {0};
  if (pd_net_from_text("t.pbtxt", text, strlen(text), NULL, &net, &err)) fail_msg("%s", err.msg);
  Paddle__NetDesc *withb = parse(CANON);
  net->desc->block = withb->block, net->desc->n_block = withb->n_block;
  withb->block = NULL, withb->n_block = 0;
  Paddle__NetDesc *d = pd_net_to_desc(net);
  char *out = print(&d->base);
  assert_non_null(strstr(out, "}\nblock {\n  name: \"cell\"\n  var {\n    name: \"w\"\n    kind: PARAM\n  }\n  op {\n"
                              "    type: \"tanh\"\n"));
  free(out);
  protobuf_c_message_free_unpacked(&d->base, NULL);
  protobuf_c_message_free_unpacked(&withb->base, NULL);
  pd_net_free(net);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_round_trip),
      cmocka_unit_test(test_sound_nets_end_at_the_block_attribute),
      cmocka_unit_test(test_names),
      cmocka_unit_test(test_references),
      cmocka_unit_test(test_cycles),
      cmocka_unit_test(test_variables),
      cmocka_unit_test(test_block_ops),
      cmocka_unit_test(test_block_random_streams),
      cmocka_unit_test(test_side_by_side),
      cmocka_unit_test(test_set),
      cmocka_unit_test(test_desc_copies_blocks),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
