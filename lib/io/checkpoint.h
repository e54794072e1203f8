/* checkpoint.h — training checkpoints and parameter directories. A save
 * directory holds one subdirectory per checkpoint (step-00000100/: one .npy
 * per variable plus manifest.pbtxt with the training state and checksums)
 * and a symlink `latest`; saves are atomic, so a kill at any moment leaves
 * the last good checkpoint intact. Plain directories of NAME.npy files with
 * no manifest (written by hand or by other tools) open too. */
#ifndef PD_CHECKPOINT_H
#define PD_CHECKPOINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "core/tensor.h"

/* One variable to save: its name (any bytes but NUL; the file name escapes
 * what is not [A-Za-z0-9._@-] as %XX) and a CPU tensor with a known shape. */
typedef struct pd_ckpt_var {
  const char *name;
  const pd_tensor *t;
} pd_ckpt_var;

/* Where training stands. Strings may be NULL (not recorded). */
typedef struct pd_ckpt_state {
  const char *net;        /* the network's name */
  int64_t step;           /* global step, >= 0; names the checkpoint */
  int64_t epoch;          /* >= 0 */
  int64_t batch_in_epoch; /* >= 0 */
  int64_t batch_size;     /* rows per step the counts above are in; 0: not recorded */
  const char *optimizer;  /* "sgd", "adam", ... */
  uint64_t seed;
  double lr;
  const uint64_t *rng_state; /* n_rng words */
  size_t n_rng;
  /* a text binding's vocabulary (docs/training.md, "Text data"): the byte
   * of each id, n_vocab of them; NULL, 0: none (ids are bytes) */
  const uint8_t *vocab;
  size_t n_vocab;
  /* a "plateau" schedule's state (has_plateau): the lr in effect, the best
   * evaluation loss (INFINITY: none yet), evaluations since it improved */
  bool has_plateau;
  double plateau_lr, plateau_best;
  int64_t plateau_bad;
} pd_ckpt_state;

/* One variable's file as a checkpoint lists it. */
typedef struct pd_ckpt_file {
  const char *var;  /* variable name */
  const char *file; /* file name inside the checkpoint directory */
  const char *path; /* checkpoint directory + "/" + file */
  pd_dtype dtype;
  int ndim;
  int64_t dims[PD_MAX_DIMS];
  uint64_t bytes; /* size of the whole file */
  bool has_crc32; /* false for plain parameter directories */
  uint32_t crc32; /* zlib crc32 of the whole file */
} pd_ckpt_file;

typedef struct pd_checkpoint pd_checkpoint;

/* Creates dir (and its parents) when missing and checks that files can be
 * created in it, so training can refuse before it starts. */
pd_status pd_checkpoint_check_writable(const char *dir, pd_error *err);

/* One writer per save directory: an exclusive flock on dir/.lock (dir must
 * exist), holding this process's pid. Another holder is PD_ERR_INPUT naming
 * its pid. The lock lasts until pd_checkpoint_unlock (which removes the
 * file) or the process ends (a killed holder leaves the file, unlocked). */
typedef struct pd_ckpt_lock pd_ckpt_lock;
pd_status pd_checkpoint_lock(const char *dir, pd_ckpt_lock **out, pd_error *err);
void pd_checkpoint_unlock(pd_ckpt_lock *lock);

/* Whether dir is a save directory already (it has a `latest` link): `what`
 * (size bytes) receives "dir/latest -> step-N", or "" when it has none. */
pd_status pd_checkpoint_dir_holds(const char *dir, char *what, size_t size, pd_error *err);

/* Saves vars and state as dir/step-NNNNNNNN (8+ digits of state->step),
 * points dir/latest at it, then deletes checkpoints with a lower step beyond
 * the newest `keep` (>= 1, counting this one) and temp directories left by
 * dead processes; checkpoints with a higher step (from a run that was
 * resumed at an earlier point) are left alone. A checkpoint of the same
 * step is replaced. On failure nothing new is left behind and `latest` is
 * unchanged. saved_path (may be NULL) receives the checkpoint directory.
 * One saver per dir at a time (pd_checkpoint_lock). The caller should
 * ignore SIGXFSZ, so that a file size limit comes back as an error instead
 * of killing the process. */
pd_status pd_checkpoint_save(const char *dir, const pd_ckpt_var *vars, int n, const pd_ckpt_state *state, int keep,
                             char *saved_path, size_t saved_size, pd_error *err);

/* The file a variable is kept in, inside a checkpoint or parameter
 * directory: its name with unsafe bytes %-escaped, plus ".npy"
 * ("a/b" -> "a%2Fb.npy"). Caller frees; NULL when out of memory. */
char *pd_checkpoint_file_name(const char *var);

/* Opens a checkpoint directory (has manifest.pbtxt), a save directory
 * (follows `latest`), or a plain directory of *.npy files (no state: step
 * 0). Checks every file: present, recorded size and crc32, npy header agreeing
 * with the manifest. Nothing is loaded yet. */
pd_status pd_checkpoint_open(const char *path, pd_checkpoint **out, pd_error *err);
void pd_checkpoint_close(pd_checkpoint *ck);

/* The checkpoint directory opened (after following `latest`). */
const char *pd_checkpoint_dir(const pd_checkpoint *ck);
/* Whether the checkpoint opened lies directly in save directory dir. */
bool pd_checkpoint_is_in(const pd_checkpoint *ck, const char *dir);
/* false for a plain parameter directory (the state is then all zero). */
bool pd_checkpoint_has_manifest(const pd_checkpoint *ck);
/* The training state; strings and rng_state are owned by ck. */
const pd_ckpt_state *pd_checkpoint_state(const pd_checkpoint *ck);
/* Variable names in manifest order (sorted for a plain directory). */
const char *const *pd_checkpoint_vars(const pd_checkpoint *ck, size_t *n);
/* The file of one variable, or NULL. */
const pd_ckpt_file *pd_checkpoint_find(const pd_checkpoint *ck, const char *var);
/* Loads one variable into out (pd_tensor_init'ed by the caller), checking
 * its checksum again. An unknown name is PD_ERR_INPUT with a suggestion. */
pd_status pd_checkpoint_read(const pd_checkpoint *ck, const char *var, pd_tensor *out, pd_error *err);

#endif
