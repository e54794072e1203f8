/* dist_cli.c — see dist_cli.h. */
#include "dist_cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "io/dataset.h"
#include "dist/dist.h"

static struct {
  int real_stderr; /* ranks other than 0: the stderr mpirun gave; -1 otherwise */
  FILE *held;      /* what those ranks printed before the agreement */
  bool agreed;
} g = {-1, NULL, false};

int pd_cli_dist_begin(void) {
  pd_error err = {0};
  if (pd_dist_init(&err)) return pd_cli_fail(&err);
  if (pd_dist_size() > 1 && pd_dist_rank() != 0) {
    fflush(stderr);
    g.held = tmpfile();
    g.real_stderr = g.held ? dup(2) : -1;
    if (g.real_stderr >= 0) dup2(fileno(g.held), 2);
  }
  return 0;
}

int pd_cli_dist_agree(int code) {
  if (g.agreed) return code;
  g.agreed = true;
  int first = -1, agreed_code = code;
  pd_error err = {0};
  if (pd_dist_agree(code, &first, &agreed_code, &err)) {
    code = pd_cli_dist_fail(&err, false);
    return code;
  }
  if (g.real_stderr >= 0) {
    if (first == pd_dist_rank()) {
      fflush(stderr);
      rewind(g.held);
      char line[PD_ERROR_MAX + 64];
      while (fgets(line, sizeof line, g.held)) dprintf(g.real_stderr, "[rank %d] %s", pd_dist_rank(), line);
    }
    /* from now on only errors, through pd_cli_dist_fail */
    FILE *null = fopen("/dev/null", "w");
    fflush(stderr);
    if (null) dup2(fileno(null), 2), fclose(null);
    fclose(g.held);
    g.held = NULL;
  }
  return first < 0 ? 0 : agreed_code;
}

int pd_cli_dist_fail(const pd_error *err, bool collective) {
  if (pd_dist_size() == 1) return pd_cli_fail(err);
  int code = pd_exit_code(err->status);
  if (collective) return pd_dist_rank() == 0 ? pd_cli_fail(err) : code;
  fflush(stderr);
  dprintf(g.real_stderr >= 0 ? g.real_stderr : 2, "[rank %d] paddle-run: %s\n", pd_dist_rank(), err->msg);
  pd_dist_abort(code);
}

int pd_cli_dist_end(int code) {
  if (!g.agreed) code = pd_cli_dist_agree(code);
  pd_dist_finalize();
  if (g.real_stderr >= 0) close(g.real_stderr), g.real_stderr = -1;
  return code;
}

static bool persistable(const pd_net *net, int v) {
  return net->vars[v].kind == PD_VAR_PARAM || net->vars[v].kind == PD_VAR_STATE;
}

pd_status pd_cli_dist_share(pd_runner *r, pd_error *err) {
  for (int v = 0; v < r->net->nvars; v++) {
    const pd_tensor *t = r->t[v];
    if (!persistable(r->net, v) || !pd_tensor_data(t)) continue;
    char what[600];
    snprintf(what, sizeof what, "the broadcast of \"%s\" from rank 0", r->net->vars[v].name);
    pd_status st = pd_dist_bcast(pd_tensor_data(t), (int64_t)pd_tensor_bytes(t), what, err);
    if (st) return st;
  }
  return pd_dist_shared_decide(err);
}

/* FNV-1a, 64 bits, continued over n more bytes */
static uint64_t fnv(uint64_t h, const void *data, size_t n) {
  const unsigned char *p = data;
  for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}
#define FNV_START 0xcbf29ce484222325ull

pd_status pd_cli_dist_same_plan(const int64_t *plan, int n, bool *differ, pd_error *err) {
  bool same = true;
  pd_status st =
      pd_dist_same(fnv(FNV_START, plan, sizeof *plan * (size_t)n), &same, "the ranks' comparison of plans", err);
  *differ = !st && !same;
  if (*differ)
    st = pd_errorf(err, PD_ERR_INPUT,
                   "the ranks were given different runs (data rows, batch size, steps, checkpoint, log or check "
                   "intervals, evaluation or net differ): start every rank with the same flags and files");
  return st;
}

/* The parameters' checksum: FNV-1a's step over 8-byte words in four
 * interleaved lanes (a byte at a time is one long chain of multiplies), then
 * the lanes and the tail bytes through fnv. */
static uint64_t words_hash(uint64_t h, const void *data, size_t n) {
  uint64_t lane[4] = {h, h ^ 1, h ^ 2, h ^ 3}, w;
  const unsigned char *p = data;
  size_t i = 0;
  for (; i + 32 <= n; i += 32)
    for (int l = 0; l < 4; l++) {
      memcpy(&w, p + i + 8 * l, 8);
      lane[l] = (lane[l] ^ w) * 0x100000001b3ull;
    }
  return fnv(fnv(h, lane, sizeof lane), p + i, n - i);
}

/* The checksum of the file bound to data variable v in f (0: unbound):
 * its element type and row shape, then its rows' bytes. */
static uint64_t data_hash(const pd_feed *f, int v, const char **file) {
  for (int i = 0; f && i < f->n; i++) {
    if (f->b[i].var != v) continue;
    const pd_dataset *ds = f->b[i].ds;
    int64_t head[2 + PD_MAX_DIMS] = {pd_dataset_dtype(ds), pd_dataset_row_ndim(ds)};
    memcpy(head + 2, pd_dataset_row_dims(ds), sizeof(int64_t) * (size_t)pd_dataset_row_ndim(ds));
    size_t len;
    const void *bytes = pd_dataset_bytes(ds, &len);
    *file = f->b[i].file;
    return words_hash(fnv(FNV_START, head, sizeof head), bytes, len);
  }
  return 0;
}

pd_status pd_cli_dist_same_data(const pd_net *net, const pd_feed *f, const pd_feed *ef, bool *differ, pd_error *err) {
  *differ = false;
  /* one comparison per data variable of the net (the same on every rank),
   * whatever each rank bound, so that the ranks meet in the same collectives */
  for (int pass = 0; pass < 2; pass++)
    for (int v = 0; v < net->nvars; v++) {
      if (net->vars[v].kind != PD_VAR_DATA) continue;
      const char *file = "no file";
      uint64_t h = data_hash(pass ? ef : f, v, &file);
      bool same = true;
      pd_status st = pd_dist_same(h, &same, "the ranks' comparison of data", err);
      if (st) return st;
      if (same) continue;
      *differ = true;
      return pd_errorf(err, PD_ERR_INPUT,
                       "the ranks were given different %sdata for \"%s\" (%s on rank %d does not hold the same "
                       "bytes on every rank): start every rank with the same data files",
                       pass ? "evaluation " : "", net->vars[v].name, file, pd_dist_rank());
    }
  return PD_OK;
}

pd_status pd_cli_dist_check(pd_runner *r, int64_t step, bool *differ, pd_error *err) {
  uint64_t h = FNV_START; /* over the bytes of every persistable */
  for (int v = 0; v < r->net->nvars; v++) {
    const pd_tensor *t = r->t[v];
    if (persistable(r->net, v) && pd_tensor_data(t)) h = words_hash(h, pd_tensor_data(t), pd_tensor_bytes(t));
  }
  bool same = true;
  pd_status st = pd_dist_same(h, &same, "the ranks' parameter checksum", err);
  *differ = !st && !same;
  if (*differ)
    st = pd_errorf(err, PD_ERR_RUNTIME,
                   "the ranks' parameters differ after step %lld (checksums disagree): the ranks no longer train "
                   "the same model (different flags or data per rank?); stopping",
                   (long long)step);
  return st;
}
