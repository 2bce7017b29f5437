// The static analysis of a Program: its on-chip memory footprint and its modeled time.
//
// Memory: every SBUF/PSUM tensor is live from the first to the last instruction that touches
// it (block dimensions of legacy kernels are separate tensors, so blocks are live one by one,
// as the legacy compiler allocates them). At every instruction the live tensors' bytes per
// partition must fit the core's SBUF and PSUM; otherwise CapacityError names the instruction,
// the bytes and the largest live tiles. The AWS simulator does not check this.
//
// Time: each instruction runs on one engine (Tensor, Vector, Scalar, GpSimd, DMA) for the time
// cost::InstructionCostModel gives. It starts when the tiles it reads are written and the
// tiles it writes are no longer read or written by earlier instructions (regions compared per
// tensor), and when its engine is idle. Engines overlap freely; an engine fills an idle gap
// with a later independent instruction (list scheduling in program order, as the compiler's
// scheduler orders each engine's queue). DMA transfers share the core's DMA bandwidth and
// complete one DMA start latency after their transfer. The kernel's latency is the time the
// last instruction completes.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "vtrn/cost/instruction_cost.h"
#include "vtrn/nki/program.h"

namespace vtrn::nki {

inline constexpr int kEngineCount = 5;  // cost::Engine values

struct InstructionTiming {
  Engine engine = Engine::kDma;
  double start_s = 0;  ///< the engine starts it
  double end_s = 0;    ///< the engine is done with it
  double done_s = 0;   ///< its results can be read (end_s plus the DMA latency for DMAs)
};

struct MemoryPeak {
  std::int64_t bytes_per_partition = 0;
  std::int64_t instruction = -1;  ///< where the peak is first reached
};

struct Schedule {
  std::vector<InstructionTiming> timing;
  double latency_s = 0;
  std::array<double, kEngineCount> busy_s{};  ///< per cost::Engine
  std::array<std::int64_t, kEngineCount> instructions{};
  MemoryPeak sbuf, psum;
  double matmul_flops = 0;
  double dma_bytes = 0;
};

/// Throws CapacityError when the live SBUF or PSUM tiles outgrow the core at any instruction.
void check_capacity(const Program& program, Schedule* peaks = nullptr);

/// Checks capacity, then models the program's time with |model|.
Schedule schedule(const Program& program, const cost::InstructionCostModel& model);

/// The engine time of |inst| if |engine| runs it.
double instruction_time_s(const Program& program, const Instruction& inst, Engine engine,
                          const cost::InstructionCostModel& model);

}  // namespace vtrn::nki
