# gpu_register.py OP — one-off edit: adds the GPU kernels pd_gpu_OP_fwd/_bwd to
# ops/OP.c's kernel tables (inside #ifdef PD_WITH_CUDA) and counts the tables
# with PD_LEN.
import re, sys
op = sys.argv[1]
p = f"ops/{op}.c"
s = open(p).read()
if '#include "gpu_ops.h"' not in s:
    s = s.replace('#include "op.h"', '#include "gpu_ops.h"\n#include "op.h"', 1)
def add(s, table, fn):
    m = re.search(r"static const pd_kernel %s\[\] = \{(.*?)\};" % table, s, re.S)
    if not m or fn in m.group(0):
        return s
    body = m.group(1).rstrip().rstrip(',')
    new = "static const pd_kernel %s[] = {%s,\n#ifdef PD_WITH_CUDA\n    PD_GPU_F32(%s),\n#endif\n};" % (table, body, fn)
    return s[:m.start()] + new + s[m.end():]
s = add(s, "kernels", f"pd_gpu_{op}_fwd")
if "grad_kernels[]" in s:
    s = add(s, "grad_kernels", f"pd_gpu_{op}_bwd")
s = re.sub(r"\.n_kernels = \d+,", ".n_kernels = PD_LEN(kernels),", s)
s = re.sub(r"\.n_grad_kernels = \d+,", ".n_grad_kernels = PD_LEN(grad_kernels),", s)
open(p, "w").write(s)
