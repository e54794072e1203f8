/* test_textformat.c — lib/textformat against hand-picked edge cases: every
 * scalar type and its limits, every string escape, number spellings, list
 * and map syntax, delimiters, the errors protoc gives (with our exact
 * "FILE:LINE:COL: message" text for several), source positions, the
 * canonical printer and its shortest floats, and round trips. The bulk
 * comparison with protoc is test/scripts/conformance.py; this file pins the
 * behaviour down case by case. Runs under ASan/LeakSanitizer too, so the
 * error paths are also leak checks. */
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "paddle.pb-c.h"
#include "testall.pb-c.h"
#include "text/textformat.h"
#include "text/schema.h"

/* ---- helpers ----------------------------------------------------------------------- */

static ProtobufCMessage *parse_ok(const ProtobufCMessageDescriptor *d, const char *text) {
  pd_error err = {0};
  ProtobufCMessage *m = NULL;
  pd_status st = pd_text_parse(d, text, strlen(text), "t.pbtxt", &m, NULL, &err);
  if (st != PD_OK) fail_msg("expected %s to parse:\n%s\ngot: %s", d->name, text, err.msg);
  assert_non_null(m);
  return m;
}

static Pdtest__All *all_ok(const char *text) { return (Pdtest__All *)parse_ok(&pdtest__all__descriptor, text); }

/* Parses text expecting an error; returns the message (static buffer). */
static const char *parse_err(const ProtobufCMessageDescriptor *d, const char *text) {
  static pd_error err;
  ProtobufCMessage *m = (ProtobufCMessage *)1;
  memset(&err, 0, sizeof err);
  pd_status st = pd_text_parse(d, text, strlen(text), "t.pbtxt", &m, NULL, &err);
  if (st == PD_OK) {
    protobuf_c_message_free_unpacked(m, NULL);
    fail_msg("expected %s to be rejected:\n%s", d->name, text);
  }
  assert_int_equal(st, PD_ERR_INPUT);
  assert_null(m); /* nothing handed out on error */
  return err.msg;
}

static const char *all_err(const char *text) { return parse_err(&pdtest__all__descriptor, text); }

/* The first line of an error (without the quoted source and caret). */
static const char *first_line(const char *msg) {
  static char line[PD_ERROR_MAX];
  size_t n = strcspn(msg, "\n");
  memcpy(line, msg, n);
  line[n] = '\0';
  return line;
}

static void assert_contains(const char *hay, const char *needle) {
  if (!strstr(hay, needle)) fail_msg("expected \"%s\" in:\n%s", needle, hay);
}

static char *print_text(const ProtobufCMessage *m) {
  pd_buf b = {0};
  pd_error err = {0};
  assert_int_equal(pd_text_print(m, 0, &b, &err), PD_OK);
  if (!b.data) return calloc(1, 1);
  return b.data;
}

static uint8_t *pack(const ProtobufCMessage *m, size_t *n) {
  *n = protobuf_c_message_get_packed_size(m);
  uint8_t *b = malloc(*n + 1);
  assert_int_equal(protobuf_c_message_pack(m, b), *n);
  return b;
}

/* Print, re-parse, and compare the encodings; also checks that printing
 * the re-parsed message gives the same text (the printer is a fixpoint). */
static void assert_round_trip(const ProtobufCMessage *m) {
  char *text = print_text(m);
  ProtobufCMessage *again = parse_ok(m->descriptor, text);
  size_t n1, n2;
  uint8_t *b1 = pack(m, &n1), *b2 = pack(again, &n2);
  if (n1 != n2 || memcmp(b1, b2, n1)) fail_msg("round trip changed the message; printed:\n%s", text);
  char *text2 = print_text(again);
  assert_string_equal(text, text2);
  free(b1), free(b2), free(text), free(text2);
  protobuf_c_message_free_unpacked(again, NULL);
}

static void free_msg(void *m) { protobuf_c_message_free_unpacked(m, NULL); }

/* ---- scalars ------------------------------------------------------------------------ */

/* Every scalar type parses into its field, with has_ flags set. */
static void test_every_scalar_type(void **state) {
  (void)state;
  Pdtest__All *a = all_ok("i32: -7 i64: -8000000000 u32: 4000000000 u64: 18000000000000000000\n"
                          "s32: -5 s64: -6 f32: 7 f64: 8 sf32: -9 sf64: -10\n"
                          "fl: 1.5 db: 2.25 bo: true st: \"hi\" by: \"\\000\\001\" color: GREEN\n"
                          "mode: AUTO inner { a: 3 } nested < x: 4 mode: ON >");
  assert_true(a->has_i32 && a->i32 == -7);
  assert_true(a->has_i64 && a->i64 == -8000000000LL);
  assert_true(a->has_u32 && a->u32 == 4000000000U);
  assert_true(a->has_u64 && a->u64 == 18000000000000000000ULL);
  assert_true(a->has_s32 && a->s32 == -5 && a->has_s64 && a->s64 == -6);
  assert_true(a->has_f32 && a->f32 == 7 && a->has_f64 && a->f64 == 8);
  assert_true(a->has_sf32 && a->sf32 == -9 && a->has_sf64 && a->sf64 == -10);
  assert_true(a->has_fl && a->fl == 1.5f && a->has_db && a->db == 2.25);
  assert_true(a->has_bo && a->bo);
  assert_string_equal(a->st, "hi");
  assert_true(a->has_by && a->by.len == 2 && a->by.data[0] == 0 && a->by.data[1] == 1);
  assert_true(a->has_color && a->color == PDTEST__COLOR__GREEN);
  assert_true(a->has_mode && a->mode == PDTEST__ALL__MODE__AUTO);
  assert_int_equal(a->inner->a, 3);
  assert_int_equal(a->nested->x, 4);
  assert_int_equal(a->nested->mode, PDTEST__ALL__MODE__ON);
  assert_string_equal(a->def_st, "hi"); /* unset: still the default */
  assert_int_equal(a->def_i32, 42);
  assert_false(a->has_def_i32);
  free_msg(a);
}

/* Integer limits per type, in decimal, hex and octal; one past each limit
 * is an error naming the range. */
