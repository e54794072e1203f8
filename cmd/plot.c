/* plot.c — `paddle-run plot`: training curves from `train --log` files as
 * one SVG, written directly (no plotting library): a panel per quantity
 * (the loss, each metric), a colour per run, the evaluations dashed with
 * markers, and a legend naming each run by the settings that differ. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "base/fileutil.h"
#include "base/util.h"

static int run(int argc, char **argv);

const pd_command pd_cmd_plot = {"plot", "draw loss and metric curves of train --log files as an SVG",
                                "usage: paddle-run plot LOG.jsonl... -o CURVES.svg [options]\n"
                                "\n"
                                "Draws the JSON-lines logs that `train --log` writes: one panel per quantity\n"
                                "(the loss, then each metric), one colour per log, the training averages of\n"
                                "the step records as lines and the evaluations (epoch and eval records) as\n"
                                "dashed lines with markers. The legend names each log by the settings of\n"
                                "its run record that differ between the logs (lr, optimizer, batch_size,\n"
                                "seed, net, --set, ...). A value that is not finite (null in the log) is\n"
                                "left out and marked under its panel, with a note saying how many. The same\n"
                                "logs give the same bytes.\n"
                                "\n"
                                "  -o, --output FILE  the SVG to write (replaced atomically)\n"
                                "  --x step|epoch     the x axis: steps (default) or epochs (fractional for\n"
                                "                     the steps inside an epoch)\n"
                                "  --log-y            a logarithmic y axis; values <= 0 cannot be drawn on it\n"
                                "                     and are left out and marked like non-finite ones\n"
                                "  --only NAME,...    only these quantities, in this order (a loss or metric\n"
                                "                     name as the log has it, or lr)\n"
                                "\n"
                                "A last line cut short (a run still writing) is left out with a note.\n"
                                "Exit codes: 0 written; 1 a failure writing; 2 bad usage or input (a missing\n"
                                "file, a line that is not a log record, a log with no step records).\n",
                                run};

/* ---- reading the logs ---- */

enum { J_NUM, J_STR, J_NULL, J_BOOL, J_OTHER };

typedef struct member {
  char *key;
  int kind;
  double num;
  char *text; /* a string decoded; anything else as it is written */
} member;

typedef struct record {
  member *m;
  int n, cap;
} record;

typedef struct parser {
  const char *s, *end, *p;
  const char *why;
} parser;

static void ws(parser *P) {
  while (P->p < P->end && (*P->p == ' ' || *P->p == '\t' || *P->p == '\r')) P->p++;
}

static bool fail(parser *P, const char *why) {
  if (!P->why) P->why = why;
  return false;
}

static int hexval(char c) {
  return c >= '0' && c <= '9'   ? c - '0'
         : c >= 'a' && c <= 'f' ? c - 'a' + 10
         : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                : -1;
}

/* A JSON string at P->p, decoded into *out (UTF-8) when out is not NULL. */
static bool parse_string(parser *P, char **out) {
  if (P->p >= P->end || *P->p != '"') return fail(P, "expected a string");
  P->p++;
  size_t cap = 16, n = 0;
  char *b = out ? malloc(cap) : NULL;
  if (out && !b) return fail(P, "out of memory");
  while (P->p < P->end && *P->p != '"') {
    unsigned char c = (unsigned char)*P->p++;
    char enc[4];
    int k = 1;
    enc[0] = (char)c;
    if (c < 0x20) {
      free(b);
      return fail(P, "a control character inside a string");
    }
    if (c == '\\') {
      if (P->p >= P->end) break;
      char e = *P->p++;
      const char *simple = strchr("\"\\/bfnrt", e);
      if (e && simple) {
        enc[0] = "\"\\/\b\f\n\r\t"[simple - "\"\\/bfnrt"];
      } else if (e == 'u' && P->end - P->p >= 4) {
        unsigned u = 0;
        for (int i = 0; i < 4; i++) {
          int h = hexval(P->p[i]);
          if (h < 0) {
            free(b);
            return fail(P, "a bad \\u escape");
          }
          u = u * 16 + (unsigned)h;
        }
        P->p += 4;
        if (u >= 0xd800 && u < 0xe000) u = 0xfffd; /* surrogates: not worth pairing for a label */
        if (u < 0x80) {
          enc[0] = (char)u;
        } else if (u < 0x800) {
          enc[0] = (char)(0xc0 | u >> 6), enc[1] = (char)(0x80 | (u & 63)), k = 2;
        } else {
          enc[0] = (char)(0xe0 | u >> 12), enc[1] = (char)(0x80 | ((u >> 6) & 63)), enc[2] = (char)(0x80 | (u & 63));
          k = 3;
        }
      } else {
        free(b);
        return fail(P, "a bad escape in a string");
      }
    }
    if (out) {
      if (n + (size_t)k + 1 > cap) {
        char *g = realloc(b, cap *= 2);
        if (!g) {
          free(b);
          return fail(P, "out of memory");
        }
        b = g;
      }
      memcpy(b + n, enc, (size_t)k);
      n += (size_t)k;
    }
  }
  if (P->p >= P->end) {
    free(b);
    return fail(P, "a string that does not end");
  }
  P->p++;
  if (out) b[n] = '\0', *out = b;
  return true;
}

