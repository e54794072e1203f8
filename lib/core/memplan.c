/* memplan.c — which temporaries share a buffer (see memplan.h). */
#include "core/memplan.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "core/net.h"

static int root(int *parent, int v) {
  while (parent[v] != v) v = parent[v] = parent[parent[v]];
  return v;
}

void pd_memplan_free(pd_memplan *p) {
  free(p->group), free(p->first), free(p->last), free(p->from), free(p->order), free(p->buf);
  free(p->need), free(p->bytes), free(p->until);
  memset(p, 0, sizeof *p);
}

pd_status pd_memplan_init(pd_memplan *p, const pd_net *net, const bool *active, const bool *keep, bool keep_forward,
                          pd_error *err) {
  memset(p, 0, sizeof *p);
  int n = net->nvars;
  size_t cnt = (size_t)n + 1;
  p->nvars = n;
  p->group = malloc(cnt * sizeof *p->group);
  p->first = malloc(cnt * sizeof *p->first);
  p->last = malloc(cnt * sizeof *p->last);
  p->from = malloc(cnt * sizeof *p->from);
  p->order = malloc(cnt * sizeof *p->order);
  p->buf = malloc(cnt * sizeof *p->buf);
  p->need = malloc(cnt * sizeof *p->need);
  p->bytes = malloc(cnt * sizeof *p->bytes);
  p->until = malloc(cnt * sizeof *p->until);
  /* scratch per variable: its first write, first read, last use, union-find parent */
  int *wfirst = malloc(cnt * sizeof *wfirst), *rfirst = malloc(cnt * sizeof *rfirst);
  int *use_last = malloc(cnt * sizeof *use_last), *parent = malloc(cnt * sizeof *parent);
  if (!p->group || !p->first || !p->last || !p->from || !p->order || !p->buf || !p->need || !p->bytes || !p->until ||
      !wfirst || !rfirst || !use_last || !parent) {
    free(wfirst), free(rfirst), free(use_last), free(parent);
    pd_memplan_free(p);
    return pd_errorf(err, PD_ERR_RUNTIME, "out of memory");
  }
  for (int v = 0; v < n; v++) wfirst[v] = -1, rfirst[v] = INT_MAX, use_last[v] = -1, parent[v] = v;
  for (int o = 0; o < net->nops; o++) {
    if (active && !active[o]) continue;
    const pd_op *op = &net->ops[o];
    for (int s = 0; s < op->def->n_inputs; s++)
      for (int i = 0; i < op->in[s].n; i++) {
        int v = op->in[s].vars[i];
        if (v < 0) continue;
        if (rfirst[v] == INT_MAX) rfirst[v] = o;
        use_last[v] = o;
        if (op->def->bind) rfirst[v] = -1; /* placed by the op (op.h): never planned */
      }
    /* a view op's outputs join the group of the input they share */
    int vs = op->def->views - 1;
    int x = vs >= 0 && vs < op->def->n_inputs && op->in[vs].n > 0 ? op->in[vs].vars[0] : -1;
    for (int s = 0; s < op->def->n_outputs; s++)
      for (int i = 0; i < op->out[s].n; i++) {
        int v = op->out[s].vars[i];
        if (v < 0) continue;
        if (wfirst[v] < 0) wfirst[v] = o;
        use_last[v] = o;
        if (x >= 0) parent[root(parent, v)] = root(parent, x);
      }
  }
  /* a group is planned when every member is: a temporary that an active op
   * writes before any reads it, not kept, not a kept forward output */
  bool *ok = (bool *)p->bytes; /* scratch: per root, all members eligible so far */
  for (int v = 0; v < n; v++) ok[v] = true;
  for (int v = 0; v < n; v++) {
    const pd_var_info *vi = &net->vars[v];
    bool touched = wfirst[v] >= 0 || rfirst[v] != INT_MAX;
    if (!touched) continue;
    bool eligible = vi->kind == PD_VAR_TEMP && wfirst[v] >= 0 && rfirst[v] > wfirst[v] && !(keep && keep[v]) &&
                    !(keep_forward && wfirst[v] < net->n_forward);
    if (!eligible) ok[root(parent, v)] = false;
  }
  for (int v = 0; v < n; v++) p->group[v] = -1;
  int *gid = p->order; /* scratch: per root, its group index + 1 */
  for (int v = 0; v < n; v++) gid[v] = 0;
  for (int v = 0; v < n; v++) {
    if (wfirst[v] < 0) continue;
    int r = root(parent, v);
    if (!ok[r]) continue;
    if (!gid[r]) {
      gid[r] = ++p->ngroups;
      p->first[gid[r] - 1] = INT_MAX, p->last[gid[r] - 1] = -1;
    }
    int g = gid[r] - 1;
    p->group[v] = g;
    if (wfirst[v] < p->first[g]) p->first[g] = wfirst[v];
    if (use_last[v] > p->last[g]) p->last[g] = use_last[v];
  }
  /* in place: a group whose first op declares it writes output 0 over an
   * input may take that input's buffer (pd_memplan_assign checks that the
   * input's value dies there) */
  for (int g = 0; g < p->ngroups; g++) p->from[g] = -1;
  for (int o = 0; o < net->nops; o++) {
    const pd_op *op = &net->ops[o];
    int s = op->def->inplace - 1;
    if ((active && !active[o]) || s < 0 || s >= op->def->n_inputs || op->in[s].n < 1 || op->def->n_outputs < 1 ||
        op->out[0].n < 1)
      continue;
    int x = op->in[s].vars[0], y = op->out[0].vars[0];
    if (x < 0 || y < 0 || p->group[x] < 0 || p->group[y] < 0 || p->group[x] == p->group[y]) continue;
    if (p->first[p->group[y]] == o && wfirst[y] == o) p->from[p->group[y]] = p->group[x];
  }
  /* groups in order of their first op (insertion sort: stable, groups are few) */
  for (int g = 0; g < p->ngroups; g++) {
    int k = g;
    while (k > 0 && p->first[p->order[k - 1]] > p->first[g]) p->order[k] = p->order[k - 1], k--;
    p->order[k] = g;
  }
  free(wfirst), free(rfirst), free(use_last), free(parent);
  return PD_OK;
}