static void test_integer_limits(void **state) {
  (void)state;
  Pdtest__All *a = all_ok("i32: -2147483648 s32: 2147483647 sf32: -0x80000000 i64: -9223372036854775808\n"
                          "s64: 0x7fffffffffffffff sf64: -0x8000000000000000 u32: 0xFFFFFFFF\n"
                          "f32: 037777777777 u64: 18446744073709551615 f64: 01777777777777777777777");
  assert_int_equal(a->i32, INT32_MIN);
  assert_int_equal(a->s32, INT32_MAX);
  assert_int_equal(a->sf32, INT32_MIN);
  assert_true(a->i64 == INT64_MIN && a->s64 == INT64_MAX && a->sf64 == INT64_MIN);
  assert_true(a->u32 == UINT32_MAX && a->f32 == UINT32_MAX);
  assert_true(a->u64 == UINT64_MAX && a->f64 == UINT64_MAX);
  free_msg(a);
  a = all_ok("i32: 0x7fffffff i64: -0 u32: 00 r_i32: [017, 0X1f, 9]");
  assert_int_equal(a->i32, INT32_MAX);
  assert_int_equal(a->i64, 0);
  assert_int_equal(a->r_i32[0], 15);
  assert_int_equal(a->r_i32[1], 31);
  assert_int_equal(a->r_i32[2], 9);
  free_msg(a);

  assert_string_equal(first_line(all_err("i32: 2147483648")),
                      "t.pbtxt:1:6: integer 2147483648 is out of range for \"i32\" (int32: "
                      "-2147483648 to 2147483647) in pdtest.All");
  assert_string_equal(first_line(all_err("i32: -2147483649")),
                      "t.pbtxt:1:6: integer -2147483649 is out of range for \"i32\" (int32: "
                      "-2147483648 to 2147483647) in pdtest.All");
  assert_contains(all_err("u64: 18446744073709551616"), "out of range for \"u64\" (uint64: 0 to 18446744073709551615)");
  assert_contains(all_err("u32: 0x100000000"), "out of range");
  assert_contains(all_err("i64: 9223372036854775808"), "out of range");
  assert_contains(all_err("sf64: -0x8000000000000001"), "out of range");
  assert_contains(all_err("f32: 040000000000"), "out of range");
  assert_contains(all_err("i32: 08"), "octal and cannot contain 8 or 9");
  assert_contains(all_err("i32: 0x"), "\"0x\" must be followed by hex digits");
  assert_contains(all_err("i32: 1.0"), "expected an integer for \"i32\" (int32) in pdtest.All, got \"1.0\"");
  assert_contains(all_err("i32: 1e3"), "expected an integer");
}

/* Unsigned fields take no '-', not even -0; no type takes '+'; a number
 * glued to a name is one bad token. */
static void test_signs_and_glued_numbers(void **state) {
  (void)state;
  assert_string_equal(first_line(all_err("u32: -0")), "t.pbtxt:1:6: \"u32\" (uint32) in pdtest.All cannot be negative");
  assert_contains(all_err("f64: -1"), "cannot be negative");
  assert_string_equal(first_line(all_err("i32: +5")),
                      "t.pbtxt:1:6: expected an integer for \"i32\" (int32) in pdtest.All, got \"+\"");
  assert_contains(all_err("db: +1.5"), "expected a number, inf or nan");
  assert_string_equal(first_line(all_err("i32: 10bar")), "t.pbtxt:1:6: need space between number \"10\" and \"bar\"");
  assert_contains(all_err("db: 1.5x"), "need space between number \"1.5\" and \"x\"");
  assert_contains(all_err("i32:1i64:2"), "need space between number \"1\" and \"i64\"");
  /* '-' is its own token: whitespace and comments may follow it */
  Pdtest__All *a = all_ok("i32: - # minus\n 5 db: -\tinf");
  assert_int_equal(a->i32, -5);
  assert_true(isinf(a->db) && a->db < 0);
  free_msg(a);
}

/* Float spellings protoc reads: 1. .5 1e5 10f, integers, inf/infinity/nan in
 * any case and signed; hex and octal are not decimal numbers. */
static void test_float_spellings(void **state) {
  (void)state;
  Pdtest__All *a = all_ok("r_db: [1., .5, 1e5, 1E-2, 10f, 2.5F, 7, -3, 99999999999999999999999, "
                          "inf, -Infinity, INF, NaN, -nan, 0, -0, 1.f, .5e1]");
  double want[] = {1, .5, 1e5, 1e-2, 10, 2.5, 7, -3, 1e23, INFINITY, -INFINITY, INFINITY};
  assert_int_equal(a->n_r_db, 18);
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) assert_true(a->r_db[i] == want[i]);
  assert_true(isnan(a->r_db[12]) && !signbit(a->r_db[12]));
  assert_true(isnan(a->r_db[13]) && signbit(a->r_db[13]));
  assert_true(a->r_db[14] == 0 && !signbit(a->r_db[14]));
  assert_true(a->r_db[15] == 0 && signbit(a->r_db[15]));
  assert_true(a->r_db[16] == 1 && a->r_db[17] == 5);
  free_msg(a);
  assert_string_equal(first_line(all_err("db: 0x10")),
                      "t.pbtxt:1:5: hex and octal integers are not allowed for \"db\" (double) in "
                      "pdtest.All, got \"0x10\"");
  assert_contains(all_err("db: 017"), "hex and octal integers are not allowed");
  assert_contains(all_err("db: 1e"), "\"e\" in number \"1e\" must be followed by an exponent");
  assert_contains(all_err("db: 1.5.3"), "already has a decimal point");
  assert_contains(all_err("db: infx"), "expected a number, inf or nan for \"db\" (double) in pdtest.All, got \"infx\"");
  assert_contains(all_err("db: - - 1"), "expected a number, inf or nan");
  assert_contains(all_err("inner.5"), "need space between identifier \"inner\" and \".\"");
}

/* Floats are read as doubles and then narrowed as protoc narrows them:
 * FLT_MAX + half an ulp still gives FLT_MAX, beyond that infinity. */
static void test_float_narrowing(void **state) {
  (void)state;
  Pdtest__All *a = all_ok("r_fl: [0.1, 3.4028235e38, 3.4028235677973366e38, 3.402823567797337e38, 1e39, "
                          "-1e39, 1e-46, 7.006492321624087e-46, 16777217]");
  assert_true(a->r_fl[0] == 0.1f);
  assert_true(a->r_fl[1] == FLT_MAX && a->r_fl[2] == FLT_MAX);
  assert_true(isinf(a->r_fl[3]) && isinf(a->r_fl[4]) && a->r_fl[5] < 0 && isinf(a->r_fl[5]));
  assert_true(a->r_fl[6] == 0 && a->r_fl[7] == 0x1p-149f && a->r_fl[8] == 16777216.0f);
  free_msg(a);
}

/* Bools: true True t 1 false False f 0 (and 0 or 1 in hex/octal), nothing else. */
static void test_bool_spellings(void **state) {
  (void)state;
  Pdtest__All *a = all_ok("r_bo: [true, True, t, 1, 0x1, false, False, f, 0, 00]");
  assert_int_equal(a->n_r_bo, 10);
  for (int i = 0; i < 10; i++) assert_int_equal(a->r_bo[i], i < 5);
  free_msg(a);
  assert_string_equal(first_line(all_err("bo: T")),
                      "t.pbtxt:1:5: expected true, false, 1 or 0 for \"bo\" (bool) in pdtest.All, got \"T\"");
  assert_contains(all_err("bo: TRUE"), "expected true, false, 1 or 0");
  assert_contains(all_err("bo: 2"), "integer 2 is out of range for \"bo\" (bool: 0 or 1)");
  assert_contains(all_err("bo: -1"), "expected true, false, 1 or 0");
  assert_contains(all_err("bo: \"true\""), "expected true, false, 1 or 0");
}