/* Any JSON value (checked, not kept), for nested objects and arrays. */
static bool skip_value(parser *P, int depth) {
  if (depth > 64) return fail(P, "nested more than 64 deep");
  ws(P);
  if (P->p >= P->end) return fail(P, "expected a value");
  char c = *P->p;
  if (c == '"') return parse_string(P, NULL);
  if (c == '{' || c == '[') {
    char close = c == '{' ? '}' : ']';
    P->p++;
    ws(P);
    if (P->p < P->end && *P->p == close) return P->p++, true;
    for (;;) {
      if (c == '{') {
        ws(P);
        if (!parse_string(P, NULL)) return false;
        ws(P);
        if (P->p >= P->end || *P->p != ':') return fail(P, "expected ':'");
        P->p++;
      }
      if (!skip_value(P, depth + 1)) return false;
      ws(P);
      if (P->p < P->end && *P->p == ',') {
        P->p++;
        continue;
      }
      if (P->p < P->end && *P->p == close) return P->p++, true;
      return fail(P, c == '{' ? "expected ',' or '}'" : "expected ',' or ']'");
    }
  }
  static const char *const words[] = {"null", "true", "false"};
  for (int i = 0; i < 3; i++) {
    size_t l = strlen(words[i]);
    if ((size_t)(P->end - P->p) >= l && memcmp(P->p, words[i], l) == 0) return P->p += l, true;
  }
  const char *q = P->p;
  if (q < P->end && *q == '-') q++;
  if (q >= P->end || *q < '0' || *q > '9') return fail(P, "expected a value");
  while (q < P->end && strchr("0123456789.eE+-", *q)) q++;
  P->p = q;
  return true;
}

static void record_free(record *r) {
  for (int i = 0; i < r->n; i++) free(r->m[i].key), free(r->m[i].text);
  free(r->m);
  memset(r, 0, sizeof *r);
}

/* One line: a JSON object, its members kept flat. */
static bool parse_record(parser *P, record *r) {
  ws(P);
  if (P->p >= P->end || *P->p != '{') return fail(P, "not a JSON object");
  P->p++;
  ws(P);
  bool empty = P->p < P->end && *P->p == '}';
  if (empty) P->p++;
  while (!empty) {
    ws(P);
    if (r->n == r->cap) {
      int nc = r->cap ? r->cap * 2 : 16;
      member *g = realloc(r->m, (size_t)nc * sizeof *g);
      if (!g) return fail(P, "out of memory");
      r->m = g, r->cap = nc;
    }
    member *m = &r->m[r->n];
    memset(m, 0, sizeof *m);
    if (!parse_string(P, &m->key)) return false;
    r->n++;
    ws(P);
    if (P->p >= P->end || *P->p != ':') return fail(P, "expected ':'");
    P->p++;
    ws(P);
    const char *v = P->p;
    if (P->p < P->end && *P->p == '"') {
      m->kind = J_STR;
      if (!parse_string(P, &m->text)) return false;
    } else {
      if (!skip_value(P, 0)) return false;
      size_t len = (size_t)(P->p - v);
      if (!(m->text = malloc(len + 1))) return fail(P, "out of memory");
      memcpy(m->text, v, len), m->text[len] = '\0';
      char c = *v;
      m->kind = c == 'n' ? J_NULL : c == 't' || c == 'f' ? J_BOOL : c == '{' || c == '[' ? J_OTHER : J_NUM;
      if (m->kind == J_NUM) {
        char *e;
        m->num = strtod(m->text, &e);
        if (*e) return fail(P, "a malformed number");
      }
    }
    ws(P);
    if (P->p < P->end && *P->p == ',') {
      P->p++;
      continue;
    }
    if (P->p < P->end && *P->p == '}') {
      P->p++;
      break;
    }
    return fail(P, "expected ',' or '}'");
  }
  ws(P);
  if (P->p != P->end) return fail(P, "more after the object");
  return true;
}

