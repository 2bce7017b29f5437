// NeuronCore figures the kernel cost model and the NKI interpreter need beyond the chip specs
// (chip.h, specs.cc). Header-only; each value cites its source.
//
// Abbreviations: SDK = aws-neuron/aws-neuron-sdk documentation sources (snapshot 81ce03ae).
#pragma once

#include <array>
#include <string_view>

#include "vtrn/hw/units.h"

namespace vtrn::hw {

/// The Tensor engine is a 128x128 systolic array: the stationary operand occupies up to 128
/// partitions (contraction) x 128 columns. SDK about-neuron/arch/neuron-hardware/neuron-core-v3.rst
/// ("128x128 systolic array"); nki/guides/architecture/trainium_inferentia2_arch.rst ("stationary
/// 128x128"). Same on NeuronCore-v2 and -v4.
inline constexpr int kTensorArrayRows = 128;
inline constexpr int kTensorArrayCols = 128;

/// On-chip memories, tile limits and engine clocks of one NeuronCore generation.
struct CoreArch {
  std::string_view core_name;  ///< "NeuronCore-v3"
  std::string_view target;     ///< NEURON_PLATFORM_TARGET_OVERRIDE spelling: "trn2"
  std::string_view nc_gen;     ///< the same target as nki.isa.nc_version spells it: "gen3"
  std::string_view instance;   ///< an instance whose chip has this core ("trn2.48xlarge")

  int partitions;                       ///< SBUF/PSUM partitions (nl.tile_size.pmax)
  Bytes sbuf_bytes;                     ///< SBUF capacity
  Bytes psum_bytes;                     ///< PSUM capacity
  int psum_banks;                       ///< PSUM banks per partition
  Bytes psum_bank_bytes_per_partition;  ///< one bank of one partition (2 KiB = 512 fp32)

  int gemm_stationary_fmax;  ///< matmul stationary free size limit
  int gemm_moving_fmax;      ///< matmul moving free size limit (nl.tile_size.gemm_moving_fmax)

  double tensor_hz;  ///< engine clocks
  double vector_hz;
  double scalar_hz;
  double gpsimd_hz;
  int dma_engines;  ///< DMA engines (queues) per NeuronCore

  Bytes sbuf_bytes_per_partition() const { return sbuf_bytes / partitions; }
  Bytes psum_bytes_per_partition() const { return psum_bytes / partitions; }
};

// SBUF/PSUM: SDK nki/guides/architecture/trainium_inferentia2_arch.rst (NC-v2: SBUF 24 MiB =
// 128 x 192 KiB, PSUM 2 MiB = 128 x 16 KiB, 8 banks of 2 KiB), trainium2_arch.rst (NC-v3: SBUF
// 28 MiB = 128 x 224 KiB), trainium3_arch.rst (NC-v4: SBUF 32 MiB). Tile limits: SDK
// nki.language.tile_size.rst (pmax 128, gemm_stationary_fmax 128, gemm_moving_fmax 512,
// psum_bank_fmax 512 fp32). Clocks: SDK neuron-core-v2.rst (Tensor 2.8, Vector 1.12, Scalar and
// GpSimd 1.4 GHz), neuron-core-v3.rst (Tensor 2.4, Vector 0.96, Scalar and GpSimd 1.2 GHz),
// neuron-core-v4.rst (Tensor 2.4, Vector 1.2, Scalar 1.2 GHz; GpSimd not listed, taken as
// Scalar's). DMA engines: SDK nki/deep-dives/nki-dma-bandwidth-guide.rst (16 per NeuronCore).
inline constexpr std::array<CoreArch, 3> kCoreArchs{{
    {"NeuronCore-v2", "trn1", "gen2", "trn1.32xlarge", 128, MiB(24), MiB(2), 8, KiB(2), 128, 512,
     2.8e9, 1.12e9, 1.4e9, 1.4e9, 16},
    {"NeuronCore-v3", "trn2", "gen3", "trn2.48xlarge", 128, MiB(28), MiB(2), 8, KiB(2), 128, 512,
     2.4e9, 0.96e9, 1.2e9, 1.2e9, 16},
    {"NeuronCore-v4", "trn3", "gen4", "trn3.gen1-server", 128, MiB(32), MiB(2), 8, KiB(2), 128, 512,
     2.4e9, 1.2e9, 1.2e9, 1.2e9, 16},
}};

/// The core of |target| ("trn1"/"gen2", "trn2"/"gen3", "trn3"/"gen4"); nullptr when unknown.
inline const CoreArch* find_core_arch(std::string_view target) {
  for (const CoreArch& arch : kCoreArchs) {
    if (arch.target == target || arch.nc_gen == target) return &arch;
  }
  return nullptr;
}

// Instruction-level cost figures (cycles of the engine that runs the instruction).
//
// SDK nki/api/nki.api.shared.rst ("NKI Engine Selection"): an instruction costs
// max(MIN_II, N) engine cycles for N elements per partition; "MIN_II is roughly 64 engine
// cycles". Reciprocal on the Vector engine costs 8*N.
inline constexpr double kMinInstructionCycles = 64;
inline constexpr double kVectorReciprocalCyclesPerElement = 8;
// SDK trainium_inferentia2_arch.rst (Vector Engine, "Cost Model"): one input tile ~N cycles,
// two input tiles ~2N cycles.
inline constexpr double kVectorTwoInputCyclesPerElement = 2;
// SDK trainium_inferentia2_arch.rst (Tensor Engine, "Cost Model"): back-to-back matmuls issue
// every max(N, MM_INIT_LATENCY) cycles, N the moving free size, MM_INIT_LATENCY 64 cycles on
// NC-v2 (used for every generation); FP32 inputs cost "roughly 4x" BF16/FP16/TF32/cFP8.
inline constexpr double kMatmulInitCycles = 64;
inline constexpr double kMatmulFp32CycleFactor = 4;
// SDK nki/deep-dives/nki-dma-bandwidth-guide.rst: payloads of >= 2 KiB per partition approach
// the engines' peak and >= 4 KiB saturate it; smaller ones are overhead-bound. vtrn models a
// DMA row (one contiguous run of bytes) as costing this many bytes of extra transfer, which
// gives 80% of peak at 2 KiB, 89% at 4 KiB and 33% at 256 B (a fit to the guide's curve, not a
// published number).
inline constexpr double kDmaRowOverheadBytes = 512;
// Same guide: ">= 4 KiB per partition (target for full saturation)". A long contiguous run is
// split across the DMA engines in pieces of this size.
inline constexpr double kDmaSaturatingRowBytes = 4096;

}  // namespace vtrn::hw
