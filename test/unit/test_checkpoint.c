/* test_checkpoint.c — lib/checkpoint: a save reads back bit for bit (every
 * dtype, odd shapes and names, the training state), `latest` and keep-last-K
 * behave, every lie in a checkpoint is refused with its message, a SIGKILL
 * at any moment of a save leaves a complete checkpoint behind, and a full
 * disk leaves the previous one untouched. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "io/checkpoint.h"
#include "io/npy.h"

/* ---- helpers ------------------------------------------------------------------- */

typedef struct fixture {
  char root[64]; /* a fresh temp directory per test */
  char **paths;  /* what path_of handed out, freed at teardown */
  size_t npaths;
} fixture;

static int setup(void **state) {
  fixture *fx = calloc(1, sizeof *fx);
  const char *tmp = getenv("TMPDIR");
  snprintf(fx->root, sizeof fx->root, "%s/pd-ckpt-XXXXXX", tmp && strlen(tmp) < 40 ? tmp : "/tmp");
  if (!mkdtemp(fx->root)) return -1;
  *state = fx;
  return 0;
}

static int teardown(void **state) {
  fixture *fx = *state;
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", fx->root);
  int rc = system(cmd);
  for (size_t i = 0; i < fx->npaths; i++) free(fx->paths[i]);
  free(fx->paths);
  free(fx);
  return rc == 0 ? 0 : -1;
}

/* root/rel, valid until the test ends. */
static const char *path_of(fixture *fx, const char *rel) {
  char *p = malloc(strlen(fx->root) + strlen(rel) + 2);
  sprintf(p, "%s/%s", fx->root, rel);
  fx->paths = realloc(fx->paths, (fx->npaths + 1) * sizeof *fx->paths);
  fx->paths[fx->npaths++] = p;
  return p;
}

/* A tensor whose element i is base + i (wrapped for uint8). */
static pd_tensor *mk(pd_dtype dt, int ndim, const int64_t *dims, double base) {
  pd_tensor *t = malloc(sizeof *t);
  pd_tensor_init(t, dt);
  assert_int_equal(pd_tensor_set_dims(t, ndim, dims, NULL), PD_OK);
  assert_int_equal(pd_tensor_alloc(t, NULL), PD_OK);
  int64_t n = pd_tensor_numel(t);
  for (int64_t i = 0; i < n; i++)
    pd_tensor_set(t, i, dt == PD_U8 ? (double)(((int64_t)base + i) & 255) : base + (double)i);
  return t;
}

static void fill(pd_tensor *t, double v) {
  for (int64_t i = 0; i < pd_tensor_numel(t); i++) pd_tensor_set(t, i, v);
}

static void free_t(pd_tensor *t) {
  if (!t) return;
  pd_tensor_release(t);
  free(t);
}

static void assert_tensor_equal(const pd_tensor *want, const pd_tensor *got) {
  char a[160], b[160];
  if (want->dtype != got->dtype || !pd_dims_equal(want->ndim, want->dims, got->ndim, got->dims))
    fail_msg("expected %s %s, got %s %s", pd_dtype_name(want->dtype), pd_dims_str(want->ndim, want->dims, a, sizeof a),
             pd_dtype_name(got->dtype), pd_dims_str(got->ndim, got->dims, b, sizeof b));
  size_t n = pd_tensor_bytes(want);
  if (n) assert_memory_equal(pd_tensor_data(want), pd_tensor_data(got), n);
}

/* Asserts st is PD_ERR_INPUT (or `want`) and the message holds every given
 * substring (NULL-terminated list). */
static void expect_error(pd_status st, const pd_error *err, pd_status want, ...) {
  if (st != want) fail_msg("expected status %d, got %d: %s", want, st, st ? err->msg : "(no error)");
  va_list ap;
  va_start(ap, want);
  const char *s;
  while ((s = va_arg(ap, const char *)) != NULL)
    if (!strstr(err->msg, s)) fail_msg("expected \"%s\" in the message, got: %s", s, err->msg);
  va_end(ap);
}

#define EXPECT_OPEN_FAIL(path, ...)                                        \
  do {                                                                     \
    pd_checkpoint *ck_ = (pd_checkpoint *)1;                               \
    pd_error e_ = {0};                                                     \
    pd_status st_ = pd_checkpoint_open(path, &ck_, &e_);                   \
    assert_null(ck_);                                                      \
    expect_error(st_, &e_, PD_ERR_INPUT, __VA_ARGS__, (const char *)NULL); \
  } while (0)

static pd_checkpoint *open_ok(const char *path) {
  pd_checkpoint *ck = NULL;
  pd_error err = {0};
  pd_status st = pd_checkpoint_open(path, &ck, &err);
  if (st) fail_msg("open %s: %s", path, err.msg);
  return ck;
}

static char *read_text(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  char *buf = malloc(1 << 20);
  size_t n = fread(buf, 1, (1 << 20) - 1, f);
  fclose(f);
  buf[n] = '\0';
  if (len) *len = n;
  return buf;
}

static void write_text(const char *path, const char *text, size_t len) {
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(text, 1, len, f), len);
  assert_int_equal(fclose(f), 0);
}

/* Replaces the first `from` in the file with `to`. */
static void edit_file(const char *path, const char *from, const char *to) {
  size_t len;
  char *s = read_text(path, &len);
  char *hit = strstr(s, from);
  if (!hit) fail_msg("\"%s\" not found in %s:\n%s", from, path, s);
  size_t fl = strlen(from), tl = strlen(to);
  char *out = malloc(len - fl + tl + 1);
  size_t pre = (size_t)(hit - s);
  memcpy(out, s, pre);
  memcpy(out + pre, to, tl);
  memcpy(out + pre + tl, hit + fl, len - pre - fl);
  write_text(path, out, len - fl + tl);
  free(out);
  free(s);
}