static const member *get(const record *r, const char *key) {
  for (int i = 0; i < r->n; i++)
    if (strcmp(r->m[i].key, key) == 0) return &r->m[i];
  return NULL;
}

/* ---- what is drawn ---- */

typedef struct point {
  int q;    /* the quantity */
  bool ev;  /* an evaluation, not a training average */
  bool bad; /* null in the log: not finite */
  double x, y;
} point;

typedef struct plog {
  const char *path;
  record head; /* the first run record's settings (empty when there is none) */
  point *pts;
  int n, cap;
  char *label;
  bool cut; /* its last line was cut short */
} plog;

typedef struct plot {
  plog *logs;
  int nlogs;
  char **names; /* quantities, in the order they first appear */
  int nnames;
  bool epoch_x, log_y;
} plot;

/* Keys of step records that are not a loss or metric. */
static bool not_a_quantity(const char *k) {
  static const char *const skip[] = {"type",
                                     "epoch",
                                     "step",
                                     "ranks",
                                     "comm_seconds",
                                     "shared_steps",
                                     "elapsed",
                                     "gpu_mem_bytes",
                                     "gpu_mem_peak_bytes",
                                     "rows",
                                     "lr",
                                     "examples_per_sec",
                                     "epoch_seconds"};
  for (size_t i = 0; i < sizeof skip / sizeof *skip; i++)
    if (strcmp(k, skip[i]) == 0) return true;
  return false;
}

static int name_index(plot *pl, const char *name, pd_error *err) {
  for (int i = 0; i < pl->nnames; i++)
    if (strcmp(pl->names[i], name) == 0) return i;
  char **g = realloc(pl->names, (size_t)(pl->nnames + 1) * sizeof *g);
  if (!g) return pd_errorf(err, PD_ERR_RUNTIME, "out of memory"), -1;
  pl->names = g;
  if (!(g[pl->nnames] = strdup(name))) return pd_errorf(err, PD_ERR_RUNTIME, "out of memory"), -1;
  return pl->nnames++;
}

static pd_status add_point(plot *pl, plog *lg, const char *name, bool ev, double x, const member *m, pd_error *err) {
  if (m->kind != J_NUM && m->kind != J_NULL) return PD_OK; /* not a value */
  int q = name_index(pl, name, err);
  if (q < 0) return err->status;
  if (lg->n == lg->cap) {
    int nc = lg->cap ? lg->cap * 2 : 256;
    point *g = realloc(lg->pts, (size_t)nc * sizeof *g);
    if (!g) return pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
    lg->pts = g, lg->cap = nc;
  }
  bool bad = m->kind == J_NULL || !isfinite(m->num);
  lg->pts[lg->n++] = (point){q, ev, bad, x, bad ? 0 : m->num};
  return PD_OK;
}

static double num_of(const record *r, const char *key, double dflt) {
  const member *m = get(r, key);
  return m && m->kind == J_NUM ? m->num : dflt;
}

/* The points of one record. With --x epoch, a step is at step / steps per
 * epoch (spe), an epoch record at its epoch. */
static pd_status take_record(plot *pl, plog *lg, const record *r, const char *type, double spe, pd_error *err) {
  bool step = strcmp(type, "step") == 0, epoch = strcmp(type, "epoch") == 0, eval = strcmp(type, "eval") == 0;
  if (!step && !epoch && !eval) return PD_OK;
  double s = num_of(r, "step", NAN);
  if (!isfinite(s)) return PD_OK;
  double x = !pl->epoch_x ? s : epoch ? num_of(r, "epoch", s / spe) : s / spe;
  pd_status st = PD_OK;
  for (int i = 0; i < r->n && !st; i++) {
    const char *k = r->m[i].key;
    if (step && (strcmp(k, "lr") == 0 || !not_a_quantity(k)))
      st = add_point(pl, lg, k, false, x, &r->m[i], err);
    else if (!step && strncmp(k, "eval_", 5) == 0 && k[5])
      st = add_point(pl, lg, k + 5, true, x, &r->m[i], err);
  }
  return st;
}

/* Steps per epoch for --x epoch: from the first epoch record, else from the
 * run's rows and batch size. */
