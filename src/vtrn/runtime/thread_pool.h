// The executor's worker threads: created once and parked between kernels, because starting
// threads for every large kernel cost more than the kernels it split (tens of microseconds).
//
// Promises:
//  * parallel_for(n, fn) runs fn(0) .. fn(n-1), the caller included, and returns when all ran.
//  * At most executor_threads() threads run a call, as the budget stands when it starts. A
//    call made while the pool is busy (another stream's kernel, or a nested call) runs in the
//    caller alone: it never waits for the pool.
//  * After fork() the child starts with a fresh pool (the parent's threads do not exist there).
//  * An exception from fn is rethrown in the caller after every task finished.
#pragma once

#include <cstdint>
#include <functional>

namespace vtrn::runtime {

void parallel_for(int n, const std::function<void(int)>& fn);

/// Pieces per thread parallel_ranges() aims for.
inline constexpr int kPiecesPerThread = 4;

/// Runs fn(lo, hi) over consecutive pieces covering [0, n), each at least |grain| long (but
/// for one piece if n is smaller), about kPiecesPerThread per thread of |threads|, through
/// parallel_for. A thread that starts late (a parked worker takes tens of microseconds to
/// wake) then takes fewer pieces, where with one piece per thread the caller would wait for
/// its whole share. The pieces depend on n, grain and threads only.
void parallel_ranges(std::int64_t n, std::int64_t grain, int threads,
                     const std::function<void(std::int64_t, std::int64_t)>& fn);

}  // namespace vtrn::runtime
