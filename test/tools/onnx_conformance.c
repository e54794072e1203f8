/* onnx_conformance.c — runs ONNX's own backend test data through the
 * importer: for each DIR/<test>/model.onnx whose every node we claim, import
 * it, build the net, feed test_data_set_N/input_K.pb and compare what comes
 * out with output_K.pb (|got - want| <= atol + rtol |want|, rtol 1e-3, atol
 * 1e-7, shapes and dtypes equal). A graph input the importer needs as a
 * constant (Reshape's shape, Clip's bounds, Dropout's training_mode, ...)
 * is folded into the model as an initializer from the test's input file
 * first, and counted; the weights the import leaves to the parameter
 * directory (BatchNormalization's as graph inputs) are fed like data.
 * Prints one line per test and
 *   N passed, N failed, N skipped (N with inputs folded as constants)
 * then, per unsupported op type, how many tests were skipped. Exit 1 on any
 * failure.
 *
 *   onnx_conformance [-v] DIR...      (DIR: e.g. .../data/node) */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/net.h"
#include "core/runner.h"
#include "onnx/onnx_import.h"

typedef struct result {
  int passed, failed, skipped, folded;
} result;

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Sorted entries of dir starting with prefix (NULL-terminated; caller frees). */
static char **list_dir(const char *dir, const char *prefix, int *n) {
  DIR *d = opendir(dir);
  *n = 0;
  if (!d) return NULL;
  char **v = NULL;
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    if (de->d_name[0] == '.' || strncmp(de->d_name, prefix, strlen(prefix)) != 0) continue;
    char **nv = realloc(v, sizeof *v * (size_t)(*n + 2));
    if (!nv) break;
    v = nv;
    v[(*n)++] = strdup(de->d_name);
  }
  closedir(d);
  if (v) qsort(v, (size_t)*n, sizeof *v, by_name);
  return v;
}

static void free_list(char **v, int n) {
  for (int i = 0; i < n; i++) free(v[i]);
  free(v);
}

/* Appends initializer `name` with the value of a serialized TensorProto. */
static int fold_input(Onnx__ModelProto *m, const char *name, const char *pb) {
  FILE *f = fopen(pb, "rb");
  if (!f) return -1;
  static uint8_t buf[1 << 24];
  size_t len = fread(buf, 1, sizeof buf, f);
  fclose(f);
  Onnx__TensorProto *tp = onnx__tensor_proto__unpack(NULL, len, buf);
  if (!tp) return -1;
  free(tp->name);
  tp->name = strdup(name);
  Onnx__GraphProto *g = m->graph;
  Onnx__TensorProto **v = realloc(g->initializer, sizeof *v * (g->n_initializer + 1));
  if (!v) return -1;
  g->initializer = v;
  v[g->n_initializer++] = tp;
  return 0;
}

/* Whether got matches want within the tolerance; why says where not. */
static bool close_enough(const pd_tensor *got, const pd_tensor *want, char *why, size_t size) {
  char a[128], b[128];
  if (got->dtype != want->dtype || !pd_dims_equal(got->ndim, got->dims, want->ndim, want->dims)) {
    snprintf(why, size, "got %s %s, want %s %s", pd_dtype_name(got->dtype),
             pd_dims_str(got->ndim, got->dims, a, sizeof a), pd_dtype_name(want->dtype),
             pd_dims_str(want->ndim, want->dims, b, sizeof b));
    return false;
  }
  int64_t n = pd_tensor_numel(want);
  for (int64_t i = 0; i < n; i++) {
    double g = pd_tensor_get(got, i), w = pd_tensor_get(want, i);
    if (isnan(w) && isnan(g)) continue;
    if (!(fabs(g - w) <= 1e-7 + 1e-3 * fabs(w))) {
      snprintf(why, size, "element %lld: got %.9g, want %.9g", (long long)i, g, w);
      return false;
    }
  }
  return true;
}