static void flip_byte(const char *path, long offset_from_end) {
  int fd = open(path, O_RDWR);
  assert_true(fd >= 0);
  off_t end = lseek(fd, 0, SEEK_END);
  unsigned char c;
  assert_int_equal(pread(fd, &c, 1, end - offset_from_end), 1);
  c ^= 0x40;
  assert_int_equal(pwrite(fd, &c, 1, end - offset_from_end), 1);
  close(fd);
}

static int count_entries(const char *dir, const char *prefix) {
  DIR *d = opendir(dir);
  assert_non_null(d);
  int n = 0;
  struct dirent *de;
  while ((de = readdir(d)) != NULL)
    if (!strncmp(de->d_name, prefix, strlen(prefix))) n++;
  closedir(d);
  return n;
}

static bool exists(const char *path) {
  struct stat sb;
  return lstat(path, &sb) == 0;
}

/* Three variables filled with `value`, saved at `step`; epoch = value. */
static pd_status save_filled(const char *dir, int64_t step, double value, int keep, pd_error *err) {
  pd_tensor *w = mk(PD_F32, 2, (int64_t[]){16, 32}, 0), *b = mk(PD_F64, 1, (int64_t[]){100}, 0),
            *c = mk(PD_I64, 1, (int64_t[]){5}, 0);
  fill(w, value), fill(b, value), fill(c, value);
  pd_ckpt_var vars[] = {{"fc1.w", w}, {"fc1.b", b}, {"a/counter", c}};
  uint64_t rng[2] = {(uint64_t)step * 7, 99};
  pd_ckpt_state state = {.net = "mlp",
                         .step = step,
                         .epoch = (int64_t)value,
                         .optimizer = "sgd",
                         .seed = 1,
                         .lr = 0.5,
                         .rng_state = rng,
                         .n_rng = 2};
  pd_status st = pd_checkpoint_save(dir, vars, 3, &state, keep, NULL, 0, err);
  free_t(w), free_t(b), free_t(c);
  return st;
}

/* The checkpoint at path opens and every variable is filled with its
 * epoch (what save_filled writes); returns that value. */
static int64_t check_filled(const char *path) {
  pd_checkpoint *ck = open_ok(path);
  int64_t value = pd_checkpoint_state(ck)->epoch;
  size_t n;
  const char *const *names = pd_checkpoint_vars(ck, &n);
  assert_int_equal(n, 3);
  for (size_t i = 0; i < n; i++) {
    pd_tensor t;
    pd_tensor_init(&t, PD_F32);
    pd_error err = {0};
    pd_status st = pd_checkpoint_read(ck, names[i], &t, &err);
    if (st) fail_msg("%s", err.msg);
    for (int64_t j = 0; j < pd_tensor_numel(&t); j++)
      if (pd_tensor_get(&t, j) != (double)value)
        fail_msg("%s: %s[%lld] = %g, expected %lld (a mix of two saves)", path, names[i], (long long)j,
                 pd_tensor_get(&t, j), (long long)value);
    pd_tensor_release(&t);
  }
  pd_checkpoint_close(ck);
  return value;
}

/* ---- round trip ------------------------------------------------------------------ */

/* Every dtype, scalar to 8-D, an empty tensor, names that need escaping:
 * what comes back equals what went in, and the state fields too. */
static void test_round_trip(void **state) {
  fixture *fx = *state;
  const char *dir = path_of(fx, "ckpt");
  struct {
    const char *name, *file;
    pd_tensor *t;
  } v[] = {
      {"fc1.w", "fc1.w.npy", mk(PD_F32, 2, (int64_t[]){3, 4}, 0.25)},
      {"fc1.b", "fc1.b.npy", mk(PD_F64, 1, (int64_t[]){7}, -3.5)},
      {"x@GRAD", "x@GRAD.npy", mk(PD_I32, 3, (int64_t[]){2, 3, 4}, -12)},
      {"a/b", "a%2Fb.npy", mk(PD_I64, 1, (int64_t[]){3}, 1e15)},
      {".hidden", "%2Ehidden.npy", mk(PD_U8, 2, (int64_t[]){5, 60}, 7)},
      {"..", "%2E..npy", mk(PD_F32, 0, NULL, 42)},
      {"sp ace%", "sp%20ace%25.npy", mk(PD_F64, 8, (int64_t[]){1, 2, 1, 2, 1, 2, 1, 2}, 1)},
      {"empty", "empty.npy", mk(PD_F32, 2, (int64_t[]){0, 5}, 0)},
      {"\xc3\xbcml\xff", "%C3%BCml%FF.npy", mk(PD_I32, 1, (int64_t[]){1}, 5)},
  };
  enum { N = sizeof v / sizeof v[0] };
  pd_ckpt_var vars[N];
  for (int i = 0; i < N; i++) vars[i] = (pd_ckpt_var){v[i].name, v[i].t};
  uint64_t rng[] = {0xdeadbeefcafef00dULL, 0, UINT64_MAX};
  pd_ckpt_state st = {.net = "net \"quoted\"\n",
                      .step = 1234,
                      .epoch = 3,
                      .batch_in_epoch = 17,
                      .batch_size = 256,
                      .optimizer = "adam",
                      .seed = UINT64_MAX,
                      .lr = 0.1,
                      .rng_state = rng,
                      .n_rng = 3};
  char saved[512];
  pd_error err = {0};
  if (pd_checkpoint_save(dir, vars, N, &st, 3, saved, sizeof saved, &err)) fail_msg("%s", err.msg);
  assert_string_equal(saved, path_of(fx, "ckpt/step-00001234"));
  assert_int_equal(count_entries(saved, "."), 2); /* only "." and ".." start with a dot */

  for (int via = 0; via < 3; via++) {
    const char *p = via == 0 ? dir : via == 1 ? saved : path_of(fx, "ckpt/");
    pd_checkpoint *ck = open_ok(p);
    assert_true(pd_checkpoint_has_manifest(ck));
    assert_string_equal(pd_checkpoint_dir(ck), saved);
    const pd_ckpt_state *s = pd_checkpoint_state(ck);
    assert_string_equal(s->net, st.net);
    assert_string_equal(s->optimizer, "adam");
    assert_int_equal(s->step, 1234);
    assert_int_equal(s->epoch, 3);
    assert_int_equal(s->batch_in_epoch, 17);
    assert_int_equal(s->batch_size, 256);
    assert_true(s->seed == UINT64_MAX);
    assert_true(s->lr == 0.1);
    assert_int_equal(s->n_rng, 3);
    assert_memory_equal(s->rng_state, rng, sizeof rng);
    size_t n;
    const char *const *names = pd_checkpoint_vars(ck, &n);
    assert_int_equal(n, N);
    for (int i = 0; i < N; i++) {
      assert_string_equal(names[i], v[i].name); /* manifest order = save order */
      const pd_ckpt_file *f = pd_checkpoint_find(ck, v[i].name);
      assert_non_null(f);
      assert_string_equal(f->file, v[i].file);
      assert_true(f->has_crc32);
      pd_tensor t;
      pd_tensor_init(&t, PD_U8);
      if (pd_checkpoint_read(ck, v[i].name, &t, &err)) fail_msg("%s", err.msg);
      assert_tensor_equal(v[i].t, &t);
      pd_tensor_release(&t);
    }
    assert_null(pd_checkpoint_find(ck, "fc2.w"));
    pd_checkpoint_close(ck);
  }
  for (int i = 0; i < N; i++) free_t(v[i].t);
}

