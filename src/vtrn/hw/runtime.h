// Figures of the Neuron runtime and of the host side of a device (not of the chips), with their
// sources.
#pragma once

#include "vtrn/hw/units.h"

namespace vtrn::hw {

/// Intra-node algorithm ranges of the collective library. SDK
/// neuron-runtime/explore/intranode-collective-comm.rst: Mesh "< 1 MB", RDH "1-56 MB",
/// KangaRing beyond (figure mesh-rdh-kr-summary.png). vtrn reads MB as MiB: Mesh below 1 MiB,
/// RDH from 1 MiB up to and including 56 MiB, KangaRing or Ring above.
inline constexpr Bytes kMeshBelowBytes = MiB(1);
inline constexpr Bytes kRdhUpToBytes = MiB(56);

/// Host DRAM <-> device bandwidth one NeuronCore sees. Trainium2 Architecture Guide for NKI,
/// memory-hierarchy figure (nki-trn2-arch-5-1.png): host DRAM "~1 TB, ~16 GB/s". The guides of
/// the other generations publish no figure; vtrn uses this one for every chip.
inline constexpr BytesPerSecond kHostTransferBps = GBps(16);

/// Device-side cost of starting one executable (NEFF) after the previous one on a queue. No
/// document publishes the runtime's per-execution overhead; vtrn charges the one fixed cost it
/// does publish for starting device work, a DMA's semaphore-to-start time (Guideline to Avoid
/// Under-Utilizing DMA Bandwidth: "~1,300 ns"), as the runtime starts an execution by
/// triggering its first DMA queue.
inline constexpr Seconds kExecutionLaunchOverhead = Nanoseconds(1300);

}  // namespace vtrn::hw
