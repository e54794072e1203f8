/* tmpl.h — the include-template idiom: code written once in terms of a type
 * T and compiled for each type by including its file once per type.
 *
 *   #define T float
 *   #include "fc_t.h"     // defines forward_float, backward_float, ...
 *   #undef T
 *   #define T double
 *   #include "fc_t.h"
 *   #undef T
 *
 * Inside the template, PD_T(forward) names forward_float or forward_double.
 * The template is ordinary C: compiler errors and debuggers point at its
 * lines, which a macro body cannot give. A template has no include guard
 * (it is meant to be included once per type) and needs T defined. */
#ifndef PD_TMPL_H
#define PD_TMPL_H

#define PD_T(name) PD_TMPL_CAT_(name, T)
#define PD_TMPL_CAT_(a, b) PD_TMPL_CAT2_(a, b)
#define PD_TMPL_CAT2_(a, b) a##_##b

#endif