/* What numpy.load makes of the files: dtype, shape and the crc32 of the
 * data bytes must match what was saved. */
static void test_numpy_reads_files(void **state) {
  fixture *fx = *state;
  if (access("/usr/bin/python3", X_OK) != 0 || system("/usr/bin/python3 -c 'import numpy' 2>/dev/null") != 0) skip();
  const char *dir = path_of(fx, "np");
  pd_tensor *a = mk(PD_F32, 2, (int64_t[]){3, 5}, 0.5), *b = mk(PD_I64, 0, NULL, -9),
            *c = mk(PD_U8, 1, (int64_t[]){9}, 250);
  pd_ckpt_var vars[] = {{"fc1.w", a}, {"x@GRAD", b}, {"a/b", c}};
  pd_ckpt_state st = {.step = 1};
  pd_error err = {0};
  char saved[512], cmd[1024];
  if (pd_checkpoint_save(dir, vars, 3, &st, 1, saved, sizeof saved, &err)) fail_msg("%s", err.msg);
  snprintf(cmd, sizeof cmd,
           "cd '%s' && /usr/bin/python3 -c 'import numpy, zlib\n"
           "for f in [\"fc1.w.npy\", \"x@GRAD.npy\", \"a%%2Fb.npy\"]:\n"
           "  a = numpy.load(f)\n"
           "  print(a.dtype, list(a.shape), zlib.crc32(a.tobytes()))'",
           saved);
  FILE *p = popen(cmd, "r");
  assert_non_null(p);
  char line[256];
  for (int i = 0; i < 3; i++) {
    assert_non_null(fgets(line, sizeof line, p));
    char want[256], db[160];
    const pd_tensor *t = vars[i].t;
    snprintf(want, sizeof want, "%s %s %lu\n", pd_dtype_name(t->dtype), pd_dims_str(t->ndim, t->dims, db, sizeof db),
             crc32(0, pd_tensor_data(t), (uInt)pd_tensor_bytes(t)));
    assert_string_equal(line, want);
  }
  assert_int_equal(pclose(p), 0);
  free_t(a), free_t(b), free_t(c);
}

/* ---- latest, keep, replace, stale temp dirs ---------------------------------------- */

static void test_keep_last_k_and_latest(void **state) {
  fixture *fx = *state;
  const char *dir = path_of(fx, "ckpt");
  pd_error err = {0};
  char target[64];
  for (int s = 1; s <= 6; s++) {
    if (save_filled(dir, s * 100, s, 3, &err)) fail_msg("%s", err.msg);
    assert_int_equal(check_filled(dir), s); /* latest follows every save */
    ssize_t n = readlink(path_of(fx, "ckpt/latest"), target, sizeof target - 1);
    assert_true(n > 0);
    target[n] = '\0';
    char want[64];
    snprintf(want, sizeof want, "step-%08d", s * 100);
    assert_string_equal(target, want); /* relative: the directory can move */
    assert_int_equal(count_entries(dir, "step-"), s < 3 ? s : 3);
  }
  assert_false(exists(path_of(fx, "ckpt/step-00000300")));
  assert_true(exists(path_of(fx, "ckpt/step-00000400")));
  assert_true(exists(path_of(fx, "ckpt/step-00000600")));
  assert_int_equal(check_filled(path_of(fx, "ckpt/step-00000500")), 5);

  /* A save at a lower step (a run resumed from an earlier checkpoint)
   * becomes latest; the higher steps are not "older" and stay. */
  if (save_filled(dir, 450, 45, 1, &err)) fail_msg("%s", err.msg);
  assert_int_equal(check_filled(dir), 45);
  assert_false(exists(path_of(fx, "ckpt/step-00000400")));
  assert_true(exists(path_of(fx, "ckpt/step-00000500")));
  assert_true(exists(path_of(fx, "ckpt/step-00000600")));

  /* keep 1 leaves only the new one below it; steps past 8 digits work. */
  if (save_filled(dir, 123456789012LL, 7, 1, &err)) fail_msg("%s", err.msg);
  assert_int_equal(count_entries(dir, "step-"), 1);
  assert_true(exists(path_of(fx, "ckpt/step-123456789012")));
  assert_int_equal(count_entries(dir, "."), 2);
  pd_checkpoint *ck = open_ok(dir);
  assert_int_equal(pd_checkpoint_state(ck)->step, 123456789012LL);
  pd_checkpoint_close(ck);
}