/* One test data set against the built net. 0 pass, 1 fail (why filled). */
static int run_set(pd_net *net, const pd_onnx_import *im, const char *set, char *const *orig_inputs, int norig,
                   Onnx__ModelProto *m, char *why, size_t size) {
  pd_error err = {0};
  pd_scope *scope = pd_scope_new(NULL);
  pd_runner r = {0};
  int rc = 1;
  pd_status st = scope ? PD_OK : PD_ERR_RUNTIME;
  for (int i = 0; i < im->nvalues && !st; i++) {
    pd_var *v = pd_scope_var(scope, im->values[i].name);
    st = v ? pd_tensor_copy(&v->tensor, &im->values[i].t, &err) : PD_ERR_RUNTIME;
  }
  if (!st) st = pd_runner_init(&r, net, scope, NULL, &err);
  if (!st) r.exec.training = false;
  int ni = 0, no = 0;
  char path[8192];
  char **ins = list_dir(set, "input_", &ni), **outs = list_dir(set, "output_", &no);
  for (int k = 0; k < ni && !st; k++) {
    snprintf(path, sizeof path, "%s/input_%d.pb", set, k);
    pd_tensor t;
    char *name = NULL;
    if ((st = pd_onnx_read_tensor(path, &t, &name, &err))) break;
    const char *target = name && name[0] ? name : k < norig ? orig_inputs[k] : "";
    int v = pd_net_var(net, target);
    /* data, and the weights the importer left to the parameter directory */
    bool weight = false;
    for (int w = 0; w < im->nweights; w++) weight |= strcmp(im->weights[w], target) == 0;
    if (v >= 0 && (net->vars[v].kind == PD_VAR_DATA || weight)) st = pd_tensor_copy(r.t[v], &t, &err);
    pd_tensor_release(&t);
    free(name);
  }
  for (int k = 0; k < no && !st; k++) {
    snprintf(path, sizeof path, "%s/output_%d.pb", set, k);
    pd_tensor want;
    char *name = NULL;
    if ((st = pd_onnx_read_tensor(path, &want, &name, &err))) break;
    if (k == 0 && (st = pd_runner_run(&r, 0, net->nops, &err))) {
      pd_tensor_release(&want);
      free(name);
      break;
    }
    const char *target = name && name[0] ? name : k < (int)m->graph->n_output ? m->graph->output[k]->name : "";
    int v = pd_net_var(net, target);
    if (v < 0) {
      snprintf(why, size, "no output \"%s\"", target);
      st = PD_ERR_INPUT;
    } else if (!close_enough(r.t[v], &want, why, size)) {
      st = PD_ERR_INPUT;
    }
    pd_tensor_release(&want);
    free(name);
  }
  if (st && err.msg[0]) snprintf(why, size, "%s", err.msg);
  if (!st) rc = 0;
  free_list(ins, ni);
  free_list(outs, no);
  pd_runner_free(&r);
  if (scope) pd_scope_free(scope);
  return rc;
}

