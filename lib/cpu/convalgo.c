/* convalgo.c — the process-wide --conv-algo setting (convalgo.h). */
#include "cpu/convalgo.h"

#include <string.h>

static pd_conv_algo g_algo = PD_CONV_AUTO;
static const char *const names[] = {"auto", "im2col", "winograd2", "winograd4"};

void pd_conv_algo_set(pd_conv_algo a) { g_algo = a; }
pd_conv_algo pd_conv_algo_get(void) { return g_algo; }
const char *pd_conv_algo_name(pd_conv_algo a) { return names[a]; }

bool pd_conv_algo_parse(const char *s, pd_conv_algo *a) {
  for (int i = 0; i < (int)(sizeof names / sizeof names[0]); i++)
    if (strcmp(s, names[i]) == 0) {
      *a = (pd_conv_algo)i;
      return true;
    }
  return false;
}
