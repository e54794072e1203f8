/* act.h — the activations fused into fc and used by relu/sigmoid/tanh: the
 * per-element math for forward and backward, written once. Backward is in
 * terms of the output y, so the input need not be kept. */
#ifndef PD_ACT_H
#define PD_ACT_H

#include <math.h>
#include <stdint.h>
#include <string.h>

typedef enum pd_act { PD_ACT_NONE, PD_ACT_RELU, PD_ACT_SIGMOID, PD_ACT_TANH } pd_act;

static const char *const pd_act_names[] = {"none", "relu", "sigmoid", "tanh", 0};

static inline pd_act pd_act_parse(const char *s) {
  for (int i = 0; pd_act_names[i]; i++)
    if (strcmp(s, pd_act_names[i]) == 0) return (pd_act)i;
  return PD_ACT_NONE;
}

/* Numerically safe sigmoid: never exp of a large positive number. */
#define PD_SIGMOID(T, x) ((x) >= 0 ? (T)1 / ((T)1 + exp(-(x))) : exp(x) / ((T)1 + exp(x)))

#define PD_ACT_DEFINE(T)                                                                     \
  static inline void pd_act_forward_##T(pd_act a, const T *x, T *y, int64_t n) {             \
    switch (a) {                                                                             \
    case PD_ACT_NONE:                                                                        \
      if (x != y) memcpy(y, x, (size_t)n * sizeof(T));                                       \
      break;                                                                                 \
    case PD_ACT_RELU:                                                                        \
      for (int64_t i = 0; i < n; i++) y[i] = x[i] > 0 ? x[i] : 0;                            \
      break;                                                                                 \
    case PD_ACT_SIGMOID:                                                                     \
      for (int64_t i = 0; i < n; i++) y[i] = (T)PD_SIGMOID(T, x[i]);                         \
      break;                                                                                 \
    case PD_ACT_TANH:                                                                        \
      for (int64_t i = 0; i < n; i++) y[i] = (T)tanh(x[i]);                                  \
      break;                                                                                 \
    }                                                                                        \
  }                                                                                          \
  /* dx = dy * act'(x), expressed through y = act(x). */                                     \
  static inline void pd_act_backward_##T(pd_act a, const T *y, const T *dy, T *dx, int64_t n) { \
    switch (a) {                                                                             \
    case PD_ACT_NONE:                                                                        \
      if (dx != dy) memcpy(dx, dy, (size_t)n * sizeof(T));                                   \
      break;                                                                                 \
    case PD_ACT_RELU:                                                                        \
      for (int64_t i = 0; i < n; i++) dx[i] = y[i] > 0 ? dy[i] : 0;                          \
      break;                                                                                 \
    case PD_ACT_SIGMOID:                                                                     \
      for (int64_t i = 0; i < n; i++) dx[i] = dy[i] * y[i] * (1 - y[i]);                     \
      break;                                                                                 \
    case PD_ACT_TANH:                                                                        \
      for (int64_t i = 0; i < n; i++) dx[i] = dy[i] * (1 - y[i] * y[i]);                     \
      break;                                                                                 \
    }                                                                                        \
  }
PD_ACT_DEFINE(float)
PD_ACT_DEFINE(double)

#endif