/* Enums by name or number (hex too, extremes too); unknown names get a
 * suggestion, unknown numbers are an error in proto2. */
static void test_enums(void **state) {
  (void)state;
  Pdtest__All *a = all_ok("r_color: [RED, 1, 0x2, -1, NEGATIVE, 2147483647, -2147483648, HUGE, TINY]");
  int want[] = {0, 1, 2, -1, -1, INT32_MAX, INT32_MIN, INT32_MAX, INT32_MIN};
  assert_int_equal(a->n_r_color, 9);
  for (int i = 0; i < 9; i++) assert_int_equal(a->r_color[i], want[i]);
  free_msg(a);
  const char *e = parse_err(&paddle__var_desc__descriptor, "name: \"x\"\ndtype: FLAOT32\n");
  assert_string_equal(e, "t.pbtxt:2:8: unknown enum value \"FLAOT32\" for \"dtype\" (paddle.DataType) "
                         "in paddle.VarDesc (did you mean \"FLOAT32\"?)\n"
                         "  dtype: FLAOT32\n"
                         "         ^");
  assert_string_equal(first_line(all_err("color: 7")),
                      "t.pbtxt:1:8: unknown enum number 7 for \"color\" (pdtest.Color) in pdtest.All");
  assert_contains(all_err("color: -RED"), "expected an integer for \"color\" (pdtest.Color)");
  assert_contains(all_err("color: 2147483648"), "out of range");
  assert_contains(all_err("color: \"RED\""), "expected an enum name or number");
  assert_contains(all_err("color: red"), "unknown enum value \"red\""); /* names are case-sensitive */
}

/* ---- strings --------------------------------------------------------------------------- */

/* Every escape protoc takes, in both quote styles, adjacent literals joined. */
static void test_every_escape(void **state) {
  (void)state;
  Pdtest__All *a = all_ok("r_by: \"\\n\\t\\r\\\\\\'\\\"\\a\\b\\f\\v\\?\"\n" /* simple escapes */
                          "r_by: '\\0\\12\\101\\1011\\777\\400'\n"          /* octal: 1-3 digits */
                          "r_by: \"\\x0\\x41\\xfff\"\n"                     /* hex: 1-2 digits */
                          "r_by: \"\\u00e9\\u4e2d\\ud83d\\ude00\\ud800x\\U0001F600\\U0010ffff\\U00110000\"\n"
                          "r_by: \"a\" 'b' \"\" \"c'\" 'd\"'\n" /* adjacent literals */
                          "r_by: 'raw\ttab\x01\x7f\xc3\xa9'");  /* raw bytes are kept */
  const ProtobufCBinaryData *b = a->r_by;
  assert_int_equal(a->n_r_by, 6);
  assert_memory_equal(b[0].data, "\n\t\r\\'\"\a\b\f\v?", 11);
  assert_int_equal(b[0].len, 11);
  assert_int_equal(b[1].len, 7);
  assert_memory_equal(b[1].data, "\0\nAA1\xff\0", 7);
  assert_int_equal(b[2].len, 4);
  assert_memory_equal(b[2].data,
                      "\0A\xff"
                      "f",
                      4);
  /* \u00e9 é, \u4e2d 中, surrogate pair 😀, lone surrogate as 3 bytes, \U, max, out of range kept as
   * text */
  const char want3[] = "\xc3\xa9\xe4\xb8\xad\xf0\x9f\x98\x80\xed\xa0\x80x\xf0\x9f\x98\x80\xf4\x8f"
                       "\xbf\xbf\\U00110000";
  assert_int_equal(b[3].len, sizeof want3 - 1);
  assert_memory_equal(b[3].data, want3, sizeof want3 - 1);
  assert_int_equal(b[4].len, 6);
  assert_memory_equal(b[4].data, "abc'd\"", 6);
  assert_memory_equal(b[5].data, "raw\ttab\x01\x7f\xc3\xa9", b[5].len);
  free_msg(a);
}

/* What protoc's tokenizer refuses inside strings. */
static void test_invalid_escapes_and_newlines(void **state) {
  (void)state;
  assert_string_equal(all_err("st: \"ab\\qc\""),
                      "t.pbtxt:1:8: invalid escape \"\\q\" in string literal (valid: \\n \\t \\r \\a \\b "
                      "\\f \\v \\\\ \\' \\\" \\? \\NNN \\xHH \\uHHHH \\UHHHHHHHH)\n"
                      "  st: \"ab\\qc\"\n"
                      "         ^");
  assert_contains(all_err("st: \"\\8\""), "invalid escape \"\\8\"");
  assert_contains(all_err("st: \"\\XA\""), "invalid escape \"\\X\"");
  assert_contains(all_err("st: \"\\x\""), "\"\\x\" must be followed by hex digits");
  assert_contains(all_err("st: \"\\xg\""), "\"\\x\" must be followed by hex digits");
  assert_contains(all_err("st: \"\\u12\""), "\"\\u\" must be followed by four hex digits");
  assert_contains(all_err("st: \"\\U00200000\""), "eight hex digits up to 0010ffff");
  assert_contains(all_err("st: \"\\U0000001\""), "eight hex digits up to 0010ffff");
  assert_string_equal(first_line(all_err("i32: 1\nst: \"ab\ncd\"")),
                      "t.pbtxt:2:8: newline inside a string literal (close it with \" on this line; "
                      "write \\n for a newline)");
  assert_contains(all_err("st: \"abc"), "t.pbtxt:1:5: string literal is never closed (missing \")");
  assert_contains(all_err("st: 'abc\\'"), "never closed");
  assert_contains(all_err("st: 5"), "expected a string for \"st\" (string) in pdtest.All, got \"5\"");
}

/* protobuf-c keeps strings NUL-terminated: a NUL in a string field is an
 * error (protoc would accept it); bytes fields take NULs fine. */
static void test_nul_only_in_bytes(void **state) {
  (void)state;
  assert_string_equal(first_line(all_err("st: \"a\\0b\"")),
                      "t.pbtxt:1:5: \"st\" (string) in pdtest.All cannot hold a NUL byte: protobuf-c "
                      "keeps strings NUL-terminated (use a bytes field)");
  assert_contains(all_err("r_st: ['ok', \"\\u0000\"]"), "cannot hold a NUL byte");
  Pdtest__All *a = all_ok("by: \"a\\0b\" c_bytes: '\\x00'");
  assert_int_equal(a->by.len, 3);
  assert_int_equal(a->choice_case, PDTEST__ALL__CHOICE_C_BYTES);
  assert_int_equal(a->c_bytes.len, 1);
  free_msg(a);
  /* a raw NUL byte in the text is an error anywhere, even in a comment */
  static const char raw[] = "st: \"a\0b\"";
  pd_error err = {0};
  ProtobufCMessage *m;
  assert_int_equal(pd_text_parse(&pdtest__all__descriptor, raw, sizeof raw - 1, "t", &m, NULL, &err), PD_ERR_INPUT);
  assert_contains(err.msg, "NUL byte inside a string literal");
  static const char raw2[] = "i32: 1 # a\0b\n";
  assert_int_equal(pd_text_parse(&pdtest__all__descriptor, raw2, sizeof raw2 - 1, "t", &m, NULL, &err), PD_ERR_INPUT);
  assert_contains(err.msg, "t:1:11: control character 0x00 outside a string");
}

