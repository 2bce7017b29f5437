#include "vtrn/nki/schedule.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>
#include <string>

namespace vtrn::nki {
namespace {

std::string str(std::int64_t v) { return std::to_string(v); }

// Busy intervals of one engine; finds the earliest idle gap that fits an instruction.
class Timeline {
 public:
  double earliest(double ready, double duration) const {
    double t = ready;
    auto it = busy_.upper_bound(t);
    if (it != busy_.begin()) {
      auto prev = std::prev(it);
      t = std::max(t, prev->second);
    }
    for (int scanned = 0; it != busy_.end(); ++it) {
      if (it->first >= t + duration) return t;
      t = std::max(t, it->second);
      if (++scanned > 512) return std::max(t, busy_.rbegin()->second);
    }
    return t;
  }
  void reserve(double start, double end) {
    if (end <= start) return;
    auto next = busy_.lower_bound(start);
    if (next != busy_.begin()) {
      auto prev = std::prev(next);
      if (prev->second >= start) {  // extends the previous interval
        prev->second = std::max(prev->second, end);
        merge_after(prev);
        return;
      }
    }
    auto it = busy_.emplace_hint(next, start, end);
    merge_after(it);
  }

 private:
  void merge_after(std::map<double, double>::iterator it) {
    auto next = std::next(it);
    while (next != busy_.end() && next->first <= it->second) {
      it->second = std::max(it->second, next->second);
      next = busy_.erase(next);
    }
  }
  std::map<double, double> busy_;
};

struct Access_ {
  Box box;
  bool write;
  double done;
};

// The accesses made so far to one tensor, for read/write dependencies.
class TensorHistory {
 public:
  double ready_for(const Box& box, bool write) const {
    double t = 0;
    for (const Access_& a : log_) {
      if ((write || a.write) && a.box.overlaps(box)) t = std::max(t, a.done);
    }
    return t;
  }
  void record(Box box, bool write, double done) {
    if (write) {
      // A write that covers earlier accesses and ends after them makes them redundant.
      std::erase_if(log_, [&](const Access_& a) { return a.done <= done && box.contains(a.box); });
    }
    if (log_.size() >= 96) {
      // Fold the oldest half into one conservative record.
      Access_ merged = log_.front();
      const std::size_t half = log_.size() / 2;
      for (std::size_t i = 1; i < half; ++i) {
        for (std::size_t d = 0; d < merged.box.lo.size(); ++d) {
          merged.box.lo[d] = std::min(merged.box.lo[d], log_[i].box.lo[d]);
          merged.box.hi[d] = std::max(merged.box.hi[d], log_[i].box.hi[d]);
        }
        merged.write = merged.write || log_[i].write;
        merged.done = std::max(merged.done, log_[i].done);
      }
      log_.erase(log_.begin(), log_.begin() + static_cast<std::ptrdiff_t>(half));
      log_.insert(log_.begin(), std::move(merged));
    }
    log_.push_back({std::move(box), write, done});
  }