/* Saving a step that exists (an interrupted run saved it before) replaces
 * it; nothing is left over. */
static void test_replace_same_step(void **state) {
  fixture *fx = *state;
  const char *dir = path_of(fx, "ckpt");
  pd_error err = {0};
  if (save_filled(dir, 5, 1, 2, &err) || save_filled(dir, 5, 2, 2, &err)) fail_msg("%s", err.msg);
  assert_int_equal(check_filled(dir), 2);
  if (save_filled(dir, 4, 3, 2, &err) || save_filled(dir, 5, 4, 2, &err)) fail_msg("%s", err.msg);
  assert_int_equal(check_filled(dir), 4);
  assert_int_equal(check_filled(path_of(fx, "ckpt/step-00000004")), 3);
  assert_int_equal(count_entries(dir, "step-"), 2);
  assert_int_equal(count_entries(dir, "."), 2);
}

/* Temp directories of dead processes go; a live process's stays. */
static void test_stale_temp_dirs_removed(void **state) {
  fixture *fx = *state;
  const char *dir = path_of(fx, "ckpt");
  pd_error err = {0};
  pid_t dead = fork();
  if (dead == 0) _exit(0);
  assert_int_equal(waitpid(dead, NULL, 0), dead);
  char name[128];
  assert_int_equal(pd_checkpoint_check_writable(dir, &err), PD_OK);
  snprintf(name, sizeof name, "ckpt/.tmp-step-00000009-%ld", (long)dead);
  assert_int_equal(mkdir(path_of(fx, name), 0777), 0);
  snprintf(name, sizeof name, "ckpt/.tmp-step-00000009-%ld/w.npy", (long)dead);
  write_text(path_of(fx, name), "junk", 4);
  snprintf(name, sizeof name, "ckpt/.tmp-latest-%ld", (long)dead);
  assert_int_equal(symlink("nowhere", path_of(fx, name)), 0);
  snprintf(name, sizeof name, "ckpt/.tmp-step-00000009-%ld", (long)getppid());
  assert_int_equal(mkdir(path_of(fx, name), 0777), 0);
  write_text(path_of(fx, "ckpt/notes.txt"), "mine", 4);
  if (save_filled(dir, 10, 1, 1, &err)) fail_msg("%s", err.msg);
  assert_int_equal(count_entries(dir, ".tmp-"), 1); /* the live one */
  assert_true(exists(path_of(fx, name)));
  assert_true(exists(path_of(fx, "ckpt/notes.txt")));
}

/* ---- plain parameter directories ------------------------------------------------- */

static void test_plain_directory(void **state) {
  fixture *fx = *state;
  const char *dir = path_of(fx, "params");
  assert_int_equal(mkdir(dir, 0777), 0);
  pd_tensor *w = mk(PD_F32, 2, (int64_t[]){4, 2}, 1), *g = mk(PD_F64, 1, (int64_t[]){3}, 2),
            *ab = mk(PD_U8, 0, NULL, 3);
  pd_error err = {0};
  assert_int_equal(pd_npy_write(path_of(fx, "params/fc1.w.npy"), w, &err), PD_OK);
  assert_int_equal(pd_npy_write(path_of(fx, "params/x@GRAD.npy"), g, &err), PD_OK);
  assert_int_equal(pd_npy_write(path_of(fx, "params/a%2Fb.npy"), ab, &err), PD_OK);
  assert_int_equal(pd_npy_write(path_of(fx, "params/50%.npy"), ab, &err), PD_OK); /* not an escape: literal */
  write_text(path_of(fx, "params/notes.txt"), "hi", 2);
  assert_int_equal(pd_npy_write(path_of(fx, "params/.hidden.npy"), ab, &err), PD_OK);
  pd_checkpoint *ck = open_ok(dir);
  assert_false(pd_checkpoint_has_manifest(ck));
  assert_int_equal(pd_checkpoint_state(ck)->step, 0);
  assert_null(pd_checkpoint_state(ck)->optimizer);
  size_t n;
  const char *const *names = pd_checkpoint_vars(ck, &n);
  assert_int_equal(n, 4);
  assert_string_equal(names[0], "50%");
  assert_string_equal(names[1], "a/b");
  assert_string_equal(names[2], "fc1.w");
  assert_string_equal(names[3], "x@GRAD");
  const pd_ckpt_file *f = pd_checkpoint_find(ck, "fc1.w");
  assert_false(f->has_crc32);
  assert_int_equal(f->ndim, 2);
  const pd_tensor *want[] = {ab, ab, w, g};
  for (int i = 0; i < 4; i++) {
    pd_tensor t;
    pd_tensor_init(&t, PD_F32);
    if (pd_checkpoint_read(ck, names[i], &t, &err)) fail_msg("%s", err.msg);
    assert_tensor_equal(want[i], &t);
    pd_tensor_release(&t);
  }
  pd_tensor t;
  pd_tensor_init(&t, PD_F32);
  expect_error(pd_checkpoint_read(ck, "fc1_w", &t, &err), &err, PD_ERR_INPUT, "no variable \"fc1_w\"",
               "did you mean \"fc1.w\"", NULL);
  pd_tensor_release(&t);
  pd_checkpoint_close(ck);

  /* Two files for one name, and a broken file, are refused at open. */
  assert_int_equal(pd_npy_write(path_of(fx, "params/fc1%2Ew.npy"), w, &err), PD_OK);
  EXPECT_OPEN_FAIL(dir, "both hold variable \"fc1.w\"");
  unlink(path_of(fx, "params/fc1%2Ew.npy"));
  write_text(path_of(fx, "params/bad.npy"), "\x93NUMPY\x01\x00", 8);
  EXPECT_OPEN_FAIL(dir, "params/bad.npy", "truncated");
  free_t(w), free_t(g), free_t(ab);
}

