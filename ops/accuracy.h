/* accuracy.h — accuracy's slots and attribute, shared by accuracy.c (CPU)
 * and accuracy.cu (GPU), and the GPU kernel that accuracy.c registers.
 * Included by accuracy's own files only: the short slot names would clash
 * between ops. */
#ifndef PD_OPS_ACCURACY_H
#define PD_OPS_ACCURACY_H

#include "core/op.h"

enum { SCORES, LABEL, N_IN };
enum { ACCURACY, CORRECT, TOTAL, N_OUT };
enum { A_K, N_ATTRS };

#ifdef __cplusplus
extern "C" {
#endif
pd_status pd_gpu_accuracy_fwd(pd_ctx *c);
#ifdef __cplusplus
}
#endif

#endif