static double steps_per_epoch(const record *recs, int n) {
  const record *head = NULL;
  for (int i = 0; i < n; i++) {
    const member *t = get(&recs[i], "type");
    if (!t || t->kind != J_STR) continue;
    if (!head && strcmp(t->text, "run") == 0) head = &recs[i];
    double e = num_of(&recs[i], "epoch", 0), s = num_of(&recs[i], "step", 0);
    if (strcmp(t->text, "epoch") == 0 && e >= 1 && s >= 1) return s / e;
  }
  double rows = head ? num_of(head, "rows", 0) : 0, bs = head ? num_of(head, "batch_size", 0) : 0;
  return rows >= 1 && bs >= 1 ? ceil(rows / bs) : 1;
}

static pd_status read_log(plot *pl, plog *lg, pd_error *err) {
  pd_file_image img;
  pd_status st = pd_file_image_open_raw(lg->path, true, &img, err);
  if (st) return st;
  const char *s = (const char *)img.data, *end = s + img.size;
  record *recs = NULL;
  int n = 0, nsteps = 0;
  long line = 0;
  if (img.size == 0) st = pd_errorf(err, PD_ERR_INPUT, "%s: empty: not a log of `train --log`", lg->path);
  for (const char *p = s; p < end && !st;) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    const char *le = nl ? nl : end;
    line++;
    parser P = {p, le, p, NULL};
    record r = {0};
    bool blank = true;
    for (const char *c = p; c < le && blank; c++) blank = *c == ' ' || *c == '\t' || *c == '\r';
    if (!blank) {
      bool ok = parse_record(&P, &r);
      const member *t = ok ? get(&r, "type") : NULL;
      if (ok && (!t || t->kind != J_STR)) ok = false, P.why = "a record without a \"type\"";
      if (!ok && !nl && line > 1) { /* the last line of a log still being written */
        lg->cut = true;
        record_free(&r);
        break;
      }
      if (!ok) {
        record_free(&r);
        st = pd_errorf(err, PD_ERR_INPUT, "%s:%ld:%ld: %s%s", lg->path, line, (long)(P.p - p) + 1,
                       P.why ? P.why : "not a JSON object",
                       line == 1 ? " (is this a log written by `train --log`?)" : "");
        break;
      }
      record *g = realloc(recs, (size_t)(n + 1) * sizeof *g);
      if (!g) {
        record_free(&r);
        st = pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
        break;
      }
      recs = g;
      recs[n++] = r;
      if (strcmp(t->text, "step") == 0) nsteps++;
    }
    p = nl ? nl + 1 : end;
  }
  if (!st && !nsteps)
    st = pd_errorf(err, PD_ERR_INPUT,
                   "%s: no \"step\" records to plot (%ld lines; a run logs a step every --log-every steps)", lg->path,
                   line);
  double spe = st ? 1 : steps_per_epoch(recs, n);
  for (int i = 0; i < n && !st; i++) {
    const char *type = get(&recs[i], "type")->text;
    if (strcmp(type, "run") == 0 && !lg->head.n) {
      lg->head = recs[i];
      memset(&recs[i], 0, sizeof recs[i]);
      continue;
    }
    st = take_record(pl, lg, &recs[i], type, spe, err);
  }
  for (int i = 0; i < n; i++) record_free(&recs[i]);
  free(recs);
  pd_file_image_close(&img);
  return st;
}

/* ---- the legend: the settings that differ ---- */

static const char *const settings[] = {"net",        "net_file", "set",        "data",   "optimizer", "lr",
                                       "batch_size", "epochs",   "iterations", "seed",   "shuffle",   "eval_every",
                                       "device",     "ranks",    "threads",    "params", "resume"};