/* ---- refusals at open ----------------------------------------------------------------- */

/* A fresh checkpoint at DIR/step-00000001 with w (float32 [2, 3]), b, c. */
static const char *fresh(fixture *fx, const char *name) {
  const char *dir = path_of(fx, name);
  pd_error err = {0};
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  assert_int_equal(system(cmd), 0);
  pd_tensor *w = mk(PD_F32, 2, (int64_t[]){2, 3}, 1), *b = mk(PD_F32, 1, (int64_t[]){3}, 0),
            *c = mk(PD_I64, 1, (int64_t[]){2}, 0);
  pd_ckpt_var vars[] = {{"w", w}, {"b", b}, {"c", c}};
  pd_ckpt_state st = {.step = 1, .optimizer = "sgd"};
  if (pd_checkpoint_save(dir, vars, 3, &st, 1, NULL, 0, &err)) fail_msg("%s", err.msg);
  free_t(w), free_t(b), free_t(c);
  return dir;
}

static void test_refuses_corrupt_files(void **state) {
  fixture *fx = *state;
  const char *dir = fresh(fx, "c");
  const char *w = path_of(fx, "c/step-00000001/w.npy");
  flip_byte(w, 3);
  EXPECT_OPEN_FAIL(dir, "c/step-00000001/w.npy: checksum mismatch (file changed or corrupt): expected 0x", ", got 0x");

  fresh(fx, "c");
  assert_int_equal(truncate(w, 100), 0);
  EXPECT_OPEN_FAIL(dir, "c/step-00000001/w.npy: 100 bytes, but manifest.pbtxt says 152 (file truncated or changed)");

  fresh(fx, "c");
  unlink(w);
  EXPECT_OPEN_FAIL(dir, "c/step-00000001/w.npy: missing (variable \"w\" in manifest.pbtxt)");

  fresh(fx, "c");
  unlink(w);
  assert_int_equal(symlink("b.npy", w), 0);
  EXPECT_OPEN_FAIL(dir, "w.npy: not a regular file");

  fresh(fx, "c");
  const char *m0 = path_of(fx, "c/step-00000001/manifest.pbtxt");
  assert_int_equal(rename(m0, path_of(fx, "c/step-00000001/real.pbtxt")), 0);
  assert_int_equal(symlink("real.pbtxt", m0), 0);
  EXPECT_OPEN_FAIL(dir, "manifest.pbtxt: is a symlink; expected a regular file");

  /* A hand-edited manifest without checksums still gets the header checked. */
  fresh(fx, "c");
  const char *m = path_of(fx, "c/step-00000001/manifest.pbtxt");
  edit_file(m, "crc32:", "# crc32:");
  edit_file(m, "bytes: 152", "");
  write_text(w, "NOTNPY....", 10);
  EXPECT_OPEN_FAIL(dir, "w.npy: not a .npy file");

  /* The file changed after open: read checks the checksum again. */
  fresh(fx, "c");
  pd_checkpoint *ck = open_ok(dir);
  flip_byte(w, 1);
  pd_tensor t;
  pd_tensor_init(&t, PD_F32);
  pd_error err = {0};
  expect_error(pd_checkpoint_read(ck, "w", &t, &err), &err, PD_ERR_INPUT, "w.npy: checksum mismatch", NULL);
  pd_tensor_release(&t);
  pd_checkpoint_close(ck);
}