/* ---- structure ---------------------------------------------------------------------------- */

/* `:` is required before scalars and optional before messages; `,` or `;`
 * may end a field (one of them); comments run to the end of the line. */
static void test_separators_and_comments(void **state) {
  (void)state;
  Pdtest__All *a = all_ok("# leading comment\r\n"
                          "i32: 1, i64: 2; u32: 3\n"
                          "inner: { a: 4; }, nested { x: 5 } # trailing { comment\n"
                          "st:'x'r_i32:[]fl:.5");
  assert_true(a->i32 == 1 && a->i64 == 2 && a->u32 == 3 && a->inner->a == 4 && a->nested->x == 5);
  assert_int_equal(a->n_r_i32, 0);
  free_msg(a);
  assert_string_equal(first_line(all_err("i32 1")),
                      "t.pbtxt:1:5: expected \":\" after \"i32\" (int32) in pdtest.All, got \"1\"");
  assert_string_equal(first_line(all_err("i32: 1;; i64: 2")),
                      "t.pbtxt:1:8: expected a field name of pdtest.All, got \";\"");
  assert_contains(all_err("i32: 1,; i64: 2"), "expected a field name");
  assert_contains(all_err("i32: 1 // not a comment"), "expected a field name of pdtest.All, got \"/\"");
  assert_contains(all_err("inner: 5"),
                  "expected \"{\" or \"<\" to start \"inner\" (pdtest.Inner) in pdtest.All, got \"5\"");
}

/* `{ }` and `< >` both delimit messages, and must match. */
static void test_angle_delimiters(void **state) {
  (void)state;
  Pdtest__All *a = all_ok("inner < a: 1 child { a: 2 child < > } > r_inner: <>");
  assert_int_equal(a->inner->a, 1);
  assert_int_equal(a->inner->child->a, 2);
  assert_non_null(a->inner->child->child);
  assert_int_equal(a->n_r_inner, 1);
  free_msg(a);
  assert_string_equal(all_err("inner {\n  a: 1\n>"),
                      "t.pbtxt:3:1: expected \"}\" to close the \"{\" at 1:7, got \">\"\n"
                      "  >\n"
                      "  ^");
  assert_contains(all_err("inner <a:1}"), "t.pbtxt:1:11: expected \">\" to close the \"<\" at 1:7, got \"}\"");
}

/* Unclosed and stray delimiters point at the culprit. */
static void test_unbalanced_delimiters(void **state) {
  (void)state;
  assert_string_equal(all_err("i32: 1\ninner {\n  a: 1\n"),
                      "t.pbtxt:2:7: \"{\" is never closed: expected \"}\" before the end of input\n"
                      "  inner {\n"
                      "        ^");
  assert_string_equal(first_line(all_err("inner { a: 1 } }")), "t.pbtxt:1:16: unexpected \"}\": no message is open");
  assert_contains(all_err("r_i32: [1, 2"), "expected \",\" or \"]\" in the list for \"r_i32\", got end of input");
  assert_contains(all_err("inner { a: [1] }"), "expected an integer");
}

/* List syntax for scalars and messages; `[]` is empty; no trailing comma;
 * repeated fields may also be given again (they append). */
static void test_list_syntax(void **state) {
  (void)state;
  Pdtest__All *a = all_ok("r_i32: [1, -2, 0x3] r_i32: 4 r_st: ['a', \"b\" \"c\"] r_inner [ {a: 1}, <a: 2> ]\n"
                          "r_inner: [] r_inner: [{}] packed_i32: [5] r_color: [RED, 2]");
  assert_int_equal(a->n_r_i32, 4);
  assert_int_equal(a->r_i32[1], -2);
  assert_int_equal(a->r_i32[3], 4);
  assert_int_equal(a->n_r_st, 2);
  assert_string_equal(a->r_st[1], "bc");
  assert_int_equal(a->n_r_inner, 3);
  assert_int_equal(a->r_inner[1]->a, 2);
  assert_int_equal(a->n_packed_i32, 1);
  free_msg(a);
  assert_string_equal(all_err("r_i32: [1, 2,]"), "t.pbtxt:1:13: trailing \",\" before \"]\" in the list for \"r_i32\"\n"
                                                 "  r_i32: [1, 2,]\n"
                                                 "              ^");
  assert_contains(all_err("r_i32: [1; 2]"), "expected \",\" or \"]\" in the list for \"r_i32\", got \";\"");
  assert_contains(all_err("r_i32: [,]"), "expected an integer");
  assert_contains(all_err("i32: [1]"), "expected an integer for \"i32\" (int32) in pdtest.All, got \"[\"");
  assert_contains(all_err("r_i32 [1]"), "expected \":\" after \"r_i32\"");
  assert_contains(all_err("inner [{}]"), "expected \"{\" or \"<\" to start \"inner\"");
}

/* A repeated field grows geometrically: many elements stay linear and correct. */
static void test_many_repeated_elements(void **state) {
  (void)state;
  pd_buf b = {0};
  for (int i = 0; i < 100000; i++) pd_buf_printf(&b, "r_i64: %d r_st: \"s%d\"\n", i, i);
  Pdtest__All *a = all_ok(b.data);
  assert_int_equal(a->n_r_i64, 100000);
  assert_int_equal(a->r_i64[99999], 99999);
  assert_string_equal(a->r_st[12345], "s12345");
  free_msg(a);
  pd_buf_free(&b);
}

/* A singular field given twice is an error, messages too; so are two
 * members of one oneof. */
static void test_singular_twice_and_oneof(void **state) {
  (void)state;
  assert_string_equal(all_err("i32: 1\ni32: 2"),
                      "t.pbtxt:2:1: field \"i32\" of pdtest.All is given twice (it is not repeated)\n"
                      "  i32: 2\n"
                      "  ^");
  assert_contains(all_err("inner {} inner {}"), "t.pbtxt:1:10: field \"inner\" of pdtest.All is given twice");
  assert_contains(all_err("st: '' st: ''"), "given twice");
  assert_string_equal(first_line(all_err("c_int: 1 c_str: \"x\"")),
                      "t.pbtxt:1:10: field \"c_str\" of pdtest.All is in the same oneof as \"c_int\", "
                      "which is already set (give only one)");
  assert_contains(all_err("c_msg {} c_enum: RED"), "in the same oneof as \"c_msg\"");
  assert_contains(all_err("c_str: 'a' c_str: 'b'"), "given twice");
  Pdtest__All *a = all_ok("c_msg { a: 1 }");
  assert_int_equal(a->choice_case, PDTEST__ALL__CHOICE_C_MSG);
  assert_int_equal(a->c_msg->a, 1);
  free_msg(a);
  a = all_ok("c_str: 'x'");
  assert_int_equal(a->choice_case, PDTEST__ALL__CHOICE_C_STR);
  assert_string_equal(a->c_str, "x");
  free_msg(a);
}