/* One test directory. */
static void run_test(const char *dir, const char *label, result *res, int verbose, char ***skip_ops, int *nskip) {
  char path[4096], why[4096] = "";
  snprintf(path, sizeof path, "%s/model.onnx", dir);
  pd_error err = {0};
  Onnx__ModelProto *m = NULL;
  if (pd_onnx_read(path, &m, &err)) {
    printf("fail %s: %s\n", label, err.msg);
    res->failed++;
    return;
  }
  /* the graph's data inputs before any folding: input_k.pb is the k-th */
  char *orig[64];
  int norig = 0;
  for (size_t i = 0; i < m->graph->n_input && norig < 64; i++) {
    bool init = false;
    for (size_t j = 0; j < m->graph->n_initializer; j++)
      init |= strcmp(m->graph->initializer[j]->name, m->graph->input[i]->name) == 0;
    if (!init) orig[norig++] = m->graph->input[i]->name;
  }
  pd_onnx_import im;
  pd_status st;
  int folded = 0;
  for (;;) {
    st = pd_onnx_import_model(m, path, &im, &err);
    if (!st || !im.need_const) break;
    int k = 0;
    while (k < norig && strcmp(orig[k], im.need_const) != 0) k++;
    char pb[4096];
    snprintf(pb, sizeof pb, "%s/test_data_set_0/input_%d.pb", dir, k);
    if (k == norig || fold_input(m, im.need_const, pb)) break;
    folded++;
    pd_onnx_import_free(&im);
  }
  if (st && im.unsupported) {
    const char *op = im.unsupported_op ? im.unsupported_op : "?";
    printf("skip %s: %s\n", label, err.msg);
    char **v = realloc(*skip_ops, sizeof *v * (size_t)(*nskip + 1));
    if (v) {
      *skip_ops = v;
      v[(*nskip)++] = strdup(op);
    }
    res->skipped++;
  } else if (st) {
    printf("fail %s: %s\n", label, err.msg);
    res->failed++;
  } else {
    pd_net *net = NULL;
    st = pd_net_from_text(path, im.text, im.len, NULL, &net, &err);
    if (!st) st = pd_net_select_kernels(net, PD_CPU, &err);
    int nsets = 0, bad = 0;
    char **sets = st ? NULL : list_dir(dir, "test_data_set_", &nsets);
    for (int s = 0; s < nsets && !bad; s++) {
      snprintf(path, sizeof path, "%s/%s", dir, sets[s]);
      bad = run_set(net, &im, path, orig, norig, m, why, sizeof why);
    }
    free_list(sets, nsets);
    if (st) snprintf(why, sizeof why, "%s", err.msg);
    if (st || bad) {
      printf("fail %s: %s\n", label, why);
      if (verbose) printf("%s", im.text);
      res->failed++;
    } else {
      if (verbose || folded) printf("pass %s%s\n", label, folded ? " (inputs folded as constants)" : "");
      res->passed++;
      res->folded += folded > 0;
    }
    if (net) pd_net_free(net);
  }
  pd_onnx_import_free(&im);
  protobuf_c_message_free_unpacked(&m->base, NULL);
}

int main(int argc, char **argv) {
  result res = {0};
  int verbose = 0;
  char **skip_ops = NULL;
  int nskip = 0;
  for (int a = 1; a < argc; a++) {
    if (strcmp(argv[a], "-v") == 0) {
      verbose = 1;
      continue;
    }
    int n = 0;
    char **tests = list_dir(argv[a], "", &n);
    const char *base = strrchr(argv[a], '/') ? strrchr(argv[a], '/') + 1 : argv[a];
    for (int i = 0; i < n; i++) {
      char dir[2048], label[512], model[2100];
      snprintf(dir, sizeof dir, "%s/%s", argv[a], tests[i]);
      snprintf(model, sizeof model, "%s/model.onnx", dir);
      struct stat sb;
      if (stat(model, &sb) != 0) continue;
      snprintf(label, sizeof label, "%s/%s", base, tests[i]);
      run_test(dir, label, &res, verbose, &skip_ops, &nskip);
    }
    free_list(tests, n);
  }
  printf("%d passed, %d failed, %d skipped (%d with inputs folded as constants)\n", res.passed, res.failed, res.skipped,
         res.folded);
  qsort(skip_ops, (size_t)nskip, sizeof *skip_ops, by_name);
  printf("skipped, by op:");
  for (int i = 0; i < nskip;) {
    int j = i;
    while (j < nskip && strcmp(skip_ops[j], skip_ops[i]) == 0) j++;
    printf(" %s %d%s", skip_ops[i], j - i, j < nskip ? "," : "");
    i = j;
  }
  printf("\n");
  free_list(skip_ops, nskip);
  return res.failed ? 1 : 0;
}