static void test_refuses_lying_manifest(void **state) {
  fixture *fx = *state;
  const char *dir = path_of(fx, "m");
  const char *m = path_of(fx, "m/step-00000001/manifest.pbtxt");
  static const struct {
    const char *from, *to, *msg;
  } lies[] = {
      {"step: 1", "step: 1 bogus: 2", "manifest.pbtxt:"},
      {"step: 1", "step: 1 bogus: 2", "unknown field \"bogus\""},
      {"step: 1", "step: -1", "step must be >= 0, got -1"},
      {"format_version: 1", "format_version: 2", "checkpoint format 2 is not supported"},
      {"file: \"w.npy\"", "file: \"../w.npy\"", "file name \"../w.npy\" contains '/'"},
      {"file: \"w.npy\"", "file: \"/etc/passwd\"", "file name \"/etc/passwd\" is an absolute path"},
      {"file: \"w.npy\"", "file: \".w.npy\"", "starts with '.'"},
      {"file: \"w.npy\"", "file: \"..\"", "starts with '.'"},
      {"file: \"w.npy\"", "file: \"manifest.pbtxt\"", "does not end in .npy"},
      {"file: \"w.npy\"", "file: \"\"", "file name \"\" is empty"},
      {"file: \"w.npy\"", "file: \"x.npy\"", "x.npy: missing (variable \"w\""},
      {"var: \"b\"", "var: \"w\"", "file #2 lists variable \"w\" again (after file #1)"},
      {"file: \"b.npy\"", "file: \"w.npy\"", "file #2 uses file \"w.npy\" again (after file #1)"},
      {"var: \"w\"", "var: \"\"", "file #1: empty variable name"},
      {"shape: 2\n  shape: 3", "shape: 3\n  shape: 2",
       "w.npy: holds float32 [2, 3], but manifest.pbtxt says float32 [3, 2]"},
      {"shape: 2\n  shape: 3", "shape: 6", "holds float32 [2, 3], but manifest.pbtxt says float32 [6]"},
      {"dtype: FLOAT32", "dtype: FLOAT64", "holds float32 [2, 3], but manifest.pbtxt says float64 [2, 3]"},
      {"shape: 2\n  shape: 3", "shape: -2\n  shape: 3", "dim 0 is -2; dims must be >= 0"},
      {"shape: 2\n  shape: 3", "shape: [4294967296, 4294967296, 4294967296]", "more elements than fit in 64 bits"},
      {"shape: 2\n  shape: 3", "shape: [1, 1, 1, 1, 1, 1, 1, 1, 1]", "9 dims; at most 8"},
      {"bytes: 152", "bytes: 99999999999", "152 bytes, but manifest.pbtxt says 99999999999"},
      {"crc32: ", "crc32: 0 # ", "checksum mismatch"},
      {"var: \"w\"", "var: \"w\" var: \"v\"", "field \"var\" of paddle.CheckpointFile is given twice"},
      {"dtype: FLOAT32", "dtype: 7", "dtype"},
      {"dtype: FLOAT32", "dtype: COMPLEX", "COMPLEX"},
  };
  for (size_t i = 0; i < sizeof lies / sizeof lies[0]; i++) {
    fresh(fx, "m");
    edit_file(m, lies[i].from, lies[i].to);
    pd_checkpoint *ck = (pd_checkpoint *)1;
    pd_error err = {0};
    pd_status st = pd_checkpoint_open(dir, &ck, &err);
    if (st != PD_ERR_INPUT || !strstr(err.msg, lies[i].msg))
      fail_msg("lie #%zu (%s -> %s): expected \"%s\", got status %d: %s", i, lies[i].from, lies[i].to, lies[i].msg, st,
               st ? err.msg : "(opened)");
    assert_null(ck);
  }
  /* Positions point at the offending entry. */
  fresh(fx, "m");
  edit_file(m, "file: \"b.npy\"", "file: \"../b.npy\"");
  pd_checkpoint *ck;
  pd_error err = {0};
  assert_int_equal(pd_checkpoint_open(dir, &ck, &err), PD_ERR_INPUT);
  char *text = read_text(m, NULL);
  int line = 1;
  for (char *p = text; p < strstr(text, "../b.npy"); p++) line += *p == '\n';
  char want[64];
  snprintf(want, sizeof want, "manifest.pbtxt:%d:", line);
  if (!strstr(err.msg, want)) fail_msg("expected \"%s\" in: %s", want, err.msg);
  free(text);
}

static void test_refuses_bad_latest(void **state) {
  fixture *fx = *state;
  const char *dir = fresh(fx, "l");
  const char *latest = path_of(fx, "l/latest");
  static const struct {
    const char *target, *msg;
  } bad[] = {
      {"../l/step-00000001", "points at \"../l/step-00000001\", which is not a checkpoint directory inside"},
      {"/tmp", "points at \"/tmp\", which is not a checkpoint directory inside"},
      {"..", "points at \"..\""},
      {".", "points at \".\""},
      {"step-00000099", "l/latest: points at step-00000099, which does not exist"},
      {"plain", "points at plain, which is not a directory"},
      {"empty", "points at empty, which has no manifest.pbtxt (not a complete checkpoint)"},
  };
  write_text(path_of(fx, "l/plain"), "x", 1);
  assert_int_equal(mkdir(path_of(fx, "l/empty"), 0777), 0);
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    unlink(latest);
    assert_int_equal(symlink(bad[i].target, latest), 0);
    EXPECT_OPEN_FAIL(dir, bad[i].msg);
  }
  unlink(latest);
  write_text(latest, "step-00000001", 13);
  EXPECT_OPEN_FAIL(dir, "l/latest: not a symlink");
  /* ...and a save refuses to touch a directory like that. */
  pd_error err = {0};
  expect_error(save_filled(dir, 2, 2, 1, &err), &err, PD_ERR_INPUT, "latest: exists and is not a symlink", NULL);
  expect_error(pd_checkpoint_check_writable(dir, &err), &err, PD_ERR_INPUT, "not a symlink", NULL);

  /* Nothing there, a file, an empty directory, a directory of checkpoints without latest. */
  EXPECT_OPEN_FAIL(path_of(fx, "nothing"), "nothing: cannot open checkpoint: No such file or directory");
  EXPECT_OPEN_FAIL(path_of(fx, "l/plain"), "l/plain: not a directory");
  EXPECT_OPEN_FAIL(path_of(fx, "l/empty"), "no manifest.pbtxt, no latest symlink and no .npy files");
  unlink(latest);
  EXPECT_OPEN_FAIL(dir, "it holds step-* directories");
}

/* ---- refusals at save, unwritable directories ---------------------------------------------- */