/* Unknown fields get a did-you-mean; extension syntax is rejected. */
static void test_unknown_field_suggestion(void **state) {
  (void)state;
  const char *net = "name: \"mlp\"\n"
                    "op {\n"
                    "  type: \"fc\"\n"
                    "  inptus: \"x\"\n"
                    "}\n";
  assert_string_equal(parse_err(&paddle__net_desc__descriptor, net),
                      "t.pbtxt:4:3: unknown field \"inptus\" in paddle.OpDesc (did you mean \"inputs\"?)\n"
                      "    inptus: \"x\"\n"
                      "    ^");
  assert_string_equal(first_line(all_err("zzzz: 1")), "t.pbtxt:1:1: unknown field \"zzzz\" in pdtest.All");
  assert_string_equal(first_line(all_err("I32: 1")),
                      "t.pbtxt:1:1: unknown field \"I32\" in pdtest.All (did you mean \"i32\"?)");
  assert_string_equal(first_line(all_err("[pdtest.ext]: 1")),
                      "t.pbtxt:1:1: unknown field \"[pdtest.ext]\" in pdtest.All (extensions and Any URLs "
                      "are not supported)");
  assert_contains(all_err("1: 5"), "expected a field name of pdtest.All, got \"1\"");
}

/* A missing proto2 required field names its path, at the message. */
static void test_required_missing(void **state) {
  (void)state;
  const char *net = "op { type: \"a\" }\n"
                    "op { type: \"b\" }\n"
                    "op { type: \"c\" }\n"
                    "op { inputs: \"x\" }\n";
  assert_string_equal(parse_err(&paddle__net_desc__descriptor, net),
                      "t.pbtxt:4:1: missing required field op[3].type (paddle.OpDesc.type)\n"
                      "  op { inputs: \"x\" }\n"
                      "  ^");
  assert_string_equal(first_line(parse_err(&pdtest__top__descriptor, "all { }")),
                      "t.pbtxt:1:1: missing required field name (pdtest.Top.name)");
  assert_string_equal(first_line(parse_err(&pdtest__top__descriptor,
                                           "name: 'n'\nalls {}\nalls { reqs [{ id: 1 must {} }, {must {}}] }")),
                      "t.pbtxt:3:33: missing required field alls[1].reqs[1].id (pdtest.Req.id)");
  assert_contains(parse_err(&pdtest__top__descriptor, "name: 'n' all { req { id: 1 } }"),
                  "missing required field all.req.must (pdtest.Req.must)");
  ProtobufCMessage *m = parse_ok(&pdtest__top__descriptor, "name: ''  all { req { id: 0 must <> } }");
  free_msg(m);
}

/* Map fields are repeated key/value entries; protoc always writes both, so
 * a missing key or value is filled with its default. */
static void test_map_entries(void **state) {
  (void)state;
  Pdtest__All *a = all_ok("m_str_msg { key: \"k\" value { a: 1 } }\n"
                          "m_str_msg < value: { a: 2 } key: 'j' >\n"
                          "m_str_msg [{ key: 'only key' }, { value {} }]\n"
                          "m_i32_str { key: 5 } m_bool_enum { value: BLUE } m_u64_db {}");
  assert_int_equal(a->n_m_str_msg, 4);
  assert_string_equal(a->m_str_msg[0]->key, "k");
  assert_int_equal(a->m_str_msg[0]->value->a, 1);
  assert_string_equal(a->m_str_msg[1]->key, "j");
  assert_non_null(a->m_str_msg[2]->value); /* filled */
  assert_string_equal(a->m_str_msg[3]->key, "");
  assert_string_equal(a->m_i32_str[0]->value, "");
  assert_true(a->m_bool_enum[0]->has_key && !a->m_bool_enum[0]->key);
  assert_true(a->m_u64_db[0]->has_key && a->m_u64_db[0]->has_value);
  char *text = print_text(&a->base);
  assert_non_null(strstr(text, "m_str_msg {\n  key: \"k\"\n  value {\n    a: 1\n  }\n}\n"));
  assert_non_null(strstr(text, "m_u64_db {\n  key: 0\n  value: 0\n}\n"));
  free(text);
  assert_round_trip(&a->base);
  free_msg(a);
  /* protoc would write an empty Req here, which protobuf-c cannot hold */
  assert_string_equal(first_line(all_err("m_str_req { key: 'a' }")),
                      "t.pbtxt:1:1: missing required field m_str_req[0].value.id (pdtest.Req.id): a "
                      "map entry without a value gets an empty pdtest.Req, which lacks it");
  a = all_ok("m_str_req { key: 'a' value { id: 1 must {} } }");
  assert_int_equal(a->m_str_req[0]->value->id, 1);
  free_msg(a);
  assert_contains(all_err("m_i32_str { key: 1 key: 2 }"), "field \"key\" of pdtest.All.MI32StrEntry is given twice");
  assert_contains(all_err("m_i32_str { key: 'a' }"), "expected an integer");

  Paddle__NetDesc *n = (Paddle__NetDesc *)parse_ok(&paddle__net_desc__descriptor,
                                                   "op { type: \"fc\" attrs { key: \"size\" value { i: 10 } } "
                                                   "attrs { key: \"act\" value { s: \"relu\" } } }");
  assert_int_equal(n->op[0]->n_attrs, 2);
  assert_string_equal(n->op[0]->attrs[1]->key, "act");
  assert_string_equal(n->op[0]->attrs[1]->value->s, "relu");
  free_msg(n);
}

/* Source positions of messages and field occurrences, e.g. NetDesc op[2]
 * and the entries of its attrs map. */
