// The executor's `custom_call @vtrn.aten_nll_loss` (compiler/aten_nll_loss.h): the reduced
// negative log-likelihood in the order and the arithmetic of ATen's CPU kernel, so the loss and
// total weight are the CPU's bits.
#pragma once

#include <cstdint>

#include "vtrn/runtime/executor.h"

namespace vtrn::runtime::aten_nll_loss {

/// The call's kernel: (x [N, C], target [N] int64[, weight [C]]) -> (output, total_weight).
/// Throws ExecError "Target <t> is out of bounds." for a target outside [0, C) that is not
/// the ignore_index, as ATen does.
void call(const CustomCallArgs& args);

}  // namespace vtrn::runtime::aten_nll_loss
