// Internal to the executor: one instruction of a fused loop over one chunk of values
// (FusedProgram::run_range, kernels_fused.cc), dispatched to the loops of kernels_elementwise.h.
#pragma once

#include <cstdint>

#include "vtrn/runtime/executor_kernels.h"

namespace vtrn::runtime::kernels {

/// |in| over |len| elements: operands |pa|, |pb|, |pc| (nullptr where it has fewer) and result
/// |o| are chunks of their slots' classes; the result is rounded or wrapped to |od|.
void run_instr(const FusedProgram::Instr& in, hlo::DType od, void* pa, void* pb, void* pc, void* o,
               std::int64_t len);

/// A folded update (Instr::update, float32): |pa| is its uniform scalar's chunk (element 0
/// read), |pb|, |pc|, |pd| its other operands' chunks.
void run_update_instr(const FusedProgram::Instr& in, hlo::DType od, const void* pa, const void* pb,
                      const void* pc, const void* pd, void* o, std::int64_t len);

/// Whether |in| can read one uniform operand as a scalar instead of a filled chunk: a float
/// binary op of elementwise::binary_scalar_float, or an fma with a uniform multiplicand.
bool takes_scalar(const FusedProgram::Instr& in);

/// run_instr for an instruction of takes_scalar() whose left (|s_left|) or right operand is
/// uniform: element 0 of that operand's chunk is the scalar, the rest of it is not read. The
/// same bits as run_instr with the chunk filled.
void run_scalar_instr(const FusedProgram::Instr& in, hlo::DType od, const void* pa, const void* pb,
                      const void* pc, bool s_left, void* o, std::int64_t len);

/// A float binary instruction of takes_scalar(), or an fma, whose left (|s_left|) or right
/// operand (multiplicand) is a per-row value broadcast along rows of |row_len|: |v| is the
/// other operand's chunk, |rows| the per-row values' storage (of the instruction's float type)
/// with row r of the chunk at element |first| + r * |row_stride|, and the chunk starts at
/// |first_pos| in its row. |c| is an fma's addend chunk (nullptr otherwise).
void run_rows_instr(const FusedProgram::Instr& in, hlo::DType od, const void* v,
                    const std::uint8_t* rows, std::int64_t first, std::int64_t row_stride,
                    std::int64_t row_len, std::int64_t first_pos, bool s_left, const void* c,
                    void* o, std::int64_t len);

/// A float binary instruction of takes_scalar() (no fma) whose left (|s_left|) or right
/// operand is a table of |period| elements repeated along the chunk: |v| is the other operand's
/// chunk, |table| the table's storage (of the instruction's float type), and the chunk starts
/// at |first_pos| in it. The same bits as run_instr given a chunk filled from the table.
void run_table_instr(const FusedProgram::Instr& in, hlo::DType od, const void* v,
                     const std::uint8_t* table, std::int64_t period, std::int64_t first_pos,
                     bool s_left, void* o, std::int64_t len);

}  // namespace vtrn::runtime::kernels
