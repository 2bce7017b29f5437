// A fused loop's run (FusedProgram::run in executor_kernels.h): the domain split into ATen's
// thread ranges and into pieces for the executor's threads, or a reduce's accumulators and the
// rows each thread folds; run_range (kernels_fused.cc) computes each piece chunk by chunk.
#include <algorithm>
#include <memory>
#include <utility>
#include <vector>

#include "vtrn/runtime/executor.h"
#include "vtrn/runtime/executor_kernels.h"
#include "vtrn/runtime/kernels_elementwise.h"
#include "vtrn/runtime/kernels_reduce.h"
#include "vtrn/runtime/thread_pool.h"

namespace vtrn::runtime::kernels {

using hlo::DType;
using Cls = FusedProgram::Cls;
using elementwise::load_elem;
using elementwise::store_contiguous;

namespace {
// Elements a thread takes at a time (whole chunks, or whole rows of a reduce): past this a
// piece costs more than its scheduling.
constexpr std::int64_t kPiece = 16384;
}  // namespace

void FusedProgram::fill_init(const std::vector<Buf>& values, std::int64_t* acc, std::int64_t lo,
                             std::int64_t hi) const {
  const Cls c = slots_[root_slot_].cls;
  double init_d = init_const_;
  std::int64_t init_i = init_const_i_;
  if (!init_is_const_) {
    const DType d = slots_[root_slot_].dtype;
    if (c == Cls::kI64)
      init_i = load_elem<std::int64_t>(d, values[init_value_].ptr, 0);
    else if (c == Cls::kF64)
      init_d = load_elem<double>(d, values[init_value_].ptr, 0);
    else
      init_d = load_elem<float>(d, values[init_value_].ptr, 0);
  }
  if (c == Cls::kF32)
    elementwise::fill(reinterpret_cast<float*>(acc) + lo, static_cast<float>(init_d), hi - lo);
  else if (c == Cls::kF64)
    elementwise::fill(reinterpret_cast<double*>(acc) + lo, init_d, hi - lo);
  else
    std::fill(acc + lo, acc + hi, init_i);
}

void FusedProgram::run(const std::vector<Buf>& values, std::uint8_t* out, int threads,
                       const std::vector<std::uint8_t*>& extra) const {
  if (extra.size() != extra_values_.size())
    throw ExecError("fused loop: " + std::to_string(extra_values_.size()) + " extra outputs, " +
                    std::to_string(extra.size()) + " buffers given");
  constexpr std::int64_t kParallelMin = 1 << 16;
  if (!reduce_) {
    // ATen's elementwise kernels give a tensor of at least kAtenParallelGrain elements to
    // min(threads, n / kAtenParallelGrain rounded up) threads, in ranges of n / ranges elements
    // rounded up (at::parallel_for), and each range's vector loop ends in a scalar tail, where
    // sigmoid's and silu's exp is libm's, not SLEEF's (kernels_elementwise.cc). The loop runs the
    // same ranges, each chunked from its start, so that its chunks' tails are ATen's.
    const std::int64_t ranges =
        n_ < kAtenParallelGrain
            ? 1
            : std::min<std::int64_t>(threads, (n_ + kAtenParallelGrain - 1) / kAtenParallelGrain);
    const std::int64_t range = ranges > 1 ? (n_ + ranges - 1) / ranges : n_;
    if (threads <= 1 || n_ < kParallelMin) {
      for (std::int64_t r = 0; r < ranges; ++r)
        run_range(values, out, r * range, std::min(n_, (r + 1) * range), nullptr, extra);
      return;
    }
    // The executor's threads take pieces of whole chunks from a range's start, at least 16K
    // elements each: only a range's last piece ends short.
    const std::int64_t piece = std::max<std::int64_t>(1, kPiece / chunk_) * chunk_;
    std::vector<std::pair<std::int64_t, std::int64_t>> pieces;
    for (std::int64_t lo = 0; lo < n_; lo += range)
      for (std::int64_t p = lo, hi = std::min(n_, lo + range); p < hi; p += piece)
        pieces.emplace_back(p, std::min(hi, p + piece));
    parallel_ranges(static_cast<std::int64_t>(pieces.size()), 1, threads,
                    [&](std::int64_t lo, std::int64_t hi) {
                      for (std::int64_t i = lo; i < hi; ++i)
                        run_range(values, out, pieces[static_cast<std::size_t>(i)].first,
                                  pieces[static_cast<std::size_t>(i)].second, nullptr, extra);
                    });
    return;
  }
  // Reduce: accumulators of the loop's class, initialized with the init value.
  const Cls c = slots_[root_slot_].cls;
  // (Up to 8 MiB of them kept per thread: a fresh array of 128 KiB or more is a fresh mapping
  // per run, which glibc hands back zeroed page by page, and the page faults cost more than a
  // short reduce. A larger one is allocated for the run.)
  constexpr std::int64_t kKeptOutputs = 1 << 20;
  thread_local std::vector<std::int64_t> kept;
  std::vector<std::int64_t> own;
  std::vector<std::int64_t>& storage = out_n_ <= kKeptOutputs ? kept : own;
  storage.resize(static_cast<std::size_t>(std::max<std::int64_t>(out_n_, 1)));
  std::int64_t* const acc = storage.data();
  fill_init(values, acc, 0, out_n_);
  // Trailing reduced dims: each thread folds whole outputs, so results do not depend on the
  // thread count.
  auto reduce_range = [&](std::int64_t lo, std::int64_t hi) {
    std::unique_ptr<Reducer> r;
    if (c == Cls::kF32)
      r = make_reducer(reduce_layout_, reinterpret_cast<float*>(acc));
    else if (c == Cls::kF64)
      r = make_reducer(reduce_layout_, reinterpret_cast<double*>(acc));
    else
      r = make_reducer(reduce_layout_, acc);
    run_range(values, out, lo, hi, r.get(), extra);
    r->finish();
  };
  if (threads > 1 && reduce_layout_.trailing && n_ >= kParallelMin && out_n_ >= threads) {
    // Pieces of whole rows, at least 16K elements.
    const std::int64_t inner = reduce_layout_.red_n;
    parallel_ranges(
        out_n_, (kPiece + inner - 1) / inner, threads,
        [&](std::int64_t lo, std::int64_t hi) { reduce_range(lo * inner, hi * inner); });
  } else if (n_ > 0) {
    reduce_range(0, n_);
  }
  store_contiguous(out_dtype_, acc, out_n_, out, 0);
}

}  // namespace vtrn::runtime::kernels