static pd_status make_labels(plot *pl, pd_error *err) {
  size_t ns = sizeof settings / sizeof *settings;
  bool differ[sizeof settings / sizeof *settings] = {false};
  int ndiffer = 0;
  for (size_t k = 0; k < ns; k++) {
    const member *a = get(&pl->logs[0].head, settings[k]);
    for (int i = 1; i < pl->nlogs && !differ[k]; i++) {
      const member *b = get(&pl->logs[i].head, settings[k]);
      differ[k] = (a == NULL) != (b == NULL) || (a && strcmp(a->text, b->text) != 0);
    }
    ndiffer += differ[k];
  }
  if (!ndiffer) /* one run, or runs alike: what it was */
    for (size_t k = 0; k < ns; k++)
      differ[k] = strcmp(settings[k], "net") == 0 || strcmp(settings[k], "optimizer") == 0 ||
                  strcmp(settings[k], "lr") == 0 || strcmp(settings[k], "batch_size") == 0;
  for (int i = 0; i < pl->nlogs; i++) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
    const char *sep = "";
    for (size_t k = 0; k < ns; k++) {
      const member *m = get(&pl->logs[i].head, settings[k]);
      if (!differ[k]) continue;
      fprintf(f, "%s%s=%s", sep, settings[k], m ? m->text : "-");
      sep = ", ";
    }
    if (fclose(f) != 0 || !buf) {
      free(buf);
      return pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
    }
    pl->logs[i].label = buf;
  }
  return PD_OK;
}

/* ---- SVG ---- */

/* Text for XML: escaped, control characters and bytes that are not UTF-8
 * replaced, so any log gives a well-formed file. */
static void xml_text(FILE *f, const char *s) {
  const unsigned char *p = (const unsigned char *)s;
  while (*p) {
    unsigned c = *p;
    int k = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
    bool ok = k > 0 && !(k == 2 && c < 0xc2) && !(k == 4 && c > 0xf4);
    for (int i = 1; i < k && ok; i++) ok = (p[i] & 0xc0) == 0x80;
    if (ok && k == 3) ok = !(c == 0xe0 && p[1] < 0xa0) && !(c == 0xed && p[1] >= 0xa0);
    if (ok && k == 4) ok = !(c == 0xf0 && p[1] < 0x90) && !(c == 0xf4 && p[1] >= 0x90);
    if (!ok) {
      fputs("\xef\xbf\xbd", f);
      p++;
      continue;
    }
    if (c == '&')
      fputs("&amp;", f);
    else if (c == '<')
      fputs("&lt;", f);
    else if (c == '>')
      fputs("&gt;", f);
    else if (c == '"')
      fputs("&quot;", f);
    else if (c < 0x20)
      fputc('?', f);
    else
      fwrite(p, 1, (size_t)k, f);
    p += k;
  }
}

static const char *const palette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                      "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
#define NPALETTE ((int)(sizeof palette / sizeof *palette))

enum { WIDTH = 760, LEFT = 78, RIGHT = 24, PANEL_H = 300, PLOT_TOP = 34, PLOT_H = 200, LEGEND_ROW = 20 };

/* A tick value as a person reads it: round, never "-0" or 0.30000000000000004. */
static void tick_label(char *buf, size_t size, double v, double step) {
  if (fabs(v) < step * 1e-9) v = 0;
  snprintf(buf, size, "%.6g", v);
}

/* Round steps of 1, 2 or 5 times a power of ten, about `want` of them. */
static double nice_step(double span, int want) {
  double raw = span / want, mag = pow(10, floor(log10(raw))), r = raw / mag;
  return (r <= 1 ? 1 : r <= 2 ? 2 : r <= 5 ? 5 : 10) * mag;
}

typedef struct axis {
  double lo, hi, step; /* log: lo and hi are decades */
  bool log;
} axis;

static axis make_axis(double lo, double hi, bool log_scale) {
  axis a = {0};
  a.log = log_scale;
  if (log_scale) {
    a.lo = floor(log10(lo)), a.hi = ceil(log10(hi));
    if (a.hi <= a.lo) a.hi = a.lo + 1;
    a.step = ceil((a.hi - a.lo) / 8);
    return a;
  }
  if (hi <= lo) {
    double d = lo == 0 ? 1 : fabs(lo) * 0.1;
    lo -= d, hi += d;
  }
  a.step = nice_step(hi - lo, 5);
  a.lo = floor(lo / a.step) * a.step, a.hi = ceil(hi / a.step) * a.step;
  return a;
}

static double axis_frac(const axis *a, double v) {
  double t = a->log ? log10(v) : v;
  return (t - a->lo) / (a->hi - a->lo);
}

static bool drawable(const plot *pl, const point *p) { return !p->bad && (!pl->log_y || p->y > 0); }