static void test_srcmap_positions(void **state) {
  (void)state;
  const char *text = "name: \"n\"\n"                                /* 1 */
                     "op { type: \"a\" }\n"                         /* 2 */
                     "op { type: \"b\" }\n"                         /* 3 */
                     "  op {\n"                                     /* 4 */
                     "    type: \"c\"\n"                            /* 5 */
                     "    inputs: [\"x\", \"y\"]\n"                 /* 6 */
                     "    attrs { key: \"size\" value { i: 3 } }\n" /* 7 */
                     "    attrs [{ key: \"act\" }, <key: \"z\">]\n" /* 8 */
                     "  }\n";
  pd_srcmap map = {0};
  pd_error err = {0};
  ProtobufCMessage *m = NULL;
  assert_int_equal(pd_text_parse(&paddle__net_desc__descriptor, text, strlen(text), "t", &m, &map, &err), PD_OK);
  Paddle__NetDesc *net = (Paddle__NetDesc *)m;
  const ProtobufCFieldDescriptor *f_op =
      protobuf_c_message_descriptor_get_field_by_name(&paddle__net_desc__descriptor, "op");
  const ProtobufCFieldDescriptor *f_in =
      protobuf_c_message_descriptor_get_field_by_name(&paddle__op_desc__descriptor, "inputs");
  const ProtobufCFieldDescriptor *f_at =
      protobuf_c_message_descriptor_get_field_by_name(&paddle__op_desc__descriptor, "attrs");
  const ProtobufCFieldDescriptor *f_key =
      protobuf_c_message_descriptor_get_field_by_name(&paddle__op_desc__attrs_entry__descriptor, "key");
  int line = 0, col = 0;
  assert_true(pd_srcmap_find(&map, net, NULL, 0, &line, &col));
  assert_true(line == 1 && col == 1);
  assert_true(pd_srcmap_find(&map, net, f_op, 2, &line, &col));
  assert_true(line == 4 && col == 3);
  Paddle__OpDesc *op2 = net->op[2];
  assert_true(pd_srcmap_find(&map, op2, NULL, 0, &line, &col));
  assert_true(line == 4 && col == 3);
  assert_true(pd_srcmap_find(&map, op2, f_in, 1, &line, &col)); /* list element: at the element */
  assert_true(line == 6 && col == 19);
  assert_true(pd_srcmap_find(&map, op2, f_at, 0, &line, &col));
  assert_true(line == 7 && col == 5);
  assert_true(pd_srcmap_find(&map, op2, f_at, 2, &line, &col));
  assert_true(line == 8 && col == 28);
  assert_true(pd_srcmap_find(&map, op2->attrs[1], NULL, 0, &line, &col));
  assert_true(line == 8 && col == 12);
  assert_true(pd_srcmap_find(&map, op2->attrs[0], f_key, 0, &line, &col));
  assert_true(line == 7 && col == 13);
  line = col = -5;
  assert_false(pd_srcmap_find(&map, op2, f_at, 3, &line, &col)); /* no such element */
  assert_true(line == -5 && col == -5);
  assert_false(pd_srcmap_find(&map, net->op[0], f_in, 0, &line, &col));
  free_msg(m);
  pd_srcmap_free(&map);
}

/* On error nothing is handed out or leaked (ASan/LSan check the latter), and
 * the source map is left as it was. */
static void test_no_leak_on_error(void **state) {
  (void)state;
  static const char *const bad[] = {
      "r_st: ['a', 'b'] inner { child { s: 'x' r: [1, 2] } } m_str_msg { key: 'k' value { s: 'v' } "
      "} i32: x",
      "reqs { id: 1 must { s: 'deep' child { s: 'deeper' } } } reqs { must {} }",
      "c_msg { s: 'x' } c_str: 'y'",
      "r_by: ['\\0\\1', 'x'] st: 'y' st: 'z'",
      "m_i32_str [{ key: 1 value: 'a' }, { key: 2 value: 'b' }, { value: 'c' } ] r_inner { s: 'x' "
      "} }",
      "inner { s: 'abc' ",
      "r_st: 'a' r_st: 'b' r_st: 'c' r_st: 'd' r_st: 'e' r_st: \"\\q\"",
  };
  pd_srcmap map = {0};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    pd_error err = {0};
    ProtobufCMessage *m = (ProtobufCMessage *)&err;
    assert_int_equal(pd_text_parse(&pdtest__all__descriptor, bad[i], strlen(bad[i]), "t", &m, &map, &err),
                     PD_ERR_INPUT);
    assert_null(m);
    assert_int_equal(map.n, 0);
    assert_true(err.msg[0] != '\0');
  }
  pd_srcmap_free(&map);
  /* A map already holding entries keeps them. */
  ProtobufCMessage *ok = NULL, *m = NULL;
  pd_error err = {0};
  assert_int_equal(pd_text_parse(&pdtest__all__descriptor, "i32: 1", 6, "t", &ok, &map, &err), PD_OK);
  size_t n = map.n;
  assert_int_equal(pd_text_parse(&pdtest__all__descriptor, "i32: 1 i32: 2", 13, "t", &m, &map, &err), PD_ERR_INPUT);
  assert_int_equal(map.n, n);
  free_msg(ok);
  pd_srcmap_free(&map);
}

/* Writes, ending at buf + cap, `inner` (field 17) holding `children` nested
 * `child` messages (field 4); returns where it starts. */
static uint8_t *nested_binary(uint8_t *buf, size_t cap, int children) {
  uint8_t *p = buf + cap;
  for (int i = 0; i <= children; i++) {
    size_t len = (size_t)(buf + cap - p);
    uint8_t v[10];
    int n = 0;
    do v[n++] = (uint8_t)((len & 0x7f) | (len > 0x7f ? 0x80 : 0)), len >>= 7;
    while (len);
    p -= n;
    memcpy(p, v, (size_t)n);
    if (i < children)
      *--p = 0x22; /* field 4, length-delimited */
    else
      p -= 2, p[0] = 0x8a, p[1] = 0x01; /* field 17 */
  }
  return p;
}

/* The binary scan before unpack: 100 levels below the top pass (and unpack
 * and print), 101 are refused with the byte offset, malformed bytes are left
 * to unpack to refuse, and 100,000 levels cost no recursion. */
static void test_binary_nesting_limit(void **state) {
  (void)state;
  size_t cap = 1 << 20;
  uint8_t *buf = malloc(cap);
  assert_non_null(buf);
  pd_error err = {0};
  uint8_t *p = nested_binary(buf, cap, PD_PB_MAX_DEPTH - 1);
  size_t len = (size_t)(buf + cap - p);
  assert_int_equal(pd_pb_check_depth(&pdtest__all__descriptor, p, len, "m.bin", &err), PD_OK);
  ProtobufCMessage *m = protobuf_c_message_unpack(&pdtest__all__descriptor, NULL, len, p);
  assert_non_null(m);
  pd_buf b = {0};
  assert_int_equal(pd_text_print(m, 0, &b, &err), PD_OK);
  pd_buf_free(&b);
  protobuf_c_message_free_unpacked(m, NULL);
  p = nested_binary(buf, cap, PD_PB_MAX_DEPTH);
  len = (size_t)(buf + cap - p);
  assert_int_equal(pd_pb_check_depth(&pdtest__all__descriptor, p, len, "m.bin", &err), PD_ERR_INPUT);
  assert_contains(err.msg, "m.bin: messages are nested more than 100 deep (at byte ");
  p = nested_binary(buf, cap, 100000);
  len = (size_t)(buf + cap - p);
  assert_int_equal(pd_pb_check_depth(&pdtest__all__descriptor, p, len, "m.bin", &err), PD_ERR_INPUT);
  /* a length past the end, a varint that never ends: not the scan's to refuse */
  const uint8_t past[] = {0x8a, 0x01, 0x7f, 0x22}, endless[] = {0x8a, 0x01, 0x02, 0xff, 0xff};
  assert_int_equal(pd_pb_check_depth(&pdtest__all__descriptor, past, sizeof past, "m.bin", &err), PD_OK);
  assert_int_equal(pd_pb_check_depth(&pdtest__all__descriptor, endless, sizeof endless, "m.bin", &err), PD_OK);
  free(buf);
}

