/* textformat.h — protobuf text format, read and written over protobuf-c's
 * generated descriptors, so it works for any message of any .proto compiled
 * by protoc-c (protobuf-c itself has no text format). The grammar and the
 * verdicts follow protoc's TextFormat: what protoc accepts we accept, what it
 * rejects we reject, with "FILE:LINE:COL: message" and a quoted caret line. */
#ifndef PD_TEXTFORMAT_H
#define PD_TEXTFORMAT_H

#include <protobuf-c/protobuf-c.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"

/* Where each parsed message and field occurrence came from, so later stages
 * (op validation, shape inference) can point at the source. Entries are kept
 * in parse order; look-ups happen only on error paths. */
typedef struct pd_srcpos {
  const ProtobufCMessage *msg;           /* the message holding the field */
  const ProtobufCFieldDescriptor *field; /* NULL: the position of msg itself */
  size_t index;                          /* element index for repeated fields */
  int line, col;                         /* 1-based */
} pd_srcpos;

typedef struct pd_srcmap {
  pd_srcpos *pos;
  size_t n, cap;
  size_t *slots; /* hash index of pos (entry + 1; 0 = empty), built after a parse */
  size_t nslots; /* a power of two; the index covers pos[0, indexed) */
  size_t indexed;
} pd_srcmap;

void pd_srcmap_free(pd_srcmap *map);

/* Position of msg itself (field NULL) or of one field occurrence. Returns 0
 * and leaves line and col untouched when nothing was recorded. */
int pd_srcmap_find(const pd_srcmap *map, const void *msg, const ProtobufCFieldDescriptor *field, size_t index,
                   int *line, int *col);

/* Parses `text` (len bytes, need not be NUL-terminated) as a message of type
 * `desc`. On success *out is a message owned by the caller, freed with
 * protobuf_c_message_free_unpacked(*out, NULL). `filename` is used in error
 * messages only. `map` may be NULL; when given it receives source positions
 * (pointers into *out; valid until *out is freed). A missing proto2 required
 * field is an error naming the field path ("op[3].type"). On error *out is
 * NULL and nothing is leaked. */
pd_status pd_text_parse(const ProtobufCMessageDescriptor *desc, const char *text, size_t len, const char *filename,
                        ProtobufCMessage **out, pd_srcmap *map, pd_error *err);

/* The deepest nesting of messages below the top one that the text parser
 * and pd_pb_check_depth accept (protobuf's own default recursion limit):
 * deeper input is an error, never a stack overflow in the recursive parser,
 * protobuf-c's unpack, the printer or the packer. */
#define PD_PB_MAX_DEPTH 100

/* Checks, before protobuf_c_message_unpack (which recurses once per level),
 * that the binary message `data` of type `desc` nests no deeper than
 * PD_PB_MAX_DEPTH: a bounded scan of the wire format, with no recursion,
 * following only the fields `desc` declares as messages. Malformed bytes end
 * the scan with PD_OK (unpack refuses them before recursing past them).
 * `file` is used in the message. */
pd_status pd_pb_check_depth(const ProtobufCMessageDescriptor *desc, const uint8_t *data, size_t len, const char *file,
                            pd_error *err);

/* A growable byte buffer for the printer. */
typedef struct pd_buf {
  char *data;
  size_t len, cap;
} pd_buf;

void pd_buf_free(pd_buf *b);
int pd_buf_append(pd_buf *b, const char *s, size_t n); /* 0 ok, -1 out of memory */
int pd_buf_printf(pd_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Appends the canonical text of msg: fields in field-number order, two-space
 * indent, one field per line, `name: value` for scalars and `name {` for
 * messages, strings with C escapes (non-ASCII bytes as 3-digit octal, like
 * protoc), floats and doubles in the shortest form that round-trips exactly,
 * enums by name. What it writes parses back to an identical message.
 * `indent` is the starting depth (0 for a top-level message). */
pd_status pd_text_print(const ProtobufCMessage *msg, int indent, pd_buf *out, pd_error *err);

/* The comments of a parsed text, each attached to a place in the message
 * so that a printer moving fields about keeps it beside its field: a
 * comment on a line of its own goes before the field that follows it at
 * the same depth (or, with none before the closing brace, at the end of the
 * message it is in); a comment after code goes after the first field that
 * starts on its line. */
enum { PD_COMMENT_BEFORE, PD_COMMENT_TRAIL, PD_COMMENT_END };
typedef struct pd_comment {
  const void *msg;                       /* the message holding the field (END: the message) */
  const ProtobufCFieldDescriptor *field; /* NULL for END */
  size_t index;
  int where;  /* PD_COMMENT_* */
  char *text; /* "# ...", without trailing blanks */
} pd_comment;

typedef struct pd_comments {
  pd_comment *c;
  size_t n;
} pd_comments;

/* The comments of `text` (as parsed into root, with its source map). */
pd_status pd_text_comments(const char *text, size_t len, const ProtobufCMessage *root, const pd_srcmap *map,
                           pd_comments *out, pd_error *err);
void pd_comments_free(pd_comments *cs);

typedef struct pd_print_opts {
  bool compact;                /* repeated numbers, enums and bools on one line: `shape: [-1, 784]` */
  bool compact_strings;        /* and lists of two or more strings: `inputs: ["a", "b"]` */
  const pd_comments *comments; /* printed at their places; NULL: none */
} pd_print_opts;

/* pd_text_print with options: compact lists, and comments. Every comment is
 * printed: one whose place is not printed goes at the end. */
pd_status pd_text_print_opts(const ProtobufCMessage *msg, int indent, const pd_print_opts *opts, pd_buf *out,
                             pd_error *err);

/* Shortest decimal text that reads back to exactly the same value, read
 * the way protoc reads it (a float field via double): positional for
 * exponents -4 to 15 ("0.1", "100"), else "1e+30"; "inf", "-inf", "nan",
 * "-nan" (a NaN keeps its sign). 32 bytes of buf are always enough. */
void pd_format_double(double v, char *buf, size_t size);
void pd_format_float(float v, char *buf, size_t size);

#endif