static void draw_panel(FILE *f, const plot *pl, int q, double top) {
  const double x0 = LEFT, x1 = WIDTH - RIGHT, y0 = top + PLOT_TOP, y1 = y0 + PLOT_H;
  double xmin = INFINITY, xmax = -INFINITY, ymin = INFINITY, ymax = -INFINITY;
  int nbad = 0, nneg = 0;
  for (int i = 0; i < pl->nlogs; i++)
    for (int j = 0; j < pl->logs[i].n; j++) {
      const point *p = &pl->logs[i].pts[j];
      if (p->q != q) continue;
      xmin = fmin(xmin, p->x), xmax = fmax(xmax, p->x);
      if (drawable(pl, p))
        ymin = fmin(ymin, p->y), ymax = fmax(ymax, p->y);
      else
        p->bad ? nbad++ : nneg++;
    }
  bool any = ymin <= ymax;
  if (!any) ymin = pl->log_y ? 1 : 0, ymax = pl->log_y ? 10 : 1;
  axis ax = make_axis(xmin, xmax, false), ay = make_axis(ymin, ymax, pl->log_y);
  if (!pl->epoch_x && xmin >= 0 && ax.lo < 0) ax.lo = 0;
  fprintf(f, "<g class=\"panel\" data-quantity=\"");
  xml_text(f, pl->names[q]);
  fprintf(f, "\">\n<text class=\"title\" x=\"%d\" y=\"%.2f\" font-weight=\"bold\">", LEFT, top + 20);
  xml_text(f, pl->names[q]);
  fputs("</text>\n", f);
  fprintf(f, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"#ffffff\" stroke=\"#444444\"/>\n", x0,
          y0, x1 - x0, y1 - y0);
  char lb[64];
  /* x ticks */
  for (double k = ceil(ax.lo / ax.step - 1e-9); k * ax.step <= ax.hi + ax.step * 1e-9; k++) {
    double v = k * ax.step, X = x0 + (x1 - x0) * axis_frac(&ax, v);
    tick_label(lb, sizeof lb, v, ax.step);
    fprintf(f,
            "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" stroke=\"#e4e4e4\"/>"
            "<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"middle\">%s</text>\n",
            X, y0, X, y1, X, y1 + 16, lb);
  }
  fprintf(f, "<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"middle\" fill=\"#444444\">%s</text>\n", (x0 + x1) / 2, y1 + 34,
          pl->epoch_x ? "epoch" : "step");
  /* y ticks: round numbers, or on a log axis the powers of ten (with 2 and 5 between when few) */
  for (double k = ay.lo; k <= ay.hi + 1e-9; k += ay.log ? 1 : ay.step) {
    for (int sub = 0; sub < (ay.log ? 3 : 1); sub++) {
      double mult = sub == 0 ? 1 : sub == 1 ? 2 : 5;
      if (sub && (ay.hi - ay.lo > 2 || k >= ay.hi)) break;
      if (ay.log && sub == 0 && fmod(k - ay.lo, ay.step) != 0) continue;
      double v = ay.log ? mult * pow(10, k) : k, Y = y1 - (y1 - y0) * axis_frac(&ay, v);
      tick_label(lb, sizeof lb, v, ay.log ? v : ay.step);
      fprintf(f,
              "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" stroke=\"#e4e4e4\"/>"
              "<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"end\">%s</text>\n",
              x0, Y, x1, Y, x0 - 6, Y + 4, lb);
    }
  }
  if (ay.log) fprintf(f, "<text x=\"%.2f\" y=\"%.2f\" fill=\"#444444\">log scale</text>\n", x1 - 70, top + 20);
  /* the curves: training solid, evaluation dashed with markers */
  for (int i = 0; i < pl->nlogs; i++) {
    const plog *lg = &pl->logs[i];
    const char *col = palette[i % NPALETTE];
    for (int ev = 0; ev < 2; ev++) {
      int n = 0;
      for (int j = 0; j < lg->n; j++) n += lg->pts[j].q == q && lg->pts[j].ev == ev && drawable(pl, &lg->pts[j]);
      if (!n) continue;
      fprintf(f, "<polyline class=\"%s\" data-run=\"%d\" fill=\"none\" stroke=\"%s\" stroke-width=\"%s\"%s points=\"",
              ev ? "eval" : "train", i + 1, col, ev ? "1.5" : "1.8", ev ? " stroke-dasharray=\"5,3\"" : "");
      const char *sep = "";
      for (int j = 0; j < lg->n; j++) {
        const point *p = &lg->pts[j];
        if (p->q != q || p->ev != ev || !drawable(pl, p)) continue;
        fprintf(f, "%s%.2f,%.2f", sep, x0 + (x1 - x0) * axis_frac(&ax, p->x), y1 - (y1 - y0) * axis_frac(&ay, p->y));
        sep = " ";
      }
      fputs("\"/>\n", f);
      for (int j = 0; j < lg->n; j++) {
        const point *p = &lg->pts[j];
        if (p->q != q || p->ev != ev || !drawable(pl, p) || (!ev && n > 1)) continue;
        fprintf(f, "<circle cx=\"%.2f\" cy=\"%.2f\" r=\"3\" fill=\"%s\"/>\n", x0 + (x1 - x0) * axis_frac(&ax, p->x),
                y1 - (y1 - y0) * axis_frac(&ay, p->y), col);
      }
    }
    /* what was left out: a mark under the axis at its x, in the run's colour */
    for (int j = 0; j < lg->n; j++) {
      const point *p = &lg->pts[j];
      if (p->q != q || drawable(pl, p)) continue;
      double X = x0 + (x1 - x0) * axis_frac(&ax, p->x);
      fprintf(f, "<path class=\"left-out\" d=\"M%.2f,%.2f l-4,8 h8 z\" fill=\"%s\"/>\n", X, y1 + 1, col);
    }
  }
  if (nbad || nneg || !any) {
    fprintf(f, "<text class=\"note\" x=\"%.2f\" y=\"%.2f\" fill=\"#b00000\">", x0 + 8, y0 + 16);
    if (!any && !nbad && !nneg) fputs("no values", f);
    if (nbad)
      fprintf(f, "%d value%s not finite (null in the log): left out, marked under the axis", nbad,
              nbad == 1 ? "" : "s");
    if (nneg)
      fprintf(f, "%s%d value%s &lt;= 0 left out (log scale), marked under the axis", nbad ? "; " : "", nneg,
              nneg == 1 ? "" : "s");
    fputs("</text>\n", f);
  }
  fputs("</g>\n", f);
}