/* Nesting deeper than the limit is an error, not a stack overflow. */
static void test_nesting_limit(void **state) {
  (void)state;
  pd_buf b = {0};
  pd_buf_append(&b, "inner ", 6);
  for (int i = 0; i < PD_PB_MAX_DEPTH; i++) pd_buf_append(&b, "{ child ", 8);
  pd_buf_append(&b, "{", 1);
  for (int i = 0; i < PD_PB_MAX_DEPTH + 1; i++) pd_buf_append(&b, "}", 1);
  assert_contains(all_err(b.data), "messages are nested more than 100 deep");
  b.len = 0;
  pd_buf_append(&b, "inner ", 6);
  for (int i = 0; i < PD_PB_MAX_DEPTH - 1; i++) pd_buf_append(&b, "{ child ", 8);
  pd_buf_append(&b, "{", 1);
  for (int i = 0; i < PD_PB_MAX_DEPTH; i++) pd_buf_append(&b, "}", 1);
  Pdtest__All *a = all_ok(b.data);
  free_msg(a);
  pd_buf_free(&b);
}

/* ---- printer ------------------------------------------------------------------------------- */

/* Canonical text: field-number order (fl = 11 before db = 12 although db is
 * declared first), two-space indent, strings escaped like protoc, enums by name. */
static void test_canonical_print(void **state) {
  (void)state;
  Pdtest__All *a = all_ok("db: 0.5 fl: 0.1 st: 'a\"b\\'c\\\\\\n\\t\\r\\001\\177\\377\xc3\xa9' color: 2\n"
                          "nested { mode: 7 } r_i32: [3, -4] inner { child { a: 1 } } c_int: 9\n"
                          "def_st: 'hi' by: '' bo: f");
  char *text = print_text(&a->base);
  assert_string_equal(text, "fl: 0.1\n"
                            "db: 0.5\n"
                            "bo: false\n"
                            "st: \"a\\\"b\\'c\\\\\\n\\t\\r\\001\\177\\377\\303\\251\"\n"
                            "by: \"\"\n"
                            "color: BLUE\n"
                            "inner {\n"
                            "  child {\n"
                            "    a: 1\n"
                            "  }\n"
                            "}\n"
                            "nested {\n"
                            "  mode: AUTO\n"
                            "}\n"
                            "r_i32: 3\n"
                            "r_i32: -4\n"
                            "c_int: 9\n"
                            "def_st: \"hi\"\n");
  free(text);
  /* indent is the starting depth */
  pd_buf b = {0};
  pd_error err = {0};
  assert_int_equal(pd_text_print(&a->nested->base, 2, &b, &err), PD_OK);
  assert_string_equal(b.data, "    mode: AUTO\n");
  pd_buf_free(&b);
  free_msg(a);
}

/* Shortest text that reads back exactly: float fields as float, doubles as
 * double; -0, denormals, extremes, inf and nan. */
static void test_shortest_floats(void **state) {
  (void)state;
  char buf[64];
  struct {
    float v;
    const char *want;
  } fs[] = {{0.1f, "0.1"},
            {1e30f, "1e+30"},
            {-0.0f, "-0"},
            {0.0f, "0"},
            {1.0f / 3, "0.33333334"},
            {0x1p-149f, "1e-45"},
            {0x1p-126f, "1.1754944e-38"},
            {FLT_MAX, "3.4028235e+38"},
            {16777216.0f, "16777216"},
            {123456789.0f, "123456790"},
            {INFINITY, "inf"},
            {-INFINITY, "-inf"},
            {NAN, "nan"},
            {-NAN, "-nan"}};
  for (size_t i = 0; i < sizeof fs / sizeof fs[0]; i++) {
    pd_format_float(fs[i].v, buf, sizeof buf);
    if (strcmp(buf, fs[i].want)) fail_msg("float #%zu: want %s, got %s", i, fs[i].want, buf);
  }
  struct {
    double v;
    const char *want;
  } ds[] = {{0.1, "0.1"},
            {1e30, "1e+30"},
            {-0.0, "-0"},
            {0.1 + 0.2, "0.30000000000000004"},
            {0x1p-1074, "5e-324"},
            {0x1p-1022, "2.2250738585072014e-308"},
            {DBL_MAX, "1.7976931348623157e+308"},
            {1.0 / 3, "0.3333333333333333"},
            {(double)0.1f, "0.10000000149011612"},
            {100, "100"},
            {1e16, "1e+16"},
            {-1.5, "-1.5"},
            {INFINITY, "inf"},
            {-INFINITY, "-inf"},
            {NAN, "nan"}};
  for (size_t i = 0; i < sizeof ds / sizeof ds[0]; i++) {
    pd_format_double(ds[i].v, buf, sizeof buf);
    if (strcmp(buf, ds[i].want)) fail_msg("double #%zu: want %s, got %s", i, ds[i].want, buf);
  }
  /* and the printer uses them per field type */
  Pdtest__All *a = all_ok("fl: 0.1 db: 0.1 r_fl: [1e-45, -0, nan, -inf] r_db: [5e-324, -nan]");
  char *text = print_text(&a->base);
  assert_string_equal(text, "fl: 0.1\ndb: 0.1\nr_fl: 1e-45\nr_fl: -0\nr_fl: nan\nr_fl: -inf\n"
                            "r_db: 5e-324\nr_db: -nan\n");
  free(text);
  assert_round_trip(&a->base);
  free_msg(a);
}

/* Significant digits in a printed number ("-1.25e+30" has 3, "100" 1). */
static int sig_digits(const char *s) {
  char d[64];
  int n = 0;
  for (; *s && *s != 'e'; s++)
    if (*s >= '0' && *s <= '9' && (n || *s != '0')) d[n++] = *s;
  while (n > 1 && d[n - 1] == '0') n--;
  return n ? n : 1;
}

/* Random floats and doubles (and every power of two) read back bit for bit
 * through the parser from their text, and one digit fewer would not. */