static void test_save_refusals(void **state) {
  fixture *fx = *state;
  const char *dir = path_of(fx, "s");
  pd_tensor *w = mk(PD_F32, 1, (int64_t[]){3}, 0), unshaped;
  pd_tensor_init(&unshaped, PD_F32);
  pd_ckpt_state st = {.step = 1};
  pd_error err = {0};
  char name[400];
  memset(name, '/', sizeof name - 1);
  name[sizeof name - 1] = '\0';
  struct {
    pd_ckpt_var vars[2];
    int n, keep;
    const char *msg;
  } bad[] = {
      {{{"w", w}}, 1, 0, "keep must be >= 1, got 0"},
      {{{"w", w}, {"w", w}}, 2, 1, "variable \"w\" is given twice"},
      {{{"", w}}, 1, 1, "variable #0 has no name"},
      {{{"u", &unshaped}}, 1, 1, "variable \"u\" has no concrete shape"},
      {{{name, w}}, 1, 1, "too long a name for a file"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    expect_error(pd_checkpoint_save(dir, bad[i].vars, bad[i].n, &st, bad[i].keep, NULL, 0, &err), &err, PD_ERR_INPUT,
                 bad[i].msg, NULL);
  st.step = -1;
  expect_error(pd_checkpoint_save(dir, (pd_ckpt_var[]){{"w", w}}, 1, &st, 1, NULL, 0, &err), &err, PD_ERR_INPUT,
               "must be >= 0", NULL);
  assert_false(exists(dir)); /* refused before touching the disk */
  free_t(w);
}

static void test_unwritable_directory(void **state) {
  fixture *fx = *state;
  pd_error err = {0};
  assert_int_equal(pd_checkpoint_check_writable(path_of(fx, "x/y/z/"), &err), PD_OK);
  assert_true(exists(path_of(fx, "x/y/z")));
  assert_int_equal(count_entries(path_of(fx, "x/y/z"), ".tmp-"), 0);
  write_text(path_of(fx, "somefile"), "x", 1);
  expect_error(pd_checkpoint_check_writable(path_of(fx, "somefile/sub"), &err), &err, PD_ERR_INPUT, "somefile/sub",
               "Not a directory", NULL);
  expect_error(save_filled(path_of(fx, "somefile/sub"), 1, 1, 1, &err), &err, PD_ERR_INPUT, "somefile/sub",
               "Not a directory", NULL);
  expect_error(pd_checkpoint_check_writable(path_of(fx, "somefile"), &err), &err, PD_ERR_INPUT, "somefile", NULL);
}

/* ---- crash safety ------------------------------------------------------------------ */

static uint64_t rng_next(uint64_t *s) {
  *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
  return *s;
}

/* The child saves forever: save k has epoch k and every element k; its step
 * is k, or k / 3 when `repeat` (so most saves replace an existing step). */
static void saver_child(const char *dir, int64_t first, bool repeat) {
  for (int64_t k = first; k < first + 1000000; k++) {
    pd_error err;
    if (save_filled(dir, repeat ? k / 3 : k, (double)k, 3, &err)) {
      fprintf(stderr, "child save failed: %s\n", err.msg);
      _exit(3);
    }
  }
  _exit(0);
}

/* Kills a saving child at random moments (seeded); after each kill `latest`
 * and every step-* directory must open cleanly and hold one whole save. */
static void crash_trials(fixture *fx, bool repeat, uint64_t seed) {
  const char *dir = path_of(fx, "crash");
  pd_error err = {0};
  if (save_filled(dir, 0, 0, 3, &err)) fail_msg("%s", err.msg);
  /* How long a save takes here, to spread the kills over a few of them. */
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (int i = 1; i <= 5; i++)
    if (save_filled(dir, repeat ? i / 3 : i, i, 3, &err)) fail_msg("%s", err.msg);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  long per_save_us = ((t1.tv_sec - t0.tv_sec) * 1000000L + (t1.tv_nsec - t0.tv_nsec) / 1000) / 5 + 1;
  int64_t last = 5, progressed = 0;
  const int trials = 30;
  for (int trial = 0; trial < trials; trial++) {
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) saver_child(dir, last + 1, repeat);
    useconds_t wait = (useconds_t)(rng_next(&seed) % (uint64_t)(per_save_us * 4));
    usleep(wait);
    kill(pid, SIGKILL);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (!WIFSIGNALED(status))
      fail_msg("trial %d: the saver exited with %d before the kill", trial, WEXITSTATUS(status));
    int64_t now = check_filled(dir);
    if (now < last)
      fail_msg("trial %d: latest went back from save %lld to %lld", trial, (long long)last, (long long)now);
    pd_checkpoint *ck = open_ok(dir);
    assert_int_equal(pd_checkpoint_state(ck)->step, repeat ? now / 3 : now);
    pd_checkpoint_close(ck);
    DIR *d = opendir(dir);
    struct dirent *de;
    while ((de = readdir(d)) != NULL)
      if (!strncmp(de->d_name, "step-", 5)) {
        char p[600];
        snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
        check_filled(p);
      }
    closedir(d);
    progressed += now > last;
    last = now;
  }
  print_message("crash %s: %d kills (seed-driven, up to %ld us), latest moved on in %lld of them\n",
                repeat ? "replace" : "monotonic", trials, per_save_us * 4, (long long)progressed);
  assert_true(progressed > 0);
  /* A clean save afterwards tidies every temp directory the kills left. */
  if (save_filled(dir, repeat ? (last + 1) / 3 : last + 1, (double)last + 1, 3, &err)) fail_msg("%s", err.msg);
  assert_int_equal(count_entries(dir, ".tmp-"), 0);
  assert_int_equal(check_filled(dir), last + 1);
  if (!repeat) assert_int_equal(count_entries(dir, "step-"), 3); /* kills may have left extras until now */
}

static void test_crash_monotonic(void **state) { crash_trials(*state, false, 0x9e3779b97f4a7c15ULL); }
static void test_crash_replacing(void **state) { crash_trials(*state, true, 0x2545f4914f6cdd1dULL); }

/* A file size limit (what a full disk looks like to a writer): the save
 * fails naming the file and the OS error, leaves nothing behind, and the
 * previous checkpoint is untouched. */
static void test_disk_full(void **state) {
  fixture *fx = *state;
  const char *dir = path_of(fx, "full");
  pd_error err = {0};
  if (save_filled(dir, 1, 1, 2, &err)) fail_msg("%s", err.msg);
  int fds[2];
  assert_int_equal(pipe(fds), 0);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    close(fds[0]);
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit rl = {64 << 10, 64 << 10};
    setrlimit(RLIMIT_FSIZE, &rl);
    pd_tensor *big = mk(PD_F32, 2, (int64_t[]){512, 512}, 0), *small = mk(PD_F32, 1, (int64_t[]){4}, 0);
    pd_ckpt_var vars[] = {{"small", small}, {"big", big}};
    pd_ckpt_state st = {.step = 2};
    pd_status s = pd_checkpoint_save(dir, vars, 2, &st, 1, NULL, 0, &err);
    if (write(fds[1], err.msg, strlen(err.msg)) < 0) _exit(4);
    _exit(s == PD_ERR_RUNTIME ? 0 : 1);
  }
  close(fds[1]);
  char msg[PD_ERROR_MAX] = {0};
  size_t n = 0;
  ssize_t r;
  while ((r = read(fds[0], msg + n, sizeof msg - 1 - n)) > 0) n += (size_t)r;
  close(fds[0]);
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    fail_msg("save under a size limit: status %d, message: %s", status, msg);
  char want[512];
  snprintf(want, sizeof want, "%s/.tmp-step-00000002-%ld/big.npy: cannot write: File too large", dir, (long)pid);
  if (!strstr(msg, want)) fail_msg("expected \"%s\" in: %s", want, msg);
  if (!strstr(msg, "checkpoint ") || !strstr(msg, "step-00000002 not saved")) fail_msg("got: %s", msg);
  assert_int_equal(count_entries(dir, ".tmp-"), 0);
  assert_false(exists(path_of(fx, "full/step-00000002")));
  assert_int_equal(check_filled(dir), 1);
  /* The next save, with room, works. */
  if (save_filled(dir, 2, 2, 2, &err)) fail_msg("%s", err.msg);
  assert_int_equal(check_filled(dir), 2);
}