 private:
  std::vector<Access_> log_;
};

std::int64_t contiguous_run(const Access& a) {
  std::int64_t run = 1;
  for (std::size_t d = a.dims.size(); d-- > 0;) {
    if (a.dims[d].count == 1) continue;
    if (a.dims[d].stride != run) break;
    run *= a.dims[d].count;
  }
  return run;
}

// Contiguous runs ("rows") a DMA moves: every partition of an on-chip tile is one or more,
// and an HBM pattern has one per break in contiguity.
std::int64_t dma_rows(const Access& a, bool on_chip) {
  Access free = a;
  if (on_chip) free.dims.erase(free.dims.begin());
  const std::int64_t per = std::max<std::int64_t>(free.elements() / contiguous_run(free), 1);
  return on_chip ? a.partitions() * per : per;
}

bool fp32_operand(const Program& p, const Access& a) {
  const DType d = p.tensors()[static_cast<std::size_t>(a.tensor)].dtype;
  return d == DType::kFloat32 || d == DType::kTFloat32;
}

}  // namespace

double instruction_time_s(const Program& program, const Instruction& inst, Engine engine,
                          const cost::InstructionCostModel& model) {
  const auto& tensors = program.tensors();
  auto mem = [&](const Access& a) { return tensors[static_cast<std::size_t>(a.tensor)].memory; };
  const std::int64_t n_in =
      inst.srcs.empty() ? inst.dst.free_elements() : inst.srcs[0].free_elements();
  switch (inst.op) {
    case Opcode::kDmaCopy: {
      const Access& src = inst.srcs[0];
      const std::size_t size =
          std::max(dtype_size(tensors[static_cast<std::size_t>(src.tensor)].dtype),
                   dtype_size(tensors[static_cast<std::size_t>(inst.dst.tensor)].dtype));
      const double bytes = static_cast<double>(inst.dst.elements()) * static_cast<double>(size);
      const std::int64_t rows = std::max(dma_rows(inst.dst, mem(inst.dst) != Memory::kHbm),
                                         dma_rows(src, mem(src) != Memory::kHbm));
      const bool hbm = mem(src) == Memory::kHbm || mem(inst.dst) == Memory::kHbm;
      return model.dma_transfer_s(bytes, rows, hbm);
    }
    case Opcode::kMatmul:
      return model.matmul_s(inst.srcs[1].free_elements(), fp32_operand(program, inst.srcs[0]));
    case Opcode::kTranspose:
      if (engine == Engine::kTensor) {
        return model.matmul_s(inst.srcs[0].partitions(), fp32_operand(program, inst.srcs[0]));
      }
      return model.lane_s(engine, n_in);
    case Opcode::kTensorTensor:
      return model.lane_s(engine, n_in,
                          engine == Engine::kVector ? hw::kVectorTwoInputCyclesPerElement : 1);
    case Opcode::kActivation: {
      const double per = engine == Engine::kVector ? hw::kVectorReciprocalCyclesPerElement : 1;
      double t = model.lane_s(engine, n_in, per);
      // The reduction result is read out by a second, short instruction (ActReadAccumulator).
      if (inst.has_reduce) t += hw::kMinInstructionCycles * model.cycle_s(engine);
      return t;
    }
    case Opcode::kPartitionReduce: {
      // Cross-partition work on GpSimd's 8 cores of 16 lanes: one pass per 16 partitions
      // (vtrn's assumption; the guide gives no figure).
      const std::int64_t passes = (inst.srcs[0].partitions() + 15) / 16;
      return model.lane_s(engine, n_in * passes);
    }
    case Opcode::kMemset:
    case Opcode::kIota:
      return model.lane_s(engine, inst.dst.free_elements());
    default:
      return model.lane_s(engine, n_in);
  }
}

void check_capacity(const Program& program, Schedule* peaks) {
  const auto& tensors = program.tensors();
  const auto& insts = program.instructions();
  std::vector<std::int64_t> first(tensors.size(), -1), last(tensors.size(), -1);
  for (std::size_t i = 0; i < insts.size(); ++i) {
    auto touch = [&](const Access& a) {
      const auto t = static_cast<std::size_t>(a.tensor);
      if (first[t] < 0) first[t] = static_cast<std::int64_t>(i);
      last[t] = static_cast<std::int64_t>(i);
    };
    touch(insts[i].dst);
    for (const Access& s : insts[i].srcs) touch(s);
    if (insts[i].has_reduce) touch(insts[i].reduce_dst);
  }
  const hw::CoreArch& arch = program.arch();
  for (Memory memory : {Memory::kSbuf, Memory::kPsum}) {
    const std::int64_t capacity =
        static_cast<std::int64_t>(memory == Memory::kSbuf ? arch.sbuf_bytes_per_partition()
                                                          : arch.psum_bytes_per_partition());
    // Sweep: +bytes at the first use, -bytes after the last.
    std::vector<std::int64_t> delta(insts.size() + 1, 0);
    for (std::size_t t = 0; t < tensors.size(); ++t) {
      if (tensors[t].memory != memory || first[t] < 0) continue;
      delta[static_cast<std::size_t>(first[t])] += tensors[t].bytes_per_partition();
      delta[static_cast<std::size_t>(last[t]) + 1] -= tensors[t].bytes_per_partition();
    }
    MemoryPeak peak;
    std::int64_t live = 0;
    for (std::size_t i = 0; i < insts.size(); ++i) {
      live += delta[i];
      if (live > peak.bytes_per_partition) peak = {live, static_cast<std::int64_t>(i)};
      if (live <= capacity) continue;
      std::vector<std::size_t> alive;
      for (std::size_t t = 0; t < tensors.size(); ++t) {
        if (tensors[t].memory == memory && first[t] >= 0 &&
            first[t] <= static_cast<std::int64_t>(i) && last[t] >= static_cast<std::int64_t>(i)) {
          alive.push_back(t);
        }
      }
      std::stable_sort(alive.begin(), alive.end(), [&](std::size_t a, std::size_t b) {
        return tensors[a].bytes_per_partition() > tensors[b].bytes_per_partition();
      });
      std::string largest;
      for (std::size_t k = 0; k < std::min<std::size_t>(alive.size(), 4); ++k) {
        const TensorDecl& t = tensors[alive[k]];
        largest += (k ? "; " : "") + t.describe(str(t.bytes_per_partition()) +
                                                " B per partition, allocated at " + t.origin);
      }
      const bool sbuf = memory == Memory::kSbuf;
      const std::int64_t total = sbuf ? static_cast<std::int64_t>(arch.sbuf_bytes)
                                      : static_cast<std::int64_t>(arch.psum_bytes);
      throw CapacityError(
          std::string(sbuf ? "SBUF" : "PSUM") + " capacity exceeded on " +
          std::string(arch.target) + " (" + std::string(arch.core_name) + "): at " + insts[i].api +
          " (" + insts[i].origin + ") " + str(static_cast<std::int64_t>(alive.size())) + " live " +
          (sbuf ? "SBUF" : "PSUM") + " tiles need " + str(live) + " bytes per partition (" +
          str(live * arch.partitions) + " bytes over " + str(arch.partitions) +
          " partitions), but " + (sbuf ? "SBUF" : "PSUM") + " has " + str(capacity) +
          " bytes per partition (" + str(total >> 20) + " MiB" +
          (sbuf ? "" : ", " + str(arch.psum_banks) + " banks of 2 KiB per partition") +
          "). Largest live tiles: " + largest +
          ". Use smaller tiles, or allocate tiles inside the loop that uses them so they die "
          "sooner.");
    }
    if (peaks) (memory == Memory::kSbuf ? peaks->sbuf : peaks->psum) = peak;
  }
}

Schedule schedule(const Program& program, const cost::InstructionCostModel& model) {
  Schedule out;
  check_capacity(program, &out);
  const auto& tensors = program.tensors();
  const auto& insts = program.instructions();
  std::array<Timeline, kEngineCount> engines;
  std::vector<TensorHistory> history(tensors.size());
  out.timing.resize(insts.size());
  for (std::size_t i = 0; i < insts.size(); ++i) {
    const Instruction& inst = insts[i];
    // Dependencies: reads wait for overlapping writes, writes for overlapping reads and writes.
    double ready = 0;
    std::vector<std::pair<const Access*, bool>> accesses;
    for (const Access& s : inst.srcs) accesses.emplace_back(&s, false);
    // A matmul that accumulates reads its destination as well.
    accesses.emplace_back(&inst.dst, true);
    if (inst.has_reduce) accesses.emplace_back(&inst.reduce_dst, true);
    std::vector<Box> boxes;
    for (const auto& [a, write] : accesses) {
      const auto& shape = tensors[static_cast<std::size_t>(a->tensor)].shape;
      const bool elementwise =
          inst.op != Opcode::kSelect && (a == &inst.dst || a->elements() == inst.dst.elements());
      boxes.push_back(elementwise ? footprint(shape, *a, inst.mask) : footprint(shape, *a));
      ready = std::max(ready,
                       history[static_cast<std::size_t>(a->tensor)].ready_for(boxes.back(), write));
    }
    // The engine: the one allowed that finishes first.
    InstructionTiming best;
    double best_end = -1;
    for (int e = 0; e < kEngineCount; ++e) {
      if (!(inst.engines & (1u << e))) continue;
      const Engine engine = static_cast<Engine>(e);
      const double duration = instruction_time_s(program, inst, engine, model);
      const double start = engines[static_cast<std::size_t>(e)].earliest(ready, duration);
      if (best_end < 0 || start + duration < best_end) {
        best_end = start + duration;
        best = {engine, start, start + duration, start + duration};
      }
    }
    const auto e = static_cast<std::size_t>(best.engine);
    engines[e].reserve(best.start_s, best.end_s);
    if (best.engine == Engine::kDma) best.done_s = best.end_s + model.dma_latency_s();
    out.timing[i] = best;
    out.busy_s[e] += best.end_s - best.start_s;
    out.instructions[e] += 1;
    out.latency_s = std::max(out.latency_s, best.done_s);
    for (std::size_t k = 0; k < accesses.size(); ++k) {
      history[static_cast<std::size_t>(accesses[k].first->tensor)].record(
          std::move(boxes[k]), accesses[k].second, best.done_s);
    }
    if (inst.op == Opcode::kMatmul) {
      out.matmul_flops += 2.0 * static_cast<double>(inst.srcs[0].partitions()) *
                          static_cast<double>(inst.srcs[0].free_elements()) *
                          static_cast<double>(inst.srcs[1].free_elements());
    }
    if (inst.op == Opcode::kDmaCopy) {
      out.dma_bytes +=
          static_cast<double>(inst.dst.elements()) *
          static_cast<double>(dtype_size(tensors[static_cast<std::size_t>(inst.dst.tensor)].dtype));
    }
  }
  return out;
}

}  // namespace vtrn::nki
