// Row chains (executor_kernels.h): consecutive fused loops over the same rows, run block of
// rows by block of rows so that a softmax's or a norm's intermediates are read back from cache.
#include <algorithm>
#include <cstring>
#include <memory>

#include "vtrn/runtime/executor_kernels.h"
#include "vtrn/runtime/kernels_elementwise.h"
#include "vtrn/runtime/thread_pool.h"

namespace vtrn::runtime::kernels {

using Cls = FusedProgram::Cls;
using elementwise::load_elem;
using elementwise::store_contiguous;

std::int64_t FusedProgram::row_count(std::int64_t want) const {
  if (reduce_) return reduce_layout_.trailing && out_n_ > 0 ? out_n_ : 0;
  return want > 0 && n_ % want == 0 ? want : 0;
}

bool FusedProgram::reads_rows_locally(const std::vector<std::int64_t>& row_size,
                                      std::int64_t rows) const {
  const std::int64_t inner = n_ / rows;
  if (init_value_ >= 0 && row_size[init_value_] >= 0) return false;
  const int rank = static_cast<int>(domain_.size());
  for (const Load& l : loads_) {
    if (l.mode == 3) continue;
    const std::int64_t rs = row_size[l.value];
    if (rs < 0) continue;  // computed before the chain: read in full
    if (l.mode == 0) {
      if (rs != inner) return false;
      continue;
    }
    if (l.mode != 2 || rs != 1) return false;
    // A value of one element per row, broadcast along the row: the domain splits into leading
    // row dims, read with the row's row-major stride, and inner dims of stride 0.
    int p = 0;
    std::int64_t prod = 1;
    while (p < rank && prod < rows) prod *= domain_[p++];
    if (prod != rows) return false;
    std::int64_t stride = 1;
    for (int d = rank - 1; d >= 0; --d) {
      if (domain_[d] == 1) continue;
      if (d >= p && l.strides[d] != 0) return false;
      if (d < p) {
        if (l.strides[d] != stride) return false;
        stride *= domain_[d];
      }
    }
  }
  return true;
}

void FusedProgram::run_rows(const std::vector<Buf>& values, std::uint8_t* out, std::int64_t rows,
                            std::int64_t r0, std::int64_t r1, std::int64_t* acc) const {
  const std::int64_t inner = n_ / rows;
  if (!reduce_) {
    run_range(values, out, r0 * inner, r1 * inner, nullptr, {});
    return;
  }
  const Cls c = slots_[root_slot_].cls;
  fill_init(values, acc, r0, r1);
  std::unique_ptr<Reducer> r;
  const void* first = nullptr;
  if (c == Cls::kF32) {
    r = make_reducer(reduce_layout_, reinterpret_cast<float*>(acc));
    first = reinterpret_cast<float*>(acc) + r0;
  } else if (c == Cls::kF64) {
    r = make_reducer(reduce_layout_, reinterpret_cast<double*>(acc));
    first = reinterpret_cast<double*>(acc) + r0;
  } else {
    r = make_reducer(reduce_layout_, acc);
    first = acc + r0;
  }
  run_range(values, out, r0 * inner, r1 * inner, r.get(), {});
  r->finish();
  store_contiguous(out_dtype_, first, r1 - r0, out, r0);
}

std::optional<RowChain> RowChain::make(
    const hlo::Block& b, const std::vector<const FusedProgram*>& loops,
    const std::vector<std::vector<std::pair<int, int>>>& bitcasts) {
  if (loops.size() < 2 || !loops.front()->reduces()) return std::nullopt;
  RowChain c;
  c.rows_ = loops.front()->row_count(0);
  if (c.rows_ < 2) return std::nullopt;
  std::vector<std::int64_t> row_size(b.types.size(), -1);
  for (std::size_t j = 0; j < loops.size(); ++j) {
    const FusedProgram* l = loops[j];
    // (A loop with more than one output runs alone.)
    if (!l->extra_outputs().empty() || l->row_count(c.rows_) != c.rows_ ||
        !l->reads_rows_locally(row_size, c.rows_))
      return std::nullopt;
    for (int v : l->inputs())
      if (row_size[v] < 0)
        c.reads_.emplace_back(v, static_cast<std::size_t>(b.type(v).byte_size()));
    row_size[l->output()] = l->reduces() ? 1 : l->size() / c.rows_;
    c.out_bytes_.push_back(static_cast<std::size_t>(b.type(l->output()).byte_size()));
    // A reshape keeps the elements in order, so each row's elements stay where they were.
    if (j < bitcasts.size())
      for (auto [result, operand] : bitcasts[j]) row_size[result] = row_size[operand];
  }
  c.loops_ = loops;
  return c;
}

void RowChain::run(const std::vector<Buf>& values, const std::vector<std::uint8_t*>& outs,
                   int threads) const {
  // A loop that writes a buffer an earlier one reads (an in-place update of an input) would
  // overwrite rows that the earlier one has not read yet, if it reads across rows.
  // Nor may two loops' outputs share bytes (the buffer assignment reuses a buffer once its
  // last reader has run, which inside a chain is not yet done with its later rows).
  auto sequential = [&] {
    for (std::size_t j = 0; j < loops_.size(); ++j) loops_[j]->run(values, outs[j], threads);
  };
  for (const auto& [v, bytes] : reads_) {
    const std::uint8_t* p = values[v].ptr;
    for (std::size_t i = 0; i < outs.size(); ++i)
      if (p < outs[i] + out_bytes_[i] && outs[i] < p + bytes) return sequential();
  }
  for (std::size_t i = 0; i < outs.size(); ++i)
    for (std::size_t j = i + 1; j < outs.size(); ++j)
      if (outs[i] < outs[j] + out_bytes_[j] && outs[j] < outs[i] + out_bytes_[i])
        return sequential();
  std::vector<std::unique_ptr<std::int64_t[]>> accs(loops_.size());
  std::int64_t widest = 1, total = 0;
  for (std::size_t j = 0; j < loops_.size(); ++j) {
    if (loops_[j]->reduces()) accs[j].reset(new std::int64_t[loops_[j]->output_size()]);
    widest = std::max(widest, loops_[j]->size() / rows_);
    total += loops_[j]->size();
  }
  // Blocks of about 16K elements per loop (64 KiB of float32): each loop's slice stays in
  // L2 for the next.
  constexpr std::int64_t kBlockElements = 1 << 14, kParallelMin = 1 << 16;
  const std::int64_t block = std::max<std::int64_t>(1, kBlockElements / widest);
  auto run_span = [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t r0 = lo; r0 < hi; r0 += block) {
      const std::int64_t r1 = std::min(hi, r0 + block);
      for (std::size_t j = 0; j < loops_.size(); ++j)
        loops_[j]->run_rows(values, outs[j], rows_, r0, r1, accs[j].get());
    }
  };
  if (threads <= 1 || total < kParallelMin) {
    run_span(0, rows_);
    return;
  }
  // Pieces of at least 16K elements of the widest loop.
  parallel_ranges(rows_, (kBlockElements + widest - 1) / widest, threads, run_span);
}

}  // namespace vtrn::runtime::kernels