static void test_shortest_floats_sweep(void **state) {
  (void)state;
  char buf[64], text[96], fewer[64];
  uint64_t x = 88172645463325252ULL;
  for (int i = 0; i < 60000 + 2 * 1100; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    float f;
    double d;
    uint32_t fb = (uint32_t)x;
    memcpy(&f, &fb, sizeof f);
    memcpy(&d, &x, sizeof d);
    if (i >= 60000) { /* powers of two, where bisection would not do */
      int k = (i - 60000) % 1100;
      d = ldexp(1, k - 1074);
      f = ldexpf(1, k % 277 - 149);
    }
    if (isnan(f) || isnan(d) || isinf(d)) continue;
    pd_format_float(f, buf, sizeof buf);
    snprintf(text, sizeof text, "fl: %s", buf);
    Pdtest__All *a = all_ok(text);
    if (memcmp(&a->fl, &f, sizeof f))
      fail_msg("float %a printed as %s reads back as %a", (double)f, buf, (double)a->fl);
    free_msg(a);
    int n = sig_digits(buf);
    snprintf(fewer, sizeof fewer, "%.*e", n - 2, (double)f);
    if (n > 1 && (float)strtod(fewer, NULL) == f && fabsf(f) < FLT_MAX)
      fail_msg("float %s is not shortest: %s", buf, fewer);
    pd_format_double(d, buf, sizeof buf);
    snprintf(text, sizeof text, "db: %s", buf);
    a = all_ok(text);
    if (memcmp(&a->db, &d, sizeof d)) fail_msg("double %a printed as %s reads back as %a", d, buf, a->db);
    free_msg(a);
    n = sig_digits(buf);
    snprintf(fewer, sizeof fewer, "%.*e", n - 2, d);
    if (n > 1 && strtod(fewer, NULL) == d) fail_msg("double %s is not shortest: %s", buf, fewer);
  }
}

/* Print -> parse gives the same message, for a message using everything. */
static void test_round_trip_everything(void **state) {
  (void)state;
  Pdtest__Top *t = (Pdtest__Top *)parse_ok(
      &pdtest__top__descriptor,
      "name: 'top\\n\\x01\xe4\xb8\xad'\n"
      "all { i32: -1 i64: -9223372036854775808 u32: 4294967295 u64: 18446744073709551615 s32: -3\n"
      "  s64: 4 f32: 5 f64: 6 sf32: -7 sf64: -8 fl: 1e-45 db: -0 bo: t st: '' by: '\\0\\377'\n"
      "  color: TINY inner { a: 1 s: 's' r: [1, 2] child { color: HUGE } } nested { tags: ['', "
      "'x'] }\n"
      "  r_fl: [inf, -nan, 3.4028235e38] r_db: [0.1, 2.5e-324] r_bo: [t, f] r_by: ['', '\\n']\n"
      "  r_color: [NEGATIVE, BLUE] r_inner: [{}, {a: 1}] packed_i32: [1, -1] packed_db: [1.5]\n"
      "  m_str_msg { key: 'a' value {} } m_i32_str { key: -1 value: '\\t' } m_bool_enum { key: "
      "true value: HUGE }\n"
      "  m_u64_db { key: 18446744073709551615 value: -inf } c_msg { a: 1 }\n"
      "  def_i32: 42 def_st: 'hi' def_db: 2.5 def_color: BLUE req { id: 1 must {} } reqs [{ id: 2 "
      "must { a: 1 } }] }\n"
      "alls {} alls { c_bytes: '' }");
  assert_round_trip(&t->base);
  free_msg(t);
}

/* ---- schema look-up ---------------------------------------------------------------------- */

/* pd_schema_find knows paddle.proto's messages and nested types from the
 * start; a test schema is found after pd_schema_register. */
static void test_schema_find(void **state) {
  (void)state;
  assert_ptr_equal(pd_schema_find("paddle.NetDesc"), &paddle__net_desc__descriptor);
  assert_ptr_equal(pd_schema_find("paddle.CheckpointManifest"), &paddle__checkpoint_manifest__descriptor);
  assert_ptr_equal(pd_schema_find("paddle.OpDesc.AttrsEntry"), &paddle__op_desc__attrs_entry__descriptor);
  assert_null(pd_schema_find("paddle.Nope"));
  assert_null(pd_schema_find("NetDesc"));
  static const ProtobufCMessageDescriptor *const mine[] = {&pdtest__top__descriptor};
  pd_schema_register(mine, 1);
  assert_ptr_equal(pd_schema_find("pdtest.Top"), &pdtest__top__descriptor);
  assert_ptr_equal(pd_schema_find("pdtest.Inner"), &pdtest__inner__descriptor); /* reachable */
  assert_ptr_equal(pd_schema_find("pdtest.All.Nested"), &pdtest__all__nested__descriptor);
}

/* Lines and columns count from 1, through comments, CRLF and tabs. */
static void test_error_positions(void **state) {
  (void)state;
  assert_string_equal(first_line(all_err("# c\r\n\r\ni32: 1\n\tbad: 2")),
                      "t.pbtxt:4:2: unknown field \"bad\" in pdtest.All");
  assert_string_equal(first_line(all_err("i32: 1 # x { y\n\n   inner { a: 'x' }")),
                      "t.pbtxt:3:15: expected an integer for \"a\" (int32) in pdtest.Inner, got 'x'");
}

/* Empty input is an empty message; errors name <input> without a file name. */
static void test_empty_and_unnamed(void **state) {
  (void)state;
  Pdtest__All *a = all_ok("");
  free_msg(a);
  a = all_ok("  # only a comment");
  free_msg(a);
  pd_error err = {0};
  ProtobufCMessage *m;
  assert_int_equal(pd_text_parse(&pdtest__all__descriptor, "x", 1, NULL, &m, NULL, &err), PD_ERR_INPUT);
  assert_string_equal(first_line(err.msg), "<input>:1:1: unknown field \"x\" in pdtest.All");
  assert_contains(parse_err(&pdtest__all__descriptor, "\xc3\xa9"), "non-ASCII byte 0xc3 outside a string");
  assert_contains(parse_err(&pdtest__all__descriptor, "i32: 1\x01"), "control character 0x01 outside a string");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_every_scalar_type),
      cmocka_unit_test(test_integer_limits),
      cmocka_unit_test(test_signs_and_glued_numbers),
      cmocka_unit_test(test_float_spellings),
      cmocka_unit_test(test_float_narrowing),
      cmocka_unit_test(test_bool_spellings),
      cmocka_unit_test(test_enums),
      cmocka_unit_test(test_every_escape),
      cmocka_unit_test(test_invalid_escapes_and_newlines),
      cmocka_unit_test(test_nul_only_in_bytes),
      cmocka_unit_test(test_separators_and_comments),
      cmocka_unit_test(test_angle_delimiters),
      cmocka_unit_test(test_unbalanced_delimiters),
      cmocka_unit_test(test_list_syntax),
      cmocka_unit_test(test_many_repeated_elements),
      cmocka_unit_test(test_singular_twice_and_oneof),
      cmocka_unit_test(test_unknown_field_suggestion),
      cmocka_unit_test(test_required_missing),
      cmocka_unit_test(test_map_entries),
      cmocka_unit_test(test_srcmap_positions),
      cmocka_unit_test(test_no_leak_on_error),
      cmocka_unit_test(test_nesting_limit),
      cmocka_unit_test(test_binary_nesting_limit),
      cmocka_unit_test(test_canonical_print),
      cmocka_unit_test(test_shortest_floats),
      cmocka_unit_test(test_shortest_floats_sweep),
      cmocka_unit_test(test_round_trip_everything),
      cmocka_unit_test(test_schema_find),
      cmocka_unit_test(test_error_positions),
      cmocka_unit_test(test_empty_and_unnamed),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
