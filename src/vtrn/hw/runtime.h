// Figures of the Neuron runtime's collective library (not of the chips), with their sources.
#pragma once

#include "vtrn/hw/units.h"

namespace vtrn::hw {

/// Intra-node algorithm ranges of the collective library. SDK
/// neuron-runtime/explore/intranode-collective-comm.rst: Mesh "< 1 MB", RDH "1-56 MB",
/// KangaRing beyond (figure mesh-rdh-kr-summary.png). vtrn reads MB as MiB: Mesh below 1 MiB,
/// RDH from 1 MiB up to and including 56 MiB, KangaRing or Ring above.
inline constexpr Bytes kMeshBelowBytes = MiB(1);
inline constexpr Bytes kRdhUpToBytes = MiB(56);

}  // namespace vtrn::hw
