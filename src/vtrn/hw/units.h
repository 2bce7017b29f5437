// Units of the hardware model. Every quantity is stored in one SI base unit, and the unit is
// part of the type name: Bytes, BytesPerSecond, Seconds, FlopsPerSecond. The helpers below
// convert the units the source documents use (GB/s, Gbps, GiB, µs, TFLOPS) into those types,
// so a spec reads like its source: `GBps(1024)`, `Gbps(3200)`, `GiB(96)`.
#pragma once

#include <cstdint>

namespace vtrn::hw {

using Bytes = std::uint64_t;
using BytesPerSecond = double;
using Seconds = double;
using FlopsPerSecond = double;

/// Decimal gigabytes per second (10^9 B/s), as the Neuron docs write "GB/s".
constexpr BytesPerSecond GBps(double v) { return v * 1e9; }
/// Decimal terabytes per second.
constexpr BytesPerSecond TBps(double v) { return v * 1e12; }
/// Binary gibibytes per second (2^30 B/s), as some pages write "GiB/s".
constexpr BytesPerSecond GiBps(double v) { return v * 1073741824.0; }
/// Gigabits per second (network figures: EFA "3,200 Gbps").
constexpr BytesPerSecond Gbps(double v) { return v * 1e9 / 8.0; }
/// Bytes per nanosecond (the DMA guide's "23 B/ns" per engine).
constexpr BytesPerSecond BytesPerNs(double v) { return v * 1e9; }

constexpr Bytes KiB(std::uint64_t v) { return v << 10; }
constexpr Bytes MiB(std::uint64_t v) { return v << 20; }
constexpr Bytes GiB(std::uint64_t v) { return v << 30; }

constexpr Seconds Microseconds(double v) { return v * 1e-6; }
constexpr Seconds Nanoseconds(double v) { return v * 1e-9; }

constexpr FlopsPerSecond TFLOPS(double v) { return v * 1e12; }

}  // namespace vtrn::hw