void pd_memplan_assign(pd_memplan *p, pd_tensor *const *shapes) {
  for (int g = 0; g < p->ngroups; g++) p->need[g] = 0;
  for (int v = 0; v < p->nvars; v++) {
    int g = p->group[v];
    if (g < 0 || shapes[v]->ndim < 0) continue;
    size_t b = pd_tensor_bytes(shapes[v]);
    if (b != SIZE_MAX && b > p->need[g]) p->need[g] = b;
  }
  p->nbufs = 0;
  p->naive = p->planned = 0;
  for (int k = 0; k < p->ngroups; k++) {
    int g = p->order[k], best = -1, largest = -1, h = p->from[g];
    size_t need = p->need[g];
    p->naive += need;
    if (h >= 0 && p->last[h] == p->first[g] && p->until[p->buf[h]] == p->first[g] && p->bytes[p->buf[h]] >= need) {
      p->buf[g] = p->buf[h]; /* over its input, which this op reads last */
      p->until[p->buf[g]] = p->last[g];
      continue;
    }
    for (int b = 0; b < p->nbufs; b++) {
      if (p->until[b] >= p->first[g]) continue; /* still holds a live group */
      if (p->bytes[b] >= need && (best < 0 || p->bytes[b] < p->bytes[best])) best = b;
      if (largest < 0 || p->bytes[b] > p->bytes[largest]) largest = b;
    }
    if (best < 0 && largest >= 0) best = largest, p->bytes[best] = need;
    if (best < 0) best = p->nbufs++, p->bytes[best] = need;
    p->buf[g] = best;
    p->until[best] = p->last[g];
  }
  for (int b = 0; b < p->nbufs; b++) p->planned += p->bytes[b];
}