static pd_status render(const plot *pl, const int *panels, int npanels, char **out, size_t *len, pd_error *err) {
  FILE *f = open_memstream(out, len);
  if (!f) return pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
  int legend_h = 14 + LEGEND_ROW * pl->nlogs;
  int height = legend_h + PANEL_H * npanels;
  fprintf(f,
          "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
          "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
          "font-family=\"sans-serif\" font-size=\"12\">\n"
          "<rect width=\"100%%\" height=\"100%%\" fill=\"#ffffff\"/>\n",
          WIDTH, height, WIDTH, height);
  for (int i = 0; i < pl->nlogs; i++) {
    const plog *lg = &pl->logs[i];
    double y = 10 + LEGEND_ROW * i;
    const char *col = palette[i % NPALETTE];
    fprintf(f, "<g class=\"legend\" data-run=\"%d\">", i + 1);
    fprintf(f, "<line x1=\"%d\" y1=\"%.2f\" x2=\"%d\" y2=\"%.2f\" stroke=\"%s\" stroke-width=\"3\"/>", LEFT, y + 6,
            LEFT + 28, y + 6, col);
    fprintf(f, "<text x=\"%d\" y=\"%.2f\">", LEFT + 36, y + 10);
    xml_text(f, lg->label);
    fputs(" <tspan fill=\"#666666\">(", f);
    xml_text(f, lg->path);
    fprintf(f, "%s)</tspan></text></g>\n", lg->cut ? ", last line cut short" : "");
  }
  for (int k = 0; k < npanels; k++) draw_panel(f, pl, panels[k], legend_h + PANEL_H * k);
  fputs("</svg>\n", f);
  if (fclose(f) != 0) return pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
  return PD_OK;
}

/* ---- the command ---- */

