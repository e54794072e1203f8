/* textformat.c — the protobuf text format over protobuf-c descriptors: a
 * tokenizer and recursive-descent parser that build messages
 * protobuf_c_message_free_unpacked() can free, and the canonical printer.
 * The grammar and every accept/reject verdict follow protoc 3.21's
 * TextFormat::Parser (io::Tokenizer underneath); test/scripts/conformance.py
 * measures that against `protoc --encode`. Where protobuf-c cannot hold
 * what protoc accepts (a NUL byte inside a `string`), we reject with a
 * message saying so rather than truncate silently. */
#include "text/textformat.h"

#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* protoc has no nesting limit; we need one so deep input cannot overflow the
 * stack here, in protobuf-c's packer or in its free. */
#define MAX_DEPTH PD_PB_MAX_DEPTH

/* ---- small helpers ----------------------------------------------------------- */

static int is_letter(int c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static int is_digit(int c) { return c >= '0' && c <= '9'; }
static int is_octal(int c) { return c >= '0' && c <= '7'; }
static int is_hex(int c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
static int hex_value(int c) { return is_digit(c) ? c - '0' : (c | 0x20) - 'a' + 10; }

#define AT(msg, off) ((char *)(msg) + (off))
#define CAT(msg, off) ((const char *)(msg) + (off))

static size_t value_size(ProtobufCType t) {
  switch (t) {
  case PROTOBUF_C_TYPE_INT32:
  case PROTOBUF_C_TYPE_SINT32:
  case PROTOBUF_C_TYPE_SFIXED32:
  case PROTOBUF_C_TYPE_UINT32:
  case PROTOBUF_C_TYPE_FIXED32:
    return 4;
  case PROTOBUF_C_TYPE_INT64:
  case PROTOBUF_C_TYPE_SINT64:
  case PROTOBUF_C_TYPE_SFIXED64:
  case PROTOBUF_C_TYPE_UINT64:
  case PROTOBUF_C_TYPE_FIXED64:
    return 8;
  case PROTOBUF_C_TYPE_FLOAT:
    return sizeof(float);
  case PROTOBUF_C_TYPE_DOUBLE:
    return sizeof(double);
  case PROTOBUF_C_TYPE_BOOL:
    return sizeof(protobuf_c_boolean);
  case PROTOBUF_C_TYPE_ENUM:
    return sizeof(int);
  case PROTOBUF_C_TYPE_STRING:
    return sizeof(char *);
  case PROTOBUF_C_TYPE_BYTES:
    return sizeof(ProtobufCBinaryData);
  case PROTOBUF_C_TYPE_MESSAGE:
    return sizeof(void *);
  }
  return 0;
}

static const char *type_name(const ProtobufCFieldDescriptor *f) {
  switch (f->type) {
  case PROTOBUF_C_TYPE_INT32:
    return "int32";
  case PROTOBUF_C_TYPE_SINT32:
    return "sint32";
  case PROTOBUF_C_TYPE_SFIXED32:
    return "sfixed32";
  case PROTOBUF_C_TYPE_INT64:
    return "int64";
  case PROTOBUF_C_TYPE_SINT64:
    return "sint64";
  case PROTOBUF_C_TYPE_SFIXED64:
    return "sfixed64";
  case PROTOBUF_C_TYPE_UINT32:
    return "uint32";
  case PROTOBUF_C_TYPE_FIXED32:
    return "fixed32";
  case PROTOBUF_C_TYPE_UINT64:
    return "uint64";
  case PROTOBUF_C_TYPE_FIXED64:
    return "fixed64";
  case PROTOBUF_C_TYPE_FLOAT:
    return "float";
  case PROTOBUF_C_TYPE_DOUBLE:
    return "double";
  case PROTOBUF_C_TYPE_BOOL:
    return "bool";
  case PROTOBUF_C_TYPE_STRING:
    return "string";
  case PROTOBUF_C_TYPE_BYTES:
    return "bytes";
  case PROTOBUF_C_TYPE_ENUM:
    return ((const ProtobufCEnumDescriptor *)f->descriptor)->name;
  case PROTOBUF_C_TYPE_MESSAGE:
    return ((const ProtobufCMessageDescriptor *)f->descriptor)->name;
  }
  return "?";
}

/* Optional proto2 scalars and bytes carry a has_ flag; strings and messages
 * use the pointer; oneof members use the case word. */
static int has_flag(const ProtobufCFieldDescriptor *f) {
  return f->label == PROTOBUF_C_LABEL_OPTIONAL && !(f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) &&
         f->type != PROTOBUF_C_TYPE_STRING && f->type != PROTOBUF_C_TYPE_MESSAGE;
}

/* proto3 fields without presence count as set when non-zero (protoc's
 * HasField), which decides whether giving them twice is an error. */
static int nonzero_value(const ProtobufCMessage *m, const ProtobufCFieldDescriptor *f) {
  const char *p = CAT(m, f->offset);
  switch (f->type) {
  case PROTOBUF_C_TYPE_STRING: {
    const char *s = *(char *const *)p;
    return s && s[0];
  }
  case PROTOBUF_C_TYPE_BYTES:
    return ((const ProtobufCBinaryData *)p)->len != 0;
  case PROTOBUF_C_TYPE_MESSAGE:
    return *(void *const *)p != NULL;
  default: {
    size_t n = value_size(f->type);
    for (size_t i = 0; i < n; i++)
      if (p[i]) return 1;
    return 0;
  }
  }
}

/* Binary search over a NUL-terminated-name table for a (ptr, len) word. */
static int cmp_name(const char *name, const char *w, size_t len) {
  int c = strncmp(name, w, len);
  if (c) return c;
  return name[len] != '\0';
}

static const ProtobufCFieldDescriptor *find_field(const ProtobufCMessageDescriptor *d, const char *w, size_t len) {
  size_t lo = 0, hi = d->n_fields;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    const ProtobufCFieldDescriptor *f = &d->fields[d->fields_sorted_by_name[mid]];
    int c = cmp_name(f->name, w, len);
    if (c == 0) return f;
    if (c < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return NULL;
}

static const ProtobufCEnumValue *find_enum_name(const ProtobufCEnumDescriptor *e, const char *w, size_t len) {
  size_t lo = 0, hi = e->n_value_names;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    const ProtobufCEnumValueIndex *v = &e->values_by_name[mid];
    int c = cmp_name(v->name, w, len);
    if (c == 0) return &e->values[v->index];
    if (c < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return NULL;
}

/* By number. protobuf-c's own look-up overflows for values near INT_MAX;
 * protoc-c emits `values` sorted by number, so search that. */
static const ProtobufCEnumValue *find_enum_number(const ProtobufCEnumDescriptor *e, int v) {
  size_t lo = 0, hi = e->n_values;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (e->values[mid].value == v) return &e->values[mid];
    if (e->values[mid].value < v)
      lo = mid + 1;
    else
      hi = mid;
  }
  return NULL;
}

/* A map field is a repeated XxxEntry message nested in its parent with
 * exactly `key = 1` and `value = 2` (what protoc generates for map<K, V>). */
static int is_map_entry(const ProtobufCMessageDescriptor *parent, const ProtobufCFieldDescriptor *f) {
  if (f->label != PROTOBUF_C_LABEL_REPEATED || f->type != PROTOBUF_C_TYPE_MESSAGE) return 0;
  const ProtobufCMessageDescriptor *e = f->descriptor;
  if (e->n_fields != 2 || e->fields[0].id != 1 || e->fields[1].id != 2) return 0;
  if (strcmp(e->fields[0].name, "key") || strcmp(e->fields[1].name, "value")) return 0;
  size_t sl = strlen(e->short_name), pl = strlen(parent->name);
  if (sl < 5 || strcmp(e->short_name + sl - 5, "Entry")) return 0;
  return strncmp(e->name, parent->name, pl) == 0 && e->name[pl] == '.' && strcmp(e->name + pl + 1, e->short_name) == 0;
}

/* ---- source map ------------------------------------------------------------------ */

void pd_srcmap_free(pd_srcmap *map) {
  if (!map) return;
  free(map->pos);
  free(map->slots);
  map->pos = NULL;
  map->slots = NULL;
  map->n = map->cap = map->nslots = map->indexed = 0;
}

/* Look-ups happen for every op and variable while a net is built, so they
 * go through a hash of (msg, field, index) rather than a scan. */
static size_t srcmap_hash(const void *msg, const ProtobufCFieldDescriptor *field, size_t index) {
  uint64_t h = (uint64_t)(uintptr_t)msg * 0x9e3779b97f4a7c15ull;
  h ^= ((uint64_t)(uintptr_t)field + 0x632be59bd9b4e019ull) * 0xbf58476d1ce4e5b9ull;
  h ^= (uint64_t)(field ? index : 0) * 0x94d049bb133111ebull;
  return (size_t)(h ^ (h >> 29));
}

static bool srcmap_same(const pd_srcpos *p, const void *msg, const ProtobufCFieldDescriptor *field, size_t index) {
  return p->msg == msg && p->field == field && (field == NULL || p->index == index);
}

/* Indexes the entries; the first entry of a key wins, as in a scan. On
 * failure to allocate, look-ups fall back to scanning. */
static void srcmap_index(pd_srcmap *map) {
  size_t nslots = 16;
  while (nslots < map->n * 2) nslots *= 2;
  size_t *slots = calloc(nslots, sizeof *slots);
  free(map->slots);
  map->slots = slots;
  map->nslots = slots ? nslots : 0;
  map->indexed = 0;
  if (!slots) return;
  for (size_t i = 0; i < map->n; i++) {
    const pd_srcpos *p = &map->pos[i];
    size_t k = srcmap_hash(p->msg, p->field, p->index) & (nslots - 1);
    while (slots[k] && !srcmap_same(&map->pos[slots[k] - 1], p->msg, p->field, p->index)) k = (k + 1) & (nslots - 1);
    if (!slots[k]) slots[k] = i + 1;
  }
  map->indexed = map->n;
}

int pd_srcmap_find(const pd_srcmap *map, const void *msg, const ProtobufCFieldDescriptor *field, size_t index,
                   int *line, int *col) {
  if (!map) return 0;
  if (map->nslots && map->indexed == map->n) {
    size_t k = srcmap_hash(msg, field, index) & (map->nslots - 1);
    for (; map->slots[k]; k = (k + 1) & (map->nslots - 1)) {
      const pd_srcpos *p = &map->pos[map->slots[k] - 1];
      if (srcmap_same(p, msg, field, index)) {
        if (line) *line = p->line;
        if (col) *col = p->col;
        return 1;
      }
    }
    return 0;
  }
  for (size_t i = 0; i < map->n; i++) {
    const pd_srcpos *p = &map->pos[i];
    if (p->msg == msg && p->field == field && (field == NULL || p->index == index)) {
      if (line) *line = p->line;
      if (col) *col = p->col;
      return 1;
    }
  }
  return 0;
}

/* ---- tokenizer ------------------------------------------------------------------- */

typedef enum tok_type { TOK_END, TOK_IDENT, TOK_INT, TOK_FLOAT, TOK_STRING, TOK_SYMBOL } tok_type;

typedef struct token {
  tok_type type;
  const char *s; /* into the source */
  size_t len;
  int line, col;
} token;

typedef struct path_elem {
  const ProtobufCFieldDescriptor *field;
  size_t index; /* SIZE_MAX: singular */
} path_elem;

typedef struct parser {
  const char *src, *p, *end, *line_start;
  int line;
  token tok, prev;
  const char *file;
  pd_error *err;
  pd_srcmap *map;
  uint64_t *seen; /* per-message "field given" bits, one frame per depth */
  size_t seen_len, seen_cap;
  char *scratch; /* NUL-terminated copies of number tokens for strtod */
  size_t scratch_cap;
  int depth;
  path_elem path[MAX_DEPTH + 1];
} parser;

static int fail_at(parser *P, int line, int col, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int fail_at(parser *P, int line, int col, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  pd_error_at(P->err, PD_ERR_INPUT, P->file, P->src, (size_t)(P->end - P->src), line, col, "%s", msg);
  return -1;
}

static int fail_oom(parser *P) {
  pd_errorf(P->err, PD_ERR_RUNTIME, "%s: out of memory while parsing", P->file ? P->file : "<input>");
  return -1;
}

static int col_of(const parser *P, const char *q) { return (int)(q - P->line_start) + 1; }

/* Renders a token for "got ..." in messages. */
static const char *tok_text(const token *t, char *buf, size_t size) {
  if (t->type == TOK_END) return "end of input";
  size_t n = t->len;
  int cut = 0;
  if (n > 40) n = 40, cut = 1;
  snprintf(buf, size, "%s%.*s%s%s", t->type == TOK_STRING ? "" : "\"", (int)n, t->s, cut ? "..." : "",
           t->type == TOK_STRING ? "" : "\"");
  return buf;
}

static int is_sym(const token *t, char c) { return t->type == TOK_SYMBOL && t->s[0] == c; }

/* A string literal, checked the way io::Tokenizer::ConsumeString checks it;
 * decoding happens later in decode_string. */
static int lex_string(parser *P, const char *p) {
  const char *q = p + 1;
  char quote = *p;
  for (;;) {
    if (q >= P->end) return fail_at(P, P->line, col_of(P, p), "string literal is never closed (missing %c)", quote);
    char c = *q;
    if (c == quote) return (int)(q + 1 - p);
    if (c == '\n')
      return fail_at(P, P->line, col_of(P, q),
                     "newline inside a string literal (close it with %c on this line; write \\n "
                     "for a newline)",
                     quote);
    if (c == '\0') return fail_at(P, P->line, col_of(P, q), "NUL byte inside a string literal");
    if (c != '\\') {
      q++;
      continue;
    }
    const char *esc = q++;
    if (q >= P->end) continue; /* reported as unclosed */
    c = *q;
    if (c && strchr("abfnrtv\\?'\"", c)) {
      q++;
    } else if (is_octal(c)) {
      q++; /* up to two more octal digits are plain characters to the lexer */
    } else if (c == 'x') {
      q++;
      if (q >= P->end || !is_hex(*q))
        return fail_at(P, P->line, col_of(P, esc), "\"\\x\" must be followed by hex digits");
      q++;
    } else if (c == 'u') {
      q++;
      for (int i = 0; i < 4; i++, q++)
        if (q >= P->end || !is_hex(*q))
          return fail_at(P, P->line, col_of(P, esc), "\"\\u\" must be followed by four hex digits");
    } else if (c == 'U') {
      q++;
      int ok = 1;
      for (int i = 0; i < 8 && ok; i++, q++) {
        int d = q < P->end ? *q : 0;
        ok = i < 2 ? d == '0' : i == 2 ? (d == '0' || d == '1') : is_hex(d);
      }
      if (!ok)
        return fail_at(P, P->line, col_of(P, esc), "\"\\U\" must be followed by eight hex digits up to 0010ffff");
    } else {
      char shown[8];
      if (c > 32 && c < 127)
        snprintf(shown, sizeof shown, "%c", c);
      else
        snprintf(shown, sizeof shown, "\\%03o", (unsigned char)c);
      return fail_at(P, P->line, col_of(P, esc),
                     "invalid escape \"\\%s\" in string literal (valid: \\n \\t \\r \\a \\b \\f "
                     "\\v \\\\ \\' \\\" \\? \\NNN \\xHH \\uHHHH \\UHHHHHHHH)",
                     shown);
    }
  }
}

/* A number, with io::Tokenizer::ConsumeNumber's rules and errors. */
static int lex_number(parser *P, const char *s, tok_type *type) {
  const char *p = s, *end = P->end;
  int is_float = 0, hex_or_octal = 0;
  if (*p == '0' && p + 1 < end && (p[1] == 'x' || p[1] == 'X')) {
    p += 2;
    hex_or_octal = 1;
    if (p >= end || !is_hex(*p)) return fail_at(P, P->line, col_of(P, s), "\"0x\" must be followed by hex digits");
    while (p < end && is_hex(*p)) p++;
  } else if (*p == '0' && p + 1 < end && is_digit(p[1])) {
    p++;
    hex_or_octal = 1;
    while (p < end && is_octal(*p)) p++;
    if (p < end && is_digit(*p))
      return fail_at(P, P->line, col_of(P, s), "a number starting with 0 is octal and cannot contain 8 or 9");
  } else {
    if (*p == '.') {
      is_float = 1;
      p++;
    }
    while (p < end && is_digit(*p)) p++;
    if (!is_float && p < end && *p == '.') {
      is_float = 1;
      p++;
      while (p < end && is_digit(*p)) p++;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
      is_float = 1;
      p++;
      if (p < end && (*p == '-' || *p == '+')) p++;
      if (p >= end || !is_digit(*p))
        return fail_at(P, P->line, col_of(P, s), "\"e\" in number \"%.*s\" must be followed by an exponent",
                       (int)(p - s), s);
      while (p < end && is_digit(*p)) p++;
    }
    if (p < end && (*p == 'f' || *p == 'F')) {
      is_float = 1;
      p++;
    }
  }
  if (p < end && is_letter(*p)) {
    const char *w = p;
    while (w < end && (is_letter(*w) || is_digit(*w))) w++;
    return fail_at(P, P->line, col_of(P, s), "need space between number \"%.*s\" and \"%.*s\"", (int)(p - s), s,
                   (int)(w - p), p);
  }
  if (p < end && *p == '.')
    return fail_at(P, P->line, col_of(P, p),
                   hex_or_octal ? "hex and octal numbers must be integers"
                                : "unexpected \".\": the number already has a decimal point or exponent");
  *type = is_float ? TOK_FLOAT : TOK_INT;
  return (int)(p - s);
}

/* Moves to the next token: skips whitespace and # comments, checks the
 * token's spelling, and leaves it in P->tok. */
static int lex_next(parser *P) {
  const char *p = P->p, *end = P->end;
  P->prev = P->tok;
  for (;;) {
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\v' || *p == '\f')) p++;
    if (p >= end) break;
    if (*p == '\n') {
      p++;
      P->line++;
      P->line_start = p;
    } else if (*p == '#') {
      const char *nl = memchr(p, '\n', (size_t)(end - p));
      const char *nul = memchr(p, '\0', (size_t)((nl ? nl : end) - p));
      p = nul ? nul : nl ? nl : end;
      if (nul) break;
    } else {
      break;
    }
  }
  token *t = &P->tok;
  t->s = p;
  t->line = P->line;
  t->col = col_of(P, p);
  t->len = 0;
  if (p >= end) {
    t->type = TOK_END;
    P->p = p;
    return 0;
  }
  unsigned char c = (unsigned char)*p;
  int n = 1;
  if (is_letter(c)) {
    const char *q = p + 1;
    while (q < end && (is_letter(*q) || is_digit(*q))) q++;
    t->type = TOK_IDENT;
    n = (int)(q - p);
  } else if (is_digit(c) || (c == '.' && p + 1 < end && is_digit(p[1]))) {
    if (c == '.' && P->prev.type == TOK_IDENT && P->prev.s + P->prev.len == p)
      return fail_at(P, t->line, t->col, "need space between identifier \"%.*s\" and \".\"", (int)P->prev.len,
                     P->prev.s);
    n = lex_number(P, p, &t->type);
  } else if (c == '"' || c == '\'') {
    t->type = TOK_STRING;
    n = lex_string(P, p);
  } else if (c < 32) {
    return fail_at(P, t->line, t->col, "control character 0x%02x outside a string", c);
  } else if (c >= 0x80) {
    return fail_at(P, t->line, t->col, "non-ASCII byte 0x%02x outside a string (names and numbers are ASCII)", c);
  } else {
    t->type = TOK_SYMBOL;
  }
  if (n < 0) return -1;
  t->len = (size_t)n;
  P->p = p + n;
  return 0;
}

/* ---- values ------------------------------------------------------------------------ */

typedef union value {
  int32_t i32;
  int64_t i64;
  uint32_t u32;
  uint64_t u64;
  float f;
  double d;
  protobuf_c_boolean b;
  int e;
  char *str;
  ProtobufCBinaryData bin;
  ProtobufCMessage *msg;
} value;

/* io::Tokenizer::ParseInteger: 0x hex, leading-0 octal, else decimal, and
 * fails past max. */
static int parse_uint(const char *s, size_t len, uint64_t max, uint64_t *out) {
  const char *p = s, *end = s + len;
  unsigned base = 10;
  if (len > 1 && p[0] == '0') {
    if (p[1] == 'x' || p[1] == 'X')
      base = 16, p += 2;
    else
      base = 8;
  }
  uint64_t r = 0;
  for (; p < end; p++) {
    unsigned d = (unsigned)hex_value(*p);
    if (d >= base) return 0;
    if (d > max || r > (max - d) / base) return 0;
    r = r * base + d;
  }
  *out = r;
  return 1;
}

/* strtod on a token: the source is not NUL-terminated, so copy it first. */
static int token_strtod(parser *P, const token *t, double *out) {
  if (t->len + 1 > P->scratch_cap) {
    size_t cap = t->len + 64;
    char *s = realloc(P->scratch, cap);
    if (!s) return fail_oom(P);
    P->scratch = s;
    P->scratch_cap = cap;
  }
  memcpy(P->scratch, t->s, t->len);
  P->scratch[t->len] = '\0';
  *out = strtod(P->scratch, NULL); /* stops at the optional f suffix */
  return 0;
}

static const char *msg_name(const ProtobufCMessage *m) { return m->descriptor->name; }

static int fail_value(parser *P, const token *at, const ProtobufCMessage *m, const ProtobufCFieldDescriptor *f,
                      const char *want) {
  char b[64];
  return fail_at(P, at->line, at->col, "expected %s for \"%s\" (%s) in %s, got %s", want, f->name, type_name(f),
                 msg_name(m), tok_text(at, b, sizeof b));
}

/* Integers: an optional '-' token (signed types only), then an integer
 * token within the type's range. */
static int parse_integer(parser *P, const ProtobufCMessage *m, const ProtobufCFieldDescriptor *f, int is_signed,
                         uint64_t max, int64_t *sv, uint64_t *uv) {
  token start = P->tok;
  int neg = 0;
  if (is_sym(&P->tok, '-')) {
    if (!is_signed)
      return fail_at(P, start.line, start.col, "\"%s\" (%s) in %s cannot be negative", f->name, type_name(f),
                     msg_name(m));
    neg = 1;
    if (lex_next(P)) return -1;
  }
  const token *t = &P->tok;
  if (t->type != TOK_INT) return fail_value(P, t, m, f, "an integer");
  uint64_t u;
  if (!parse_uint(t->s, t->len, max + (uint64_t)neg, &u)) {
    const char *range = "";
    switch (f->type) {
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_SINT32:
    case PROTOBUF_C_TYPE_SFIXED32:
    case PROTOBUF_C_TYPE_ENUM:
      range = "-2147483648 to 2147483647";
      break;
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64:
      range = "-9223372036854775808 to 9223372036854775807";
      break;
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_FIXED32:
      range = "0 to 4294967295";
      break;
    case PROTOBUF_C_TYPE_BOOL:
      range = "0 or 1";
      break;
    default:
      range = "0 to 18446744073709551615";
      break;
    }
    return fail_at(P, start.line, start.col, "integer %s%.*s is out of range for \"%s\" (%s: %s) in %s", neg ? "-" : "",
                   (int)(t->len > 40 ? 40 : t->len), t->s, f->name, type_name(f), range, msg_name(m));
  }
  if (sv) *sv = neg ? (int64_t)(0 - u) : (int64_t)u;
  if (uv) *uv = u;
  return lex_next(P);
}

/* Doubles as ConsumeDouble: '-'? then a decimal integer, a float, or
 * inf/infinity/nan in any case. Hex and octal are refused, like protoc. */
static int parse_double(parser *P, const ProtobufCMessage *m, const ProtobufCFieldDescriptor *f, double *out) {
  int neg = 0;
  if (is_sym(&P->tok, '-')) {
    neg = 1;
    if (lex_next(P)) return -1;
  }
  const token *t = &P->tok;
  double v;
  if (t->type == TOK_INT) {
    if (t->len > 1 && t->s[0] == '0') {
      char b[64];
      return fail_at(P, t->line, t->col, "hex and octal integers are not allowed for \"%s\" (%s) in %s, got %s",
                     f->name, type_name(f), msg_name(m), tok_text(t, b, sizeof b));
    }
    uint64_t u;
    if (parse_uint(t->s, t->len, UINT64_MAX, &u))
      v = (double)u;
    else if (token_strtod(P, t, &v))
      return -1;
  } else if (t->type == TOK_FLOAT) {
    if (token_strtod(P, t, &v)) return -1;
  } else if (t->type == TOK_IDENT &&
             ((t->len == 3 && !strncasecmp(t->s, "inf", 3)) || (t->len == 8 && !strncasecmp(t->s, "infinity", 8)))) {
    v = INFINITY;
  } else if (t->type == TOK_IDENT && t->len == 3 && !strncasecmp(t->s, "nan", 3)) {
    v = NAN;
  } else {
    return fail_value(P, t, m, f, "a number, inf or nan");
  }
  *out = neg ? -v : v;
  return lex_next(P);
}

/* Double to float as protoc 3.21 converts (measured): ordinary rounding in
 * range; up to and including FLT_MAX + half an ulp gives FLT_MAX (IEEE
 * would round that tie to infinity); beyond is infinity. */
static float double_to_float(double v) {
  const double flt_max = 0x1.fffffep+127, limit = 0x1.ffffffp+127;
  if (v > limit) return INFINITY;
  if (v < -limit) return -INFINITY;
  if (v > flt_max) return (float)flt_max;
  if (v < -flt_max) return (float)-flt_max;
  return (float)v;
}

static void put_utf8(uint32_t cp, char **o) {
  char *p = *o;
  if (cp <= 0x7f) {
    *p++ = (char)cp;
  } else if (cp <= 0x7ff) {
    *p++ = (char)(0xc0 | (cp >> 6));
    *p++ = (char)(0x80 | (cp & 0x3f));
  } else if (cp <= 0xffff) {
    *p++ = (char)(0xe0 | (cp >> 12));
    *p++ = (char)(0x80 | ((cp >> 6) & 0x3f));
    *p++ = (char)(0x80 | (cp & 0x3f));
  } else if (cp <= 0x10ffff) {
    *p++ = (char)(0xf0 | (cp >> 18));
    *p++ = (char)(0x80 | ((cp >> 12) & 0x3f));
    *p++ = (char)(0x80 | ((cp >> 6) & 0x3f));
    *p++ = (char)(0x80 | (cp & 0x3f));
  } else {
    /* protoc writes an out-of-range \U escape back as text; so do we. */
    char tmp[16];
    int n = snprintf(tmp, sizeof tmp, "\\U%08x", (unsigned)cp);
    memcpy(p, tmp, (size_t)n);
    p += n;
  }
  *o = p;
}

static int read_hex(const char *p, const char *end, int n, uint32_t *out) {
  uint32_t v = 0;
  if (end - p < n) return 0;
  for (int i = 0; i < n; i++) {
    if (!is_hex(p[i])) return 0;
    v = v * 16 + (uint32_t)hex_value(p[i]);
  }
  *out = v;
  return 1;
}

/* Decodes one checked literal (quotes included) into out, as
 * io::Tokenizer::ParseStringAppend does; never writes more than len bytes. */
static size_t decode_string(const char *s, size_t len, char *out) {
  const char *p = s + 1, *e = s + len - 1;
  char *o = out;
  while (p < e) {
    if (*p != '\\') {
      *o++ = *p++;
      continue;
    }
    p++;
    char c = *p;
    if (is_octal(c)) {
      unsigned code = (unsigned)(c - '0');
      p++;
      for (int i = 0; i < 2 && p < e && is_octal(*p); i++, p++) code = code * 8 + (unsigned)(*p - '0');
      *o++ = (char)(code & 0xff);
    } else if (c == 'x') {
      unsigned code = 0;
      p++;
      for (int i = 0; i < 2 && p < e && is_hex(*p); i++, p++) code = code * 16 + (unsigned)hex_value(*p);
      *o++ = (char)code;
    } else if (c == 'u' || c == 'U') {
      uint32_t cp = 0;
      int n = c == 'u' ? 4 : 8;
      read_hex(p + 1, e, n, &cp); /* checked by lex_string */
      p += 1 + n;
      uint32_t trail;
      if (cp >= 0xd800 && cp <= 0xdbff && e - p >= 6 && p[0] == '\\' && p[1] == 'u' && read_hex(p + 2, e, 4, &trail) &&
          trail >= 0xdc00 && trail <= 0xdfff) {
        cp = 0x10000 + ((cp - 0xd800) << 10) + (trail - 0xdc00);
        p += 6;
      }
      put_utf8(cp, &o);
    } else {
      switch (c) {
      case 'a':
        *o++ = '\a';
        break;
      case 'b':
        *o++ = '\b';
        break;
      case 'f':
        *o++ = '\f';
        break;
      case 'n':
        *o++ = '\n';
        break;
      case 'r':
        *o++ = '\r';
        break;
      case 't':
        *o++ = '\t';
        break;
      case 'v':
        *o++ = '\v';
        break;
      default:
        *o++ = c;
        break; /* \\ \' \" \? */
      }
      p++;
    }
  }
  return (size_t)(o - out);
}

/* One or more adjacent string literals, concatenated, in a fresh malloc'd
 * buffer (NUL-terminated). */
static int parse_string(parser *P, const ProtobufCMessage *m, const ProtobufCFieldDescriptor *f, char **out,
                        size_t *out_len) {
  if (P->tok.type != TOK_STRING) return fail_value(P, &P->tok, m, f, "a string");
  token first = P->tok;
  char *buf = NULL;
  size_t len = 0;
  while (P->tok.type == TOK_STRING) {
    char *nb = realloc(buf, len + P->tok.len + 1);
    if (!nb) {
      free(buf);
      return fail_oom(P);
    }
    buf = nb;
    len += decode_string(P->tok.s, P->tok.len, buf + len);
    if (lex_next(P)) {
      free(buf);
      return -1;
    }
  }
  buf[len] = '\0';
  if (f->type == PROTOBUF_C_TYPE_STRING && memchr(buf, '\0', len)) {
    free(buf);
    return fail_at(P, first.line, first.col,
                   "\"%s\" (string) in %s cannot hold a NUL byte: protobuf-c keeps strings "
                   "NUL-terminated (use a bytes field)",
                   f->name, msg_name(m));
  }
  *out = buf;
  *out_len = len;
  return 0;
}

/* ---- storing values ---------------------------------------------------------------- */

static void free_value(const ProtobufCFieldDescriptor *f, value *v) {
  if (f->type == PROTOBUF_C_TYPE_STRING)
    free(v->str);
  else if (f->type == PROTOBUF_C_TYPE_BYTES)
    free(v->bin.data);
  else if (f->type == PROTOBUF_C_TYPE_MESSAGE && v->msg)
    protobuf_c_message_free_unpacked(v->msg, NULL);
}

/* Puts v into msg's field (appending when repeated) and takes ownership of
 * heap values, freeing them if it fails. *index gets the element index. */
static int store(parser *P, ProtobufCMessage *msg, const ProtobufCFieldDescriptor *f, value *v, size_t *index) {
  size_t sz = value_size(f->type);
  if (f->label == PROTOBUF_C_LABEL_REPEATED) {
    size_t *n = (size_t *)AT(msg, f->quantifier_offset);
    void **arr = (void **)AT(msg, f->offset);
    /* The capacity is implied by the count (4, 8, 16, ...), so growth is
     * geometric without keeping a capacity anywhere. */
    if (*n == 0 || (*n >= 4 && (*n & (*n - 1)) == 0)) {
      size_t cap = *n == 0 ? 4 : *n * 2;
      void *na = cap > SIZE_MAX / sz ? NULL : realloc(*arr, cap * sz);
      if (!na) {
        free_value(f, v);
        return fail_oom(P);
      }
      *arr = na;
    }
    memcpy((char *)*arr + *n * sz, v, sz);
    *index = (*n)++;
    return 0;
  }
  char *slot = AT(msg, f->offset);
  if (f->label == PROTOBUF_C_LABEL_NONE) {
    /* proto3 "" or 0 may be given again: drop what the first one stored. */
    if (f->type == PROTOBUF_C_TYPE_STRING) {
      char *old = *(char **)slot;
      if (old && old != f->default_value && old != protobuf_c_empty_string) free(old);
    } else if (f->type == PROTOBUF_C_TYPE_BYTES) {
      free(((ProtobufCBinaryData *)slot)->data);
    }
  }
  memcpy(slot, v, sz);
  if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF)
    *(uint32_t *)AT(msg, f->quantifier_offset) = f->id;
  else if (has_flag(f))
    *(protobuf_c_boolean *)AT(msg, f->quantifier_offset) = 1;
  *index = 0;
  return 0;
}

static int record(parser *P, const ProtobufCMessage *msg, const ProtobufCFieldDescriptor *f, size_t index, int line,
                  int col) {
  pd_srcmap *map = P->map;
  if (!map) return 0;
  if (map->n == map->cap) {
    size_t cap = map->cap ? map->cap * 2 : 64;
    pd_srcpos *np = realloc(map->pos, cap * sizeof *np);
    if (!np) return fail_oom(P);
    map->pos = np;
    map->cap = cap;
  }
  map->pos[map->n++] = (pd_srcpos){msg, f, index, line, col};
  return 0;
}

/* ---- the parser ------------------------------------------------------------------- */

static int parse_body(parser *P, ProtobufCMessage *msg, const token *open, int entry, const token *at);

/* A bool: true, True, t, false, False, f, 1 or 0. */
static int parse_bool(parser *P, ProtobufCMessage *m, const ProtobufCFieldDescriptor *f, value *v) {
  uint64_t u;
  const token *t = &P->tok;
  if (t->type == TOK_INT) {
    if (parse_integer(P, m, f, 0, 1, NULL, &u)) return -1;
    v->b = u != 0;
    return 0;
  }
  if (t->type == TOK_IDENT) {
    static const char *const yes[] = {"true", "True", "t"}, *const no[] = {"false", "False", "f"};
    for (int i = 0; i < 3; i++) {
      if (!cmp_name(yes[i], t->s, t->len)) return v->b = 1, lex_next(P);
      if (!cmp_name(no[i], t->s, t->len)) return v->b = 0, lex_next(P);
    }
  }
  return fail_value(P, t, m, f, "true, false, 1 or 0");
}

/* An enum by name (an unknown one gets a did-you-mean) or by number. */
static int parse_enum(parser *P, ProtobufCMessage *m, const ProtobufCFieldDescriptor *f, value *v) {
  int64_t s;
  const ProtobufCEnumDescriptor *e = f->descriptor;
  token t = P->tok;
  if (t.type == TOK_IDENT) {
    const ProtobufCEnumValue *ev = find_enum_name(e, t.s, t.len);
    if (!ev) {
      char word[128];
      snprintf(word, sizeof word, "%.*s", (int)(t.len > 100 ? 100 : t.len), t.s);
      const char **names = malloc(e->n_value_names * sizeof *names + 1);
      const char *hint = NULL;
      if (names) {
        for (unsigned i = 0; i < e->n_value_names; i++) names[i] = e->values_by_name[i].name;
        hint = pd_suggest(word, names, e->n_value_names);
      }
      fail_at(P, t.line, t.col, "unknown enum value \"%s\" for \"%s\" (%s) in %s%s%s%s", word, f->name, e->name,
              msg_name(m), hint ? " (did you mean \"" : "", hint ? hint : "", hint ? "\"?)" : "");
      free(names);
      return -1;
    }
    v->e = ev->value;
    return lex_next(P);
  }
  if (t.type == TOK_INT || is_sym(&t, '-')) {
    if (parse_integer(P, m, f, 1, INT32_MAX, &s, NULL)) return -1;
    if (!find_enum_number(e, (int)s))
      return fail_at(P, t.line, t.col, "unknown enum number %lld for \"%s\" (%s) in %s", (long long)s, f->name, e->name,
                     msg_name(m));
    v->e = (int)s;
    return 0;
  }
  return fail_value(P, &t, m, f, "an enum name or number");
}

static int parse_scalar(parser *P, ProtobufCMessage *m, const ProtobufCFieldDescriptor *f, value *v) {
  int64_t s;
  uint64_t u;
  memset(v, 0, sizeof *v);
  switch (f->type) {
  case PROTOBUF_C_TYPE_INT32:
  case PROTOBUF_C_TYPE_SINT32:
  case PROTOBUF_C_TYPE_SFIXED32:
    if (parse_integer(P, m, f, 1, INT32_MAX, &s, NULL)) return -1;
    v->i32 = (int32_t)s;
    return 0;
  case PROTOBUF_C_TYPE_INT64:
  case PROTOBUF_C_TYPE_SINT64:
  case PROTOBUF_C_TYPE_SFIXED64:
    if (parse_integer(P, m, f, 1, INT64_MAX, &s, NULL)) return -1;
    v->i64 = s;
    return 0;
  case PROTOBUF_C_TYPE_UINT32:
  case PROTOBUF_C_TYPE_FIXED32:
    if (parse_integer(P, m, f, 0, UINT32_MAX, NULL, &u)) return -1;
    v->u32 = (uint32_t)u;
    return 0;
  case PROTOBUF_C_TYPE_UINT64:
  case PROTOBUF_C_TYPE_FIXED64:
    if (parse_integer(P, m, f, 0, UINT64_MAX, NULL, &u)) return -1;
    v->u64 = u;
    return 0;
  case PROTOBUF_C_TYPE_DOUBLE:
    return parse_double(P, m, f, &v->d);
  case PROTOBUF_C_TYPE_FLOAT: {
    double d;
    if (parse_double(P, m, f, &d)) return -1;
    v->f = double_to_float(d);
    return 0;
  }
  case PROTOBUF_C_TYPE_BOOL:
    return parse_bool(P, m, f, v);
  case PROTOBUF_C_TYPE_ENUM:
    return parse_enum(P, m, f, v);
  case PROTOBUF_C_TYPE_STRING: {
    size_t len;
    return parse_string(P, m, f, &v->str, &len);
  }
  case PROTOBUF_C_TYPE_BYTES: {
    char *s2;
    size_t len;
    if (parse_string(P, m, f, &s2, &len)) return -1;
    v->bin.data = (uint8_t *)s2;
    v->bin.len = len;
    return 0;
  }
  case PROTOBUF_C_TYPE_MESSAGE:
    break;
  }
  return fail_at(P, P->tok.line, P->tok.col, "internal: unexpected field type");
}

/* One message value: `{ ... }` or `< ... >`, stored into the field. `at` is
 * where the occurrence is recorded (the field name, or the element in a
 * list). */
static int parse_message_value(parser *P, ProtobufCMessage *m, const ProtobufCFieldDescriptor *f, const token *at) {
  const ProtobufCMessageDescriptor *sd = f->descriptor;
  token open = P->tok;
  if (!is_sym(&open, '{') && !is_sym(&open, '<')) {
    char b[64];
    return fail_at(P, open.line, open.col, "expected \"{\" or \"<\" to start \"%s\" (%s) in %s, got %s", f->name,
                   sd->name, msg_name(m), tok_text(&open, b, sizeof b));
  }
  if (P->depth >= MAX_DEPTH) return fail_at(P, open.line, open.col, "messages are nested more than %d deep", MAX_DEPTH);
  value v;
  v.msg = malloc(sd->sizeof_message);
  if (!v.msg) return fail_oom(P);
  protobuf_c_message_init(sd, v.msg);
  size_t index;
  if (store(P, m, f, &v, &index)) return -1;
  if (record(P, m, f, index, at->line, at->col) || record(P, v.msg, NULL, 0, at->line, at->col)) return -1;
  if (lex_next(P)) return -1;
  P->path[P->depth++] = (path_elem){f, f->label == PROTOBUF_C_LABEL_REPEATED ? index : SIZE_MAX};
  int rc = parse_body(P, v.msg, &open, is_map_entry(m->descriptor, f), at);
  P->depth--;
  return rc;
}

static int parse_value(parser *P, ProtobufCMessage *m, const ProtobufCFieldDescriptor *f, const token *at) {
  if (f->type == PROTOBUF_C_TYPE_MESSAGE) return parse_message_value(P, m, f, at);
  value v;
  size_t index;
  if (parse_scalar(P, m, f, &v) || store(P, m, f, &v, &index)) return -1;
  return record(P, m, f, index, at->line, at->col);
}

static int unknown_field(parser *P, const ProtobufCMessage *m, const token *t) {
  const ProtobufCMessageDescriptor *d = m->descriptor;
  char word[128], b[64];
  if (is_sym(t, '[')) {
    const char *q = t->s + 1;
    while (q < P->end && (is_letter(*q) || is_digit(*q) || *q == '.' || *q == '/' || *q == ' ')) q++;
    if (q < P->end && *q == ']') q++;
    return fail_at(P, t->line, t->col, "unknown field \"%.*s\" in %s (extensions and Any URLs are not supported)",
                   (int)(q - t->s > 80 ? 80 : q - t->s), t->s, d->name);
  }
  if (t->type != TOK_IDENT)
    return fail_at(P, t->line, t->col, "expected a field name of %s, got %s", d->name, tok_text(t, b, sizeof b));
  snprintf(word, sizeof word, "%.*s", (int)(t->len > 100 ? 100 : t->len), t->s);
  const char **names = malloc(d->n_fields * sizeof *names + 1);
  const char *hint = NULL;
  if (names) {
    for (unsigned i = 0; i < d->n_fields; i++) names[i] = d->fields[i].name;
    hint = pd_suggest(word, names, d->n_fields);
  }
  fail_at(P, t->line, t->col, "unknown field \"%s\" in %s%s%s%s", word, d->name, hint ? " (did you mean \"" : "",
          hint ? hint : "", hint ? "\"?)" : "");
  free(names);
  return -1;
}

static int parse_field(parser *P, ProtobufCMessage *m, size_t seen) {
  const ProtobufCMessageDescriptor *d = m->descriptor;
  token name = P->tok;
  const ProtobufCFieldDescriptor *f = name.type == TOK_IDENT ? find_field(d, name.s, name.len) : NULL;
  if (!f) return unknown_field(P, m, &name);
  size_t fi = (size_t)(f - d->fields);
  uint64_t *bits = &P->seen[seen + fi / 64], bit = (uint64_t)1 << (fi % 64);
  if (f->label != PROTOBUF_C_LABEL_REPEATED) {
    int given = f->label == PROTOBUF_C_LABEL_NONE ? nonzero_value(m, f) : (*bits & bit) != 0;
    if (given)
      return fail_at(P, name.line, name.col, "field \"%s\" of %s is given twice (it is not repeated)", f->name,
                     d->name);
    if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) {
      uint32_t c = *(const uint32_t *)AT(m, f->quantifier_offset);
      const ProtobufCFieldDescriptor *other = c ? protobuf_c_message_descriptor_get_field(d, c) : NULL;
      if (other && other != f)
        return fail_at(P, name.line, name.col,
                       "field \"%s\" of %s is in the same oneof as \"%s\", which is already set "
                       "(give only one)",
                       f->name, d->name, other->name);
    }
  }
  *bits |= bit;
  if (lex_next(P)) return -1;
  if (f->type == PROTOBUF_C_TYPE_MESSAGE) {
    if (is_sym(&P->tok, ':') && lex_next(P)) return -1;
  } else if (!is_sym(&P->tok, ':')) {
    char b[64];
    return fail_at(P, P->tok.line, P->tok.col, "expected \":\" after \"%s\" (%s) in %s, got %s", f->name, type_name(f),
                   d->name, tok_text(&P->tok, b, sizeof b));
  } else if (lex_next(P)) {
    return -1;
  }
  if (f->label == PROTOBUF_C_LABEL_REPEATED && is_sym(&P->tok, '[')) {
    /* List syntax: `f: [a, b]`; `[]` is empty; no trailing comma. */
    if (lex_next(P)) return -1;
    while (!is_sym(&P->tok, ']')) {
      token at = P->tok;
      if (parse_value(P, m, f, &at)) return -1;
      if (is_sym(&P->tok, ']')) break;
      if (!is_sym(&P->tok, ',')) {
        char b[64];
        return fail_at(P, P->tok.line, P->tok.col, "expected \",\" or \"]\" in the list for \"%s\", got %s", f->name,
                       tok_text(&P->tok, b, sizeof b));
      }
      token comma = P->tok;
      if (lex_next(P)) return -1;
      if (is_sym(&P->tok, ']'))
        return fail_at(P, comma.line, comma.col, "trailing \",\" before \"]\" in the list for \"%s\"", f->name);
    }
    if (lex_next(P)) return -1;
  } else if (parse_value(P, m, f, &name)) {
    return -1;
  }
  if ((is_sym(&P->tok, ';') || is_sym(&P->tok, ',')) && lex_next(P)) return -1;
  return 0;
}

static void format_path(const parser *P, const char *last, char *buf, size_t size) {
  size_t used = 0;
  buf[0] = '\0';
  for (int i = 0; i < P->depth && used < size; i++) {
    const path_elem *e = &P->path[i];
    int n = e->index == SIZE_MAX ? snprintf(buf + used, size - used, "%s.", e->field->name)
                                 : snprintf(buf + used, size - used, "%s[%zu].", e->field->name, e->index);
    if (n < 0) return;
    used += (size_t)n;
  }
  if (used < size) snprintf(buf + used, size - used, "%s", last);
}

/* Fields until the closing delimiter (or the end, at top level); then the
 * required-field check, and for map entries the key/value protoc always
 * writes. */
static int parse_body(parser *P, ProtobufCMessage *msg, const token *open, int entry, const token *at) {
  const ProtobufCMessageDescriptor *d = msg->descriptor;
  size_t words = (d->n_fields + 63) / 64, seen = P->seen_len;
  if (seen + words > P->seen_cap) {
    size_t cap = (seen + words) * 2 + 16;
    uint64_t *ns = realloc(P->seen, cap * sizeof *ns);
    if (!ns) return fail_oom(P);
    P->seen = ns;
    P->seen_cap = cap;
  }
  memset(P->seen + seen, 0, words * sizeof *P->seen);
  P->seen_len += words;
  char close = !open ? 0 : open->s[0] == '<' ? '>' : '}';
  for (;;) {
    const token *t = &P->tok;
    if (t->type == TOK_END) {
      if (!close) break;
      return fail_at(P, open->line, open->col, "\"%c\" is never closed: expected \"%c\" before the end of input",
                     open->s[0], close);
    }
    if (is_sym(t, '}') || is_sym(t, '>')) {
      if (!close) return fail_at(P, t->line, t->col, "unexpected \"%c\": no message is open", t->s[0]);
      if (t->s[0] != close)
        return fail_at(P, t->line, t->col, "expected \"%c\" to close the \"%c\" at %d:%d, got \"%c\"", close,
                       open->s[0], open->line, open->col, t->s[0]);
      if (lex_next(P)) return -1;
      break;
    }
    if (parse_field(P, msg, seen)) return -1;
  }
  for (unsigned i = 0; i < d->n_fields; i++) {
    const ProtobufCFieldDescriptor *f = &d->fields[i];
    if (P->seen[seen + i / 64] & ((uint64_t)1 << (i % 64))) continue;
    if (f->label == PROTOBUF_C_LABEL_REQUIRED) {
      char path[512];
      format_path(P, f->name, path, sizeof path);
      int line = at ? at->line : 1, col = at ? at->col : 1;
      return fail_at(P, line, col, "missing required field %s (%s.%s)", path, d->name, f->name);
    }
    if (entry) {
      value v;
      memset(&v, 0, sizeof v);
      if (f->type == PROTOBUF_C_TYPE_STRING) {
        v.str = calloc(1, 1);
        if (!v.str) return fail_oom(P);
      } else if (f->type == PROTOBUF_C_TYPE_MESSAGE) {
        /* protoc writes an absent value as an empty message, even one
         * lacking required fields; protobuf-c cannot hold that (it packs
         * required fields always), so that case is an error here */
        const ProtobufCMessageDescriptor *sd = f->descriptor;
        for (unsigned k = 0; k < sd->n_fields; k++) {
          if (sd->fields[k].label != PROTOBUF_C_LABEL_REQUIRED) continue;
          char path[512], last[256];
          snprintf(last, sizeof last, "%s.%s", f->name, sd->fields[k].name);
          format_path(P, last, path, sizeof path);
          return fail_at(P, at ? at->line : 1, at ? at->col : 1,
                         "missing required field %s (%s.%s): a map entry without a value gets an "
                         "empty %s, which lacks it",
                         path, sd->name, sd->fields[k].name, sd->name);
        }
        v.msg = malloc(sd->sizeof_message);
        if (!v.msg) return fail_oom(P);
        protobuf_c_message_init(sd, v.msg);
      } else {
        memcpy(&v, AT(msg, f->offset), value_size(f->type)); /* the default */
      }
      size_t index;
      if (store(P, msg, f, &v, &index)) return -1;
    }
  }
  P->seen_len = seen;
  return 0;
}

pd_status pd_text_parse(const ProtobufCMessageDescriptor *desc, const char *text, size_t len, const char *filename,
                        ProtobufCMessage **out, pd_srcmap *map, pd_error *err) {
  if (out) *out = NULL;
  if (!desc || !out || (!text && len))
    return pd_errorf(err, PD_ERR_INPUT, "pd_text_parse: no descriptor, input or output");
  parser *P = calloc(1, sizeof *P);
  if (!P) return pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
  static const char empty[1] = "";
  P->src = P->p = P->line_start = text ? text : empty;
  P->end = P->src + len;
  P->line = 1;
  P->file = filename;
  P->err = err;
  P->map = map;
  size_t map_n = map ? map->n : 0, map_cap = map ? map->cap : 0;
  ProtobufCMessage *msg = malloc(desc->sizeof_message);
  int rc = -1;
  if (!msg) {
    fail_oom(P);
  } else {
    protobuf_c_message_init(desc, msg);
    rc = record(P, msg, NULL, 0, 1, 1);
    if (!rc) rc = lex_next(P);
    if (!rc) rc = parse_body(P, msg, NULL, 0, NULL);
  }
  pd_status st = rc ? (err ? err->status : PD_ERR_INPUT) : PD_OK;
  if (rc) {
    if (msg) protobuf_c_message_free_unpacked(msg, NULL);
    if (map && map_cap == 0)
      pd_srcmap_free(map);
    else if (map)
      map->n = map_n;
  } else {
    *out = msg;
    if (map) srcmap_index(map);
  }
  free(P->seen);
  free(P->scratch);
  free(P);
  return st;
}

/* ---- printer ------------------------------------------------------------------------ */

void pd_buf_free(pd_buf *b) {
  if (!b) return;
  free(b->data);
  b->data = NULL;
  b->len = b->cap = 0;
}

static int buf_reserve(pd_buf *b, size_t n) {
  if (b->len + n + 1 <= b->cap) return 0;
  size_t cap = b->cap ? b->cap : 256;
  while (cap < b->len + n + 1) {
    if (cap > SIZE_MAX / 2) return -1;
    cap *= 2;
  }
  char *d = realloc(b->data, cap);
  if (!d) return -1;
  b->data = d;
  b->cap = cap;
  return 0;
}

int pd_buf_append(pd_buf *b, const char *s, size_t n) {
  if (buf_reserve(b, n)) return -1;
  memcpy(b->data + b->len, s, n);
  b->len += n;
  b->data[b->len] = '\0';
  return 0;
}

int pd_buf_printf(pd_buf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char small[256];
  int n = vsnprintf(small, sizeof small, fmt, ap);
  va_end(ap);
  if (n < 0) return -1;
  if ((size_t)n < sizeof small) return pd_buf_append(b, small, (size_t)n);
  if (buf_reserve(b, (size_t)n)) return -1;
  va_start(ap, fmt);
  vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  b->len += (size_t)n;
  return 0;
}

/* Writes the decimal digits of `sci` ("-d.ddde+XX", from %.*e) the way
 * repr() does: positional for exponents -4..15, else d.ddde+XX. */
static void layout_number(const char *sci, char *buf, size_t size) {
  char digits[32];
  size_t nd = 0;
  const char *p = sci;
  int neg = *p == '-';
  if (neg) p++;
  for (; *p && *p != 'e' && nd < sizeof digits - 1; p++)
    if (*p != '.') digits[nd++] = *p;
  digits[nd] = '\0';
  int exp = *p == 'e' ? atoi(p + 1) : 0;
  while (nd > 1 && digits[nd - 1] == '0') digits[--nd] = '\0';
  char out[64];
  size_t o = 0;
  if (neg) out[o++] = '-';
  if (exp < -4 || exp >= 16) {
    out[o++] = digits[0];
    if (nd > 1) {
      out[o++] = '.';
      memcpy(out + o, digits + 1, nd - 1);
      o += nd - 1;
    }
    snprintf(out + o, sizeof out - o, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
  } else if (exp < 0) {
    out[o++] = '0';
    out[o++] = '.';
    for (int i = -1; i > exp; i--) out[o++] = '0';
    memcpy(out + o, digits, nd);
    out[o + nd] = '\0';
  } else {
    for (int i = 0; i <= exp || (size_t)i < nd; i++) {
      if (i == exp + 1) out[o++] = '.';
      out[o++] = (size_t)i < nd ? digits[i] : '0';
    }
    out[o] = '\0';
  }
  snprintf(buf, size, "%s", out);
}

/* Whether `prec` significant digits of v read back (as protoc reads them:
 * strtod, then narrowed for floats) to exactly v; leaves them in sci. */
static int digits_read_back(double v, int is_float, int prec, char *sci, size_t size) {
  snprintf(sci, size, "%.*e", prec - 1, v);
  double d = strtod(sci, NULL);
  if (is_float) {
    float r = double_to_float(d), f = (float)v;
    return memcmp(&r, &f, sizeof r) == 0;
  }
  return memcmp(&d, &v, sizeof d) == 0;
}

/* The fewest significant digits that read back exactly (17 always do).
 * Reading back is monotone in the digit count, because more digits land
 * closer to v, except where v's rounding interval is lopsided: at powers of
 * two (and zero). Those are searched one by one, the rest by bisection. */
static void format_shortest(double v, int is_float, char *buf, size_t size) {
  char sci[40];
  int lo = 1, hi = 17;
  int pow2;
  if (is_float) {
    float f = (float)v;
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    pow2 = (bits & 0x7fffff) == 0;
  } else {
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    pow2 = (bits & 0xfffffffffffffULL) == 0;
  }
  if (pow2) {
    while (lo < hi && !digits_read_back(v, is_float, lo, sci, sizeof sci)) lo++;
  } else {
    while (lo < hi) {
      int mid = (lo + hi) / 2;
      if (digits_read_back(v, is_float, mid, sci, sizeof sci))
        hi = mid;
      else
        lo = mid + 1;
    }
  }
  digits_read_back(v, is_float, lo, sci, sizeof sci);
  layout_number(sci, buf, size);
}

void pd_format_double(double v, char *buf, size_t size) {
  if (isnan(v))
    snprintf(buf, size, signbit(v) ? "-nan" : "nan");
  else if (isinf(v))
    snprintf(buf, size, v < 0 ? "-inf" : "inf");
  else
    format_shortest(v, 0, buf, size);
}

void pd_format_float(float v, char *buf, size_t size) {
  if (isnan(v) || isinf(v))
    pd_format_double((double)v, buf, size);
  else
    format_shortest((double)v, 1, buf, size);
}

static int print_escaped(pd_buf *b, const uint8_t *s, size_t n) {
  if (buf_reserve(b, n * 4 + 2)) return -1;
  char *o = b->data + b->len;
  *o++ = '"';
  for (size_t i = 0; i < n; i++) {
    uint8_t c = s[i];
    switch (c) {
    case '\n':
      *o++ = '\\', *o++ = 'n';
      break;
    case '\r':
      *o++ = '\\', *o++ = 'r';
      break;
    case '\t':
      *o++ = '\\', *o++ = 't';
      break;
    case '"':
      *o++ = '\\', *o++ = '"';
      break;
    case '\'':
      *o++ = '\\', *o++ = '\'';
      break;
    case '\\':
      *o++ = '\\', *o++ = '\\';
      break;
    default:
      if (c < 0x20 || c >= 0x7f) {
        *o++ = '\\';
        *o++ = (char)('0' + (c >> 6));
        *o++ = (char)('0' + ((c >> 3) & 7));
        *o++ = (char)('0' + (c & 7));
      } else {
        *o++ = (char)c;
      }
    }
  }
  *o++ = '"';
  b->len = (size_t)(o - b->data);
  b->data[b->len] = '\0';
  return 0;
}

static int print_indent(pd_buf *b, int indent) {
  if (buf_reserve(b, (size_t)indent * 2)) return -1;
  memset(b->data + b->len, ' ', (size_t)indent * 2);
  b->len += (size_t)indent * 2;
  b->data[b->len] = '\0';
  return 0;
}

/* The printer's settings and the comments it has placed so far. */
typedef struct printer {
  pd_buf *out;
  bool compact, compact_strings;
  const pd_comments *comments;
  bool *done; /* per comment: printed */
} printer;

static int print_message(printer *pr, const ProtobufCMessage *msg, int indent);

/* The comments of one place, each on a line of its own at `indent`;
 * `trail` (may be NULL) receives the first trailing one instead. */
static int print_comments(printer *pr, const void *msg, const ProtobufCFieldDescriptor *f, size_t index, int where,
                          int indent, const char **trail) {
  const pd_comments *cs = pr->comments;
  for (size_t i = 0; cs && i < cs->n; i++) {
    const pd_comment *c = &cs->c[i];
    if (pr->done[i] || c->msg != msg || c->field != f || (f && c->index != index)) continue;
    if (c->where != where && !(where == PD_COMMENT_BEFORE && c->where == PD_COMMENT_TRAIL)) continue;
    if (c->where == PD_COMMENT_TRAIL && where == PD_COMMENT_BEFORE) {
      if (!trail || *trail) continue; /* printed after the line (print_trail) */
      *trail = c->text;
      pr->done[i] = true;
      continue;
    }
    pr->done[i] = true;
    if (print_indent(pr->out, indent) || pd_buf_append(pr->out, c->text, strlen(c->text)) ||
        pd_buf_append(pr->out, "\n", 1))
      return -1;
  }
  return 0;
}

/* The trailing comments of a place not taken as its line's trailing one. */
static int print_trail(printer *pr, const void *msg, const ProtobufCFieldDescriptor *f, size_t index, int indent) {
  const pd_comments *cs = pr->comments;
  for (size_t i = 0; cs && i < cs->n; i++) {
    const pd_comment *c = &cs->c[i];
    if (pr->done[i] || c->where != PD_COMMENT_TRAIL || c->msg != msg || c->field != f || c->index != index) continue;
    pr->done[i] = true;
    if (print_indent(pr->out, indent) || pd_buf_append(pr->out, c->text, strlen(c->text)) ||
        pd_buf_append(pr->out, "\n", 1))
      return -1;
  }
  return 0;
}

/* Ends a line, with its trailing comment if any. */
static int end_line(pd_buf *out, const char *trail) {
  if (trail && (pd_buf_append(out, "  ", 2) || pd_buf_append(out, trail, strlen(trail)))) return -1;
  return pd_buf_append(out, "\n", 1);
}

/* A scalar value's text (no name, no newline). */
static int print_scalar(const ProtobufCFieldDescriptor *f, const void *p, pd_buf *out);

/* One `name: value` line (or `name {...}` block) for the value at p. */
static int print_value(printer *pr, const ProtobufCFieldDescriptor *f, const void *p, int indent, const char *trail) {
  pd_buf *out = pr->out;
  if (print_indent(out, indent) || pd_buf_append(out, f->name, strlen(f->name))) return -1;
  if (f->type == PROTOBUF_C_TYPE_MESSAGE) {
    const ProtobufCMessage *sub = *(ProtobufCMessage *const *)p;
    if (pd_buf_append(out, " {", 2) || end_line(out, trail) || print_message(pr, sub, indent + 1) ||
        print_indent(out, indent) || pd_buf_append(out, "}\n", 2))
      return -1;
    return 0;
  }
  if (pd_buf_append(out, ": ", 2) || print_scalar(f, p, out)) return -1;
  return end_line(out, trail);
}

static int print_scalar(const ProtobufCFieldDescriptor *f, const void *p, pd_buf *out) {
  char num[64];
  int rc = 0;
  switch (f->type) {
  case PROTOBUF_C_TYPE_INT32:
  case PROTOBUF_C_TYPE_SINT32:
  case PROTOBUF_C_TYPE_SFIXED32:
    rc = pd_buf_printf(out, "%" PRId32, *(const int32_t *)p);
    break;
  case PROTOBUF_C_TYPE_INT64:
  case PROTOBUF_C_TYPE_SINT64:
  case PROTOBUF_C_TYPE_SFIXED64:
    rc = pd_buf_printf(out, "%" PRId64, *(const int64_t *)p);
    break;
  case PROTOBUF_C_TYPE_UINT32:
  case PROTOBUF_C_TYPE_FIXED32:
    rc = pd_buf_printf(out, "%" PRIu32, *(const uint32_t *)p);
    break;
  case PROTOBUF_C_TYPE_UINT64:
  case PROTOBUF_C_TYPE_FIXED64:
    rc = pd_buf_printf(out, "%" PRIu64, *(const uint64_t *)p);
    break;
  case PROTOBUF_C_TYPE_FLOAT:
    pd_format_float(*(const float *)p, num, sizeof num);
    rc = pd_buf_append(out, num, strlen(num));
    break;
  case PROTOBUF_C_TYPE_DOUBLE:
    pd_format_double(*(const double *)p, num, sizeof num);
    rc = pd_buf_append(out, num, strlen(num));
    break;
  case PROTOBUF_C_TYPE_BOOL:
    rc = *(const protobuf_c_boolean *)p ? pd_buf_append(out, "true", 4) : pd_buf_append(out, "false", 5);
    break;
  case PROTOBUF_C_TYPE_ENUM: {
    int v = *(const int *)p;
    const ProtobufCEnumValue *ev = find_enum_number(f->descriptor, v);
    rc = ev ? pd_buf_append(out, ev->name, strlen(ev->name)) : pd_buf_printf(out, "%d", v);
    break;
  }
  case PROTOBUF_C_TYPE_STRING: {
    const char *s = *(char *const *)p;
    rc = print_escaped(out, (const uint8_t *)(s ? s : ""), s ? strlen(s) : 0);
    break;
  }
  case PROTOBUF_C_TYPE_BYTES: {
    const ProtobufCBinaryData *bd = p;
    rc = print_escaped(out, bd->data, bd->len);
    break;
  }
  case PROTOBUF_C_TYPE_MESSAGE:
    break;
  }
  return rc ? -1 : 0;
}

/* Whether a singular field is set, by the rule protobuf-c's packer uses. */
static int field_present(const ProtobufCMessage *m, const ProtobufCFieldDescriptor *f) {
  if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) return *(const uint32_t *)CAT(m, f->quantifier_offset) == f->id;
  if (f->type == PROTOBUF_C_TYPE_STRING || f->type == PROTOBUF_C_TYPE_MESSAGE) {
    const void *p = *(void *const *)CAT(m, f->offset);
    if (!p) return 0;
    if (f->label == PROTOBUF_C_LABEL_OPTIONAL) return p != f->default_value;
    if (f->label == PROTOBUF_C_LABEL_NONE) return nonzero_value(m, f);
    return 1;
  }
  if (f->label == PROTOBUF_C_LABEL_OPTIONAL) return *(const protobuf_c_boolean *)CAT(m, f->quantifier_offset);
  if (f->label == PROTOBUF_C_LABEL_NONE) return nonzero_value(m, f);
  return 1;
}

/* The widest line a compact list is printed on. */
#define LIST_WIDTH 100

/* A repeated scalar field as one `name: [a, b]` line (compact printing):
 * numbers, enums and bools; strings, when asked, if there are two or more. */
static bool print_as_list(const printer *pr, const ProtobufCFieldDescriptor *f, size_t n) {
  if (!pr->compact || f->type == PROTOBUF_C_TYPE_MESSAGE || f->type == PROTOBUF_C_TYPE_BYTES || !n) return false;
  return f->type != PROTOBUF_C_TYPE_STRING || (pr->compact_strings && n >= 2);
}

static int print_message(printer *pr, const ProtobufCMessage *msg, int indent) {
  const ProtobufCMessageDescriptor *d = msg->descriptor;
  pd_buf *out = pr->out;
  for (unsigned i = 0; i < d->n_fields; i++) { /* protoc-c sorts fields by number */
    const ProtobufCFieldDescriptor *f = &d->fields[i];
    const char *trail = NULL;
    if (f->label == PROTOBUF_C_LABEL_REPEATED) {
      size_t n = *(const size_t *)CAT(msg, f->quantifier_offset), sz = value_size(f->type);
      const char *arr = *(char *const *)CAT(msg, f->offset);
      pd_buf list = {0};
      if (print_as_list(pr, f, n)) {
        int rc = pd_buf_append(&list, "[", 1);
        for (size_t k = 0; k < n && !rc && list.len <= LIST_WIDTH; k++)
          rc = (k && pd_buf_append(&list, ", ", 2)) || print_scalar(f, arr + k * sz, &list);
        rc = rc || pd_buf_append(&list, "]", 1);
        if (rc) {
          pd_buf_free(&list);
          return -1;
        }
      }
      /* a list too long for a line prints one value a line */
      if (list.len && (size_t)indent * 2 + strlen(f->name) + 2 + list.len <= LIST_WIDTH) {
        int rc = 0;
        for (size_t k = 0; k < n && !rc; k++) rc = print_comments(pr, msg, f, k, PD_COMMENT_BEFORE, indent, &trail);
        rc = rc || print_indent(out, indent) || pd_buf_append(out, f->name, strlen(f->name)) ||
             pd_buf_append(out, ": ", 2) || pd_buf_append(out, list.data, list.len) || end_line(out, trail);
        for (size_t k = 0; k < n && !rc; k++) rc = print_trail(pr, msg, f, k, indent);
        pd_buf_free(&list);
        if (rc) return -1;
        continue;
      }
      pd_buf_free(&list);
      for (size_t k = 0; k < n; k++) {
        trail = NULL;
        if (print_comments(pr, msg, f, k, PD_COMMENT_BEFORE, indent, &trail) ||
            print_value(pr, f, arr + k * sz, indent, trail) || print_trail(pr, msg, f, k, indent))
          return -1;
      }
    } else if (field_present(msg, f)) {
      if (print_comments(pr, msg, f, 0, PD_COMMENT_BEFORE, indent, &trail) ||
          print_value(pr, f, CAT(msg, f->offset), indent, trail) || print_trail(pr, msg, f, 0, indent))
        return -1;
    }
  }
  return print_comments(pr, msg, NULL, 0, PD_COMMENT_END, indent, NULL);
}

pd_status pd_text_print(const ProtobufCMessage *msg, int indent, pd_buf *out, pd_error *err) {
  return pd_text_print_opts(msg, indent, NULL, out, err);
}

pd_status pd_text_print_opts(const ProtobufCMessage *msg, int indent, const pd_print_opts *opts, pd_buf *out,
                             pd_error *err) {
  if (!msg || !out) return pd_errorf(err, PD_ERR_INPUT, "pd_text_print: no message or buffer");
  printer pr = {.out = out,
                .compact = opts && opts->compact,
                .compact_strings = opts && opts->compact_strings,
                .comments = opts ? opts->comments : NULL};
  if (pr.comments && pr.comments->n && !(pr.done = calloc(pr.comments->n, sizeof *pr.done)))
    return pd_errorf(err, PD_ERR_RUNTIME, "out of memory while printing %s", msg->descriptor->name);
  int rc = print_message(&pr, msg, indent < 0 ? 0 : indent);
  /* a comment whose place was not printed (a field at its default) is kept
   * at the end rather than lost */
  for (size_t i = 0; !rc && pr.comments && i < pr.comments->n; i++)
    if (!pr.done[i])
      rc = pd_buf_append(out, pr.comments->c[i].text, strlen(pr.comments->c[i].text)) || pd_buf_append(out, "\n", 1);
  free(pr.done);
  if (rc) return pd_errorf(err, PD_ERR_RUNTIME, "out of memory while printing %s", msg->descriptor->name);
  return PD_OK;
}

/* ---- comments ---------------------------------------------------------------- */

void pd_comments_free(pd_comments *cs) {
  for (size_t i = 0; i < cs->n; i++) free(cs->c[i].text);
  free(cs->c);
  memset(cs, 0, sizeof *cs);
}

/* A field occurrence in source order, with the brace depth it is at. */
typedef struct place {
  const pd_srcpos *pos;
  int depth;
} place;

static int cmp_place(const void *a, const void *b) {
  const pd_srcpos *x = ((const place *)a)->pos, *y = ((const place *)b)->pos;
  if (x->line != y->line) return x->line < y->line ? -1 : 1;
  if (x->col != y->col) return x->col < y->col ? -1 : 1;
  return x < y ? -1 : x > y;
}

static bool before(int l1, int c1, int l2, int c2) { return l1 < l2 || (l1 == l2 && c1 < c2); }

/* The message a message field occurrence holds. */
static const ProtobufCMessage *sub_message(const pd_srcpos *p) {
  const char *m = (const char *)p->msg;
  if (p->field->label == PROTOBUF_C_LABEL_REPEATED)
    return (*(ProtobufCMessage *const *const *)(m + p->field->offset))[p->index];
  return *(ProtobufCMessage *const *)(m + p->field->offset);
}

pd_status pd_text_comments(const char *text, size_t len, const ProtobufCMessage *root, const pd_srcmap *map,
                           pd_comments *out, pd_error *err) {
  memset(out, 0, sizeof *out);
  size_t np = 0;
  place *pl = malloc(sizeof *pl * (map->n + 1));
  if (!pl) return pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
  for (size_t i = 0; i < map->n; i++)
    if (map->pos[i].field) pl[np++] = (place){&map->pos[i], 0};
  qsort(pl, np, sizeof *pl, cmp_place);
  /* one pass over the text: the depth at each place, and the comments */
  typedef struct raw {
    int line, col, depth;
    bool trailing;
    size_t next; /* the first place after it */
    const char *s;
    size_t n;
  } raw;
  raw *rs = NULL;
  size_t nr = 0, cap = 0, k = 0;
  int line = 1, depth = 0;
  const char *line_start = text;
  bool code = false; /* something other than a comment on this line so far */
  pd_status st = PD_OK;
  for (const char *p = text, *end = text + len; p < end;) {
    int col = (int)(p - line_start) + 1;
    while (k < np && before(pl[k].pos->line, pl[k].pos->col, line, col + 1)) pl[k++].depth = depth;
    char c = *p;
    if (c == '\n') {
      line++, p++, line_start = p, code = false;
    } else if (c == '#') {
      const char *e = memchr(p, '\n', (size_t)(end - p));
      if (!e) e = end;
      size_t n = (size_t)(e - p);
      while (n && (p[n - 1] == ' ' || p[n - 1] == '\t' || p[n - 1] == '\r')) n--;
      if (nr == cap) {
        cap = cap ? 2 * cap : 16;
        raw *g = realloc(rs, sizeof *rs * cap);
        if (!g) {
          st = pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
          break;
        }
        rs = g;
      }
      rs[nr++] = (raw){line, col, depth, code, k, p, n};
      p = e;
    } else if (c == '"' || c == '\'') {
      for (p++; p < end && *p != c && *p != '\n'; p++)
        if (*p == '\\' && p + 1 < end && p[1] != '\n') p++;
      if (p < end && *p == c) p++;
      code = true;
    } else {
      if (c == '{' || c == '<') depth++;
      if ((c == '}' || c == '>') && depth > 0) depth--;
      if (c != ' ' && c != '\t' && c != '\r') code = true;
      p++;
    }
  }
  while (k < np) pl[k++].depth = depth;
  if (!st && nr && !(out->c = calloc(nr, sizeof *out->c))) st = pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
  for (size_t i = 0; i < nr && !st; i++) {
    raw *r = &rs[i];
    pd_comment *c = &out->c[out->n];
    if (!(c->text = malloc(r->n + 1))) {
      st = pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
      break;
    }
    memcpy(c->text, r->s, r->n);
    c->text[r->n] = '\0';
    out->n++;
    const pd_srcpos *at = NULL;
    /* a trailing comment: the first field on its line */
    for (size_t j = 0; r->trailing && j < np && pl[j].pos->line <= r->line && !at; j++)
      if (pl[j].pos->line == r->line) at = pl[j].pos;
    if (at) {
      *c = (pd_comment){at->msg, at->field, at->index, PD_COMMENT_TRAIL, c->text};
      continue;
    }
    /* on a line of its own: the field after it at its depth */
    if (r->next < np && pl[r->next].depth == r->depth) {
      at = pl[r->next].pos;
      *c = (pd_comment){at->msg, at->field, at->index, PD_COMMENT_BEFORE, c->text};
      continue;
    }
    /* else the end of the message it is in: opened by the last message
     * field before it one level up */
    const ProtobufCMessage *in = root;
    for (size_t j = r->next; j-- > 0 && r->depth > 0;)
      if (pl[j].depth == r->depth - 1 && pl[j].pos->field->type == PROTOBUF_C_TYPE_MESSAGE) {
        in = sub_message(pl[j].pos);
        break;
      }
    *c = (pd_comment){in, NULL, 0, PD_COMMENT_END, c->text};
  }
  free(rs);
  free(pl);
  if (st) pd_comments_free(out);
  return st;
}

/* ---- binary nesting ---------------------------------------------------------- */

/* A varint at *pos (before end); 0 on success. */
static int read_varint(const uint8_t *p, size_t end, size_t *pos, uint64_t *out) {
  uint64_t v = 0;
  for (int shift = 0; shift < 64 && *pos < end; shift += 7) {
    uint8_t b = p[(*pos)++];
    v |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) {
      *out = v;
      return 0;
    }
  }
  return -1;
}

pd_status pd_pb_check_depth(const ProtobufCMessageDescriptor *desc, const uint8_t *data, size_t len, const char *file,
                            pd_error *err) {
  struct {
    const ProtobufCMessageDescriptor *d;
    size_t end;
  } stack[PD_PB_MAX_DEPTH + 1];
  int depth = 0;
  size_t pos = 0;
  stack[0].d = desc, stack[0].end = len;
  for (;;) {
    while (pos >= stack[depth].end) {
      if (depth == 0) return PD_OK;
      depth--;
    }
    size_t end = stack[depth].end;
    uint64_t key, n;
    if (read_varint(data, end, &pos, &key)) return PD_OK;
    unsigned wire = (unsigned)(key & 7);
    uint64_t id = key >> 3;
    switch (wire) {
    case 0:
      if (read_varint(data, end, &pos, &n)) return PD_OK;
      continue;
    case 1:
      if (end - pos < 8) return PD_OK;
      pos += 8;
      continue;
    case 5:
      if (end - pos < 4) return PD_OK;
      pos += 4;
      continue;
    case 2:
      break;
    default:
      return PD_OK;
    }
    if (read_varint(data, end, &pos, &n) || n > end - pos) return PD_OK;
    const ProtobufCFieldDescriptor *f =
        id && id <= UINT32_MAX ? protobuf_c_message_descriptor_get_field(stack[depth].d, (unsigned)id) : NULL;
    if (!f || f->type != PROTOBUF_C_TYPE_MESSAGE) {
      pos += n;
      continue;
    }
    if (depth == PD_PB_MAX_DEPTH)
      return pd_errorf(err, PD_ERR_INPUT, "%s: messages are nested more than %d deep (at byte %zu)", file,
                       PD_PB_MAX_DEPTH, pos);
    depth++;
    stack[depth].d = f->descriptor, stack[depth].end = pos + n;
  }
}
