/* convalgo.h — which algorithm conv2d's CPU kernels use (--conv-algo): the
 * per-layer choice (auto), or one forced for every convolution of the
 * process. Set once by the command line before a net is built. */
#ifndef PD_CONVALGO_H
#define PD_CONVALGO_H

#include <stdbool.h>

typedef enum pd_conv_algo {
  PD_CONV_AUTO,      /* per layer: Winograd where the shape allows and was measured faster, else im2col */
  PD_CONV_IM2COL,    /* the im2col products (and conv2d's direct and packed AVX-512 paths) */
  PD_CONV_WINOGRAD2, /* Winograd F(2x2, 3x3) */
  PD_CONV_WINOGRAD4, /* Winograd F(4x4, 3x3) */
} pd_conv_algo;

void pd_conv_algo_set(pd_conv_algo a);
pd_conv_algo pd_conv_algo_get(void);
/* "auto", "im2col", "winograd2", "winograd4"; parse returns false for any other name. */
const char *pd_conv_algo_name(pd_conv_algo a);
bool pd_conv_algo_parse(const char *s, pd_conv_algo *a);

#endif