/* One writer per save directory: a second lock (another open file, as
 * another process would hold) is refused naming the holder's pid; the lock
 * file is hidden from loading and pruning, removed at unlock, and a save
 * directory is told apart by its `latest`. */
static void test_save_lock(void **state) {
  fixture *fx = *state;
  const char *dir = path_of(fx, "ckpt");
  assert_int_equal(mkdir(dir, 0777), 0);
  pd_error err = {0};
  char what[256], want[512];
  assert_int_equal(pd_checkpoint_dir_holds(dir, what, sizeof what, &err), PD_OK);
  assert_string_equal(what, "");
  pd_ckpt_lock *a = NULL, *b = NULL;
  if (pd_checkpoint_lock(dir, &a, &err)) fail_msg("%s", err.msg);
  assert_int_equal(pd_checkpoint_lock(path_of(fx, "ckpt/"), &b, &err), PD_ERR_INPUT);
  assert_null(b);
  snprintf(want, sizeof want, "--save %s: another process (pid %ld) is saving checkpoints there", dir, (long)getpid());
  if (!strstr(err.msg, want)) fail_msg("message: %s", err.msg);
  pd_tensor *t = mk(PD_F32, 1, (int64_t[]){3}, 1);
  pd_ckpt_var v = {"w", t};
  pd_ckpt_state st = {.step = 1};
  for (int64_t s = 1; s <= 3; s++) {
    st.step = s;
    if (pd_checkpoint_save(dir, &v, 1, &st, 1, NULL, 0, &err)) fail_msg("%s", err.msg);
  }
  assert_int_equal(count_entries(dir, "step-"), 1); /* pruned past the lock file */
  assert_int_equal(pd_checkpoint_dir_holds(dir, what, sizeof what, &err), PD_OK);
  snprintf(want, sizeof want, "%s/latest -> step-00000003", dir);
  assert_string_equal(what, want);
  pd_checkpoint *ck = open_ok(dir);
  assert_true(pd_checkpoint_is_in(ck, dir));
  assert_false(pd_checkpoint_is_in(ck, fx->root));
  pd_checkpoint_close(ck);
  pd_checkpoint_unlock(a);
  struct stat sb;
  assert_int_not_equal(lstat(path_of(fx, "ckpt/.lock"), &sb), 0);
  if (pd_checkpoint_lock(dir, &b, &err)) fail_msg("%s", err.msg);
  pd_checkpoint_unlock(b);
  pd_tensor_release(t);
  free(t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_round_trip, setup, teardown),
      cmocka_unit_test_setup_teardown(test_numpy_reads_files, setup, teardown),
      cmocka_unit_test_setup_teardown(test_keep_last_k_and_latest, setup, teardown),
      cmocka_unit_test_setup_teardown(test_replace_same_step, setup, teardown),
      cmocka_unit_test_setup_teardown(test_stale_temp_dirs_removed, setup, teardown),
      cmocka_unit_test_setup_teardown(test_plain_directory, setup, teardown),
      cmocka_unit_test_setup_teardown(test_refuses_corrupt_files, setup, teardown),
      cmocka_unit_test_setup_teardown(test_refuses_lying_manifest, setup, teardown),
      cmocka_unit_test_setup_teardown(test_refuses_bad_latest, setup, teardown),
      cmocka_unit_test_setup_teardown(test_save_refusals, setup, teardown),
      cmocka_unit_test_setup_teardown(test_unwritable_directory, setup, teardown),
      cmocka_unit_test_setup_teardown(test_crash_monotonic, setup, teardown),
      cmocka_unit_test_setup_teardown(test_crash_replacing, setup, teardown),
      cmocka_unit_test_setup_teardown(test_disk_full, setup, teardown),
      cmocka_unit_test_setup_teardown(test_save_lock, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
