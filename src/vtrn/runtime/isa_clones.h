// VTRN_CLONES: a function compiled once per x86-64 instruction-set level (AVX-512, AVX2, the
// baseline) and picked at load time (GCC's target_clones), as ATen builds its CPU kernels per
// capability: the baseline x86-64 target has 4-lane SSE only. A file that uses it is compiled
// with -ffp-contract=off (CMakeLists.txt), so no clone fuses a multiply and an add into one
// rounding: every clone gives the same bits.
#pragma once

#define VTRN_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