static int run(int argc, char **argv) {
  enum { OUT, OUT_SHORT, XAXIS, LOGY, ONLY, NOPT };
  pd_opt opts[NOPT] = {{.name = "--output", .has_value = true},
                       {.name = "-o", .has_value = true},
                       {.name = "--x", .has_value = true},
                       {.name = "--log-y"},
                       {.name = "--only", .has_value = true}};
  int maxpos = argc > 1 ? argc - 1 : 1, code = 0;
  char **pos = calloc((size_t)maxpos, sizeof *pos);
  if (!pos) return pd_cli_usage_error("plot", "out of memory");
  int npos = pd_cli_parse(&pd_cmd_plot, argc, argv, opts, NOPT, pos, maxpos, &code);
  const char *out = opts[OUT].value ? opts[OUT].value : opts[OUT_SHORT].value;
  if (npos < 0) {
  } else if (npos == 0) {
    code = pd_cli_usage_error("plot", "expected one or more LOG.jsonl files; see `paddle-run plot --help`");
  } else if (!out) {
    code = pd_cli_usage_error("plot", "give the SVG to write with -o CURVES.svg");
  } else if (opts[OUT].value && opts[OUT_SHORT].value) {
    code = pd_cli_usage_error("plot", "-o and --output are the same option; give one");
  } else if (opts[XAXIS].value && strcmp(opts[XAXIS].value, "step") != 0 && strcmp(opts[XAXIS].value, "epoch") != 0) {
    code = pd_cli_usage_error("plot", "--x: expected step or epoch, got \"%s\"", opts[XAXIS].value);
  } else if (opts[ONLY].value && !*opts[ONLY].value) {
    code = pd_cli_usage_error("plot", "--only: expected NAME,... (a loss or metric of the logs)");
  }
  if (npos <= 0 || code) {
    free(pos);
    pd_cli_free(opts, NOPT);
    return code;
  }
  plot pl = {0};
  pl.epoch_x = opts[XAXIS].value && strcmp(opts[XAXIS].value, "epoch") == 0;
  pl.log_y = opts[LOGY].value != NULL;
  pd_error err = {0};
  pd_status st = PD_OK;
  int *panels = NULL, npanels = 0;
  char *svg = NULL;
  size_t len = 0;
  if (!(pl.logs = calloc((size_t)npos, sizeof *pl.logs))) st = pd_errorf(&err, PD_ERR_RUNTIME, "out of memory");
  for (int i = 0; i < npos && !st; i++) {
    pl.logs[i].path = pos[i];
    pl.nlogs++;
    st = read_log(&pl, &pl.logs[i], &err);
    if (!st && pl.logs[i].cut)
      fprintf(stderr, "paddle-run plot: %s: the last line is cut short (a run still writing?): left out\n", pos[i]);
  }
  if (!st && !(panels = calloc((size_t)pl.nnames + 1, sizeof *panels)))
    st = pd_errorf(&err, PD_ERR_RUNTIME, "out of memory");
  if (!st && opts[ONLY].value) {
    const char *s = opts[ONLY].value;
    while (!st) {
      size_t l = strcspn(s, ",");
      int q = -1;
      for (int k = 0; k < pl.nnames; k++)
        if (strlen(pl.names[k]) == l && strncmp(pl.names[k], s, l) == 0) q = k;
      if (q < 0) {
        char *names = NULL;
        size_t nl = 0;
        FILE *m = open_memstream(&names, &nl);
        for (int k = 0; m && k < pl.nnames; k++) fprintf(m, "%s%s", k ? ", " : "", pl.names[k]);
        if (m) fclose(m);
        st = pd_errorf(&err, PD_ERR_INPUT, "--only: the logs have no quantity \"%.*s\"; they have: %s", (int)l, s,
                       names ? names : "");
        free(names);
        break;
      }
      bool seen = false;
      for (int k = 0; k < npanels; k++) seen |= panels[k] == q;
      if (!seen) {
        if (npanels == pl.nnames) break;
        panels[npanels++] = q;
      }
      if (!s[l]) break;
      s += l + 1;
    }
  } else if (!st) {
    for (int k = 0; k < pl.nnames; k++)
      if (strcmp(pl.names[k], "lr") != 0) panels[npanels++] = k;
  }
  if (!st && !npanels) st = pd_errorf(&err, PD_ERR_INPUT, "%s: no loss or metric values to plot", pos[0]);
  if (!st) st = pd_check_creatable(out, &err);
  if (!st) st = make_labels(&pl, &err);
  if (!st) st = render(&pl, panels, npanels, &svg, &len, &err);
  if (!st) st = pd_write_file_atomic(out, svg, len, &err);
  if (!st)
    printf("plotted %d log%s, %d panel%s, to %s\n", pl.nlogs, pl.nlogs == 1 ? "" : "s", npanels,
           npanels == 1 ? "" : "s", out);
  for (int i = 0; i < pl.nlogs; i++) {
    record_free(&pl.logs[i].head);
    free(pl.logs[i].pts);
    free(pl.logs[i].label);
  }
  for (int k = 0; k < pl.nnames; k++) free(pl.names[k]);
  free(pl.names), free(pl.logs), free(panels), free(svg), free(pos);
  pd_cli_free(opts, NOPT);
  return st ? pd_cli_fail(&err) : 0;
}
