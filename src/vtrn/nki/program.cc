#include "vtrn/nki/program.h"

#include <algorithm>
#include <string>
#include <utility>

namespace vtrn::nki {
namespace {

constexpr std::uint8_t kLaneEngines = (1u << static_cast<int>(Engine::kVector)) |
                                      (1u << static_cast<int>(Engine::kScalar)) |
                                      (1u << static_cast<int>(Engine::kGpSimd));

std::string str(std::int64_t v) { return std::to_string(v); }

[[noreturn]] void fail(const std::string& message) { throw ValidationError(message); }

bool is_fp32_like(DType d) { return d == DType::kFloat32 || d == DType::kTFloat32; }

}  // namespace

std::string_view memory_name(Memory memory) {
  switch (memory) {
    case Memory::kHbm:
      return "hbm";
    case Memory::kSbuf:
      return "sbuf";
    case Memory::kPsum:
      return "psum";
  }
  return "?";
}

Memory parse_memory(std::string_view name) {
  if (name == "sbuf") return Memory::kSbuf;
  if (name == "psum") return Memory::kPsum;
  if (name == "hbm" || name == "shared_hbm" || name == "private_hbm") return Memory::kHbm;
  throw std::invalid_argument("unknown NKI buffer '" + std::string(name) +
                              "'; use sbuf, psum, hbm, shared_hbm or private_hbm");
}

std::uint8_t engine_bit(Engine engine) {
  return static_cast<std::uint8_t>(1u << static_cast<int>(engine));
}

std::uint8_t parse_engines(std::string_view name, std::uint8_t automatic) {
  if (name == "auto" || name.empty() || name == "unknown") return automatic;
  if (name == "tensor") return engine_bit(Engine::kTensor);
  if (name == "vector") return engine_bit(Engine::kVector);
  if (name == "scalar" || name == "activation") return engine_bit(Engine::kScalar);
  if (name == "gpsimd") return engine_bit(Engine::kGpSimd);
  if (name == "dma" || name == "sync") return engine_bit(Engine::kDma);
  throw std::invalid_argument("unknown NKI engine '" + std::string(name) +
                              "'; use tensor, vector, scalar, gpsimd or dma");
}

std::int64_t TensorDecl::elements() const {
  std::int64_t n = 1;
  for (std::int64_t d : shape) n *= d;
  return n;
}

std::int64_t TensorDecl::bytes_per_partition() const {
  std::int64_t n = static_cast<std::int64_t>(dtype_size(dtype));
  for (std::size_t i = 1; i < shape.size(); ++i) n *= shape[i];
  return n;
}

std::string TensorDecl::describe(const std::string& detail) const {
  std::string dims;
  for (std::size_t i = 0; i < shape.size(); ++i) dims += (i ? "x" : "") + str(shape[i]);
  return name + " (" + dims + " " + std::string(dtype_name(dtype)) +
         (detail.empty() ? "" : ", " + detail) + ")";
}

std::string_view opcode_name(Opcode op) {
  switch (op) {
    case Opcode::kDmaCopy:
      return "dma_copy";
    case Opcode::kTensorCopy:
      return "tensor_copy";
    case Opcode::kTensorTensor:
      return "tensor_tensor";
    case Opcode::kTensorScalar:
      return "tensor_scalar";
    case Opcode::kActivation:
      return "activation";
    case Opcode::kTensorReduce:
      return "tensor_reduce";
    case Opcode::kPartitionReduce:
      return "tensor_partition_reduce";
    case Opcode::kMatmul:
      return "nc_matmul";
    case Opcode::kTranspose:
      return "nc_transpose";
    case Opcode::kMemset:
      return "memset";
    case Opcode::kSelect:
      return "affine_select";
    case Opcode::kIota:
      return "iota";
  }
  return "?";
}

Program::Program(std::string_view target) : arch_(hw::find_core_arch(target)) {
  if (arch_ == nullptr) {
    throw std::invalid_argument("unknown NKI target '" + std::string(target) +
                                "'; use trn1 (gen2), trn2 (gen3) or trn3 (gen4)");
  }
}

std::int32_t Program::add_tensor(TensorDecl decl) {
  if (decl.shape.empty()) decl.shape = {1};
  for (std::int64_t d : decl.shape) {
    if (d <= 0) {
      throw std::invalid_argument("tensor '" + decl.name + "' has a dimension of size " + str(d) +
                                  "; every dimension needs at least one element");
    }
  }
  tensors_.push_back(std::move(decl));
  writes_.emplace_back();
  return static_cast<std::int32_t>(tensors_.size() - 1);
}

void Program::set_external(std::int32_t tensor) {
  if (tensor < 0 || static_cast<std::size_t>(tensor) >= tensors_.size()) {
    throw std::invalid_argument("no tensor " + str(tensor) + " in the program");
  }
  tensors_[static_cast<std::size_t>(tensor)].external = true;
}

void Program::enter_iteration(std::int64_t loop, std::int64_t iteration, std::string origin) {
  current_scope_.emplace_back(loop, iteration);
  current_origins_.push_back(std::move(origin));
  scopes_.push_back(current_scope_);
  scope_origins_.push_back(current_origins_.back());
  current_scope_index_ = static_cast<int>(scopes_.size() - 1);
}

void Program::exit_iteration() {
  if (current_scope_.empty()) return;
  current_scope_.pop_back();
  current_origins_.pop_back();
  if (current_scope_.empty()) {
    current_scope_index_ = -1;
  } else {
    scopes_.push_back(current_scope_);
    scope_origins_.push_back(current_origins_.back());
    current_scope_index_ = static_cast<int>(scopes_.size() - 1);
  }
}

const TensorDecl& Program::tensor(const Access& access) const {
  if (access.tensor < 0 || static_cast<std::size_t>(access.tensor) >= tensors_.size()) {
    throw std::invalid_argument("access names tensor " + str(access.tensor) +
                                " but the program has " +
                                str(static_cast<std::int64_t>(tensors_.size())) + " tensors");
  }
  return tensors_[static_cast<std::size_t>(access.tensor)];
}

void Program::check_access(const Instruction& inst, const Access& access,
                           const char* operand) const {
  const TensorDecl& t = tensor(access);
  if (access.dims.empty()) fail(inst.api + " " + operand + " has no dimensions");
  for (const Dim& d : access.dims) {
    if (d.count < 1) fail(inst.api + " " + operand + " has an empty dimension");
  }
  const std::int64_t lo = access.min_offset(), hi = access.max_offset();
  if (lo >= 0 && hi < t.elements()) return;
  // Out of range: legal only for elements the mask disables (a masked load past the end).
  const bool masked = !inst.mask.empty() && &access != &inst.reduce_dst &&
                      static_cast<std::int64_t>(inst.mask.size()) == access.elements();
  std::int64_t bad = -1;
  if (masked) {
    for_each_offset(access, [&](std::int64_t i, std::int64_t off) {
      if (bad < 0 && inst.mask[static_cast<std::size_t>(i)] && (off < 0 || off >= t.elements())) {
        bad = off;
      }
    });
    if (bad < 0) return;
  } else {
    bad = lo < 0 ? lo : hi;
  }
  fail(inst.api + " " + operand + " " + access.shape_string() + " reads or writes element " +
       str(bad) + " of `" + t.name + "`, which has " + str(t.elements()) + " elements");
}

void Program::check_memory(const Instruction& inst, const Access& access, const char* operand,
                           bool hbm, bool sbuf, bool psum) const {
  const Memory m = tensor(access).memory;
  if ((m == Memory::kHbm && hbm) || (m == Memory::kSbuf && sbuf) || (m == Memory::kPsum && psum)) {
    return;
  }
  std::string allowed;
  if (hbm) allowed += "hbm";
  if (psum) allowed += std::string(allowed.empty() ? "" : "|") + "psum";
  if (sbuf) allowed += std::string(allowed.empty() ? "" : "|") + "sbuf";
  fail("Expected operand '" + std::string(operand) + "' of '" + inst.api +
       "' to be in address space '" + allowed + "', but got a tile in '" +
       std::string(memory_name(m)) + "' instead.");
}

void Program::check_partitions(const Instruction& inst, const Access& access,
                               const char* operand) const {
  const TensorDecl& t = tensor(access);
  if (t.memory == Memory::kHbm) return;
  const std::int64_t p = access.partitions();
  if (p > arch_->partitions) {
    fail(inst.api + " " + operand + " partition dimension " + str(p) + " exceeds maximum " +
         str(arch_->partitions));
  }
  // The first index of an on-chip tile selects partitions; the rest stay inside one.
  const std::int64_t pitch = t.elements() / t.shape[0];
  const Dim& pd = access.dims[0];
  std::int64_t span = access.offset % pitch;
  for (std::size_t i = 1; i < access.dims.size(); ++i) {
    span += std::max<std::int64_t>(access.dims[i].stride, 0) * (access.dims[i].count - 1);
  }
  if ((pd.count > 1 && pd.stride % pitch != 0) || span >= pitch) {
    fail(inst.api + " " + operand + " " + access.shape_string() + " of `" + t.name +
         "` does not keep its first dimension on partitions: an SBUF/PSUM tile is "
         "(partition, free...) and its free indices must stay within one partition");
  }
}

void Program::check_same_shape(const Instruction& inst, const Access& a, const char* an,
                               const Access& b, const char* bn) const {
  if (a.partitions() != b.partitions()) {
    fail("number of partitions (dimension 0 size of a tile) mismatch in parameters (" +
         std::string(an) + a.shape_string() + ", " + bn + b.shape_string() + ") of '" + inst.api +
         "'");
  }
  if (a.free_elements() != b.free_elements()) {
    fail(inst.api + " " + bn + b.shape_string() + " has " + str(b.free_elements()) +
         " elements per partition but " + an + a.shape_string() + " has " + str(a.free_elements()));
  }
}

void Program::check_engines(Instruction& inst) const {
  bool psum = tensor(inst.dst).memory == Memory::kPsum;
  for (const Access& s : inst.srcs) psum = psum || tensor(s).memory == Memory::kPsum;
  const std::uint8_t gpsimd = engine_bit(Engine::kGpSimd);
  if (psum && (inst.engines & gpsimd)) {
    if (inst.engines == gpsimd) {
      fail(inst.api +
           " runs on the GpSimd engine, which cannot access PSUM; copy the PSUM "
           "operand to SBUF first or use the Vector engine");
    }
    inst.engines = static_cast<std::uint8_t>(inst.engines & ~gpsimd);
  }
  if (inst.engines == 0) fail(inst.api + " has no engine that can run it");
}

std::size_t Program::append(Instruction inst) {
  check_access(inst, inst.dst, "dst");
  for (std::size_t i = 0; i < inst.srcs.size(); ++i) check_access(inst, inst.srcs[i], "src");
  if (inst.has_reduce) check_access(inst, inst.reduce_dst, "reduce_res");
  if (!inst.mask.empty() && static_cast<std::int64_t>(inst.mask.size()) != inst.dst.elements()) {
    fail(inst.api + " mask has " + str(static_cast<std::int64_t>(inst.mask.size())) +
         " elements but dst " + inst.dst.shape_string() + " has " + str(inst.dst.elements()));
  }
  inst.scope = current_scope_index_;
  instructions_.push_back(std::move(inst));
  check_output_dependencies(instructions_.size() - 1);
  return instructions_.size() - 1;
}

void Program::check_output_dependencies(std::size_t index) {
  const Instruction& inst = instructions_[index];
  if (inst.scope < 0) return;
  const Scope& scope = scopes_[static_cast<std::size_t>(inst.scope)];
  auto record = [&](const Access& access) {
    const TensorDecl& t = tensor(access);
    if (inst.op == Opcode::kMatmul && inst.accumulate != Accumulate::kOverwrite) return;
    // A select's mask is its predicate: it writes every element.
    const bool masked = &access == &inst.dst && inst.op != Opcode::kSelect;
    Box box = masked ? footprint(t.shape, access, inst.mask) : footprint(t.shape, access);
    auto& log = writes_[static_cast<std::size_t>(access.tensor)];
    for (const Write& w : log) {
      if (w.instruction == index || !w.box.overlaps(box)) continue;
      const Scope& other = scopes_[static_cast<std::size_t>(w.scope)];
      for (std::size_t k = 0; k < std::min(scope.size(), other.size()); ++k) {
        if (scope[k].first != other[k].first) break;
        if (scope[k].second != other[k].second) {
          std::string origin;
          for (std::size_t s = 0; s < scopes_.size(); ++s) {
            if (scopes_[s].size() > k && scopes_[s][k].first == scope[k].first) {
              origin = scope_origins_[s];
              break;
            }
          }
          fail("Unexpected output dependencies: iterations " + str(other[k].second) + " and " +
               str(scope[k].second) + " of the nl.affine_range loop at " + origin +
               " both write `" + t.name + "` (" + inst.api + " at " + inst.origin +
               "); index the destination with the loop variable, or use nl.sequential_range "
               "if the iterations must run in order");
        }
      }
    }
    if (log.size() >= 256) log.erase(log.begin());
    log.push_back({std::move(box), inst.scope, index});
  };
  record(inst.dst);
  if (inst.has_reduce) record(inst.reduce_dst);
}

void Program::retarget(std::size_t index, const Access& dst, Accumulate accumulate) {
  if (index + 1 != instructions_.size()) {
    throw std::invalid_argument("only the last instruction can be retargeted (asked for " +
                                str(static_cast<std::int64_t>(index)) + " of " +
                                str(static_cast<std::int64_t>(instructions_.size())) + ")");
  }
  const Instruction original = instructions_.back();
  Instruction inst = original;
  instructions_.pop_back();
  try {
    retarget_checked(std::move(inst), dst, accumulate);
  } catch (...) {
    // Leave the program as it was, so the front end can fall back to a copy.
    instructions_.resize(index);
    instructions_.push_back(original);
    throw;
  }
}

void Program::retarget_checked(Instruction inst, const Access& dst, Accumulate accumulate) {
  const Access old = inst.dst;
  inst.dst = dst;
  inst.accumulate = accumulate;
  if (old.partitions() != dst.partitions() || old.free_elements() != dst.free_elements()) {
    fail("Illegal assignment destination shape: " + tensor(dst).name + dst.shape_string() +
         " cannot hold the " + old.shape_string() + " result of " + inst.api);
  }
  // Re-run the opcode's own checks on the new destination.
  switch (inst.op) {
    case Opcode::kDmaCopy:
      dma_copy(std::move(inst));
      break;
    case Opcode::kTensorCopy:
      tensor_copy(std::move(inst));
      break;
    case Opcode::kTensorTensor:
      tensor_tensor(std::move(inst));
      break;
    case Opcode::kTensorScalar:
      tensor_scalar(std::move(inst));
      break;
    case Opcode::kActivation:
      activation(std::move(inst));
      break;
    case Opcode::kTensorReduce:
      tensor_reduce(std::move(inst));
      break;
    case Opcode::kPartitionReduce:
      partition_reduce(std::move(inst));
      break;
    case Opcode::kMatmul:
      matmul(std::move(inst));
      break;
    case Opcode::kTranspose:
      transpose(std::move(inst));
      break;
    case Opcode::kMemset:
      memset(std::move(inst));
      break;
    case Opcode::kSelect:
      select(std::move(inst));
      break;
    case Opcode::kIota:
      iota(std::move(inst));
      break;
  }
}

std::size_t Program::dma_copy(Instruction inst) {
  inst.op = Opcode::kDmaCopy;
  if (inst.srcs.size() != 1) throw std::invalid_argument("dma_copy takes one source");
  inst.engines = engine_bit(Engine::kDma);
  check_memory(inst, inst.dst, "dst", true, true, false);
  check_memory(inst, inst.srcs[0], "src", true, true, false);
  check_partitions(inst, inst.dst, "dst");
  check_partitions(inst, inst.srcs[0], "src");
  if (inst.dst.elements() != inst.srcs[0].elements()) {
    fail(inst.api + " dst " + inst.dst.shape_string() + " and src " + inst.srcs[0].shape_string() +
         " have different element counts (" + str(inst.dst.elements()) + " and " +
         str(inst.srcs[0].elements()) + ")");
  }
  return append(std::move(inst));
}

std::size_t Program::tensor_copy(Instruction inst) {
  inst.op = Opcode::kTensorCopy;
  if (inst.srcs.size() != 1) throw std::invalid_argument("tensor_copy takes one source");
  if (inst.engines == 0) inst.engines = kLaneEngines;
  check_memory(inst, inst.dst, "dst", false, true, true);
  check_memory(inst, inst.srcs[0], "src", false, true, true);
  check_partitions(inst, inst.srcs[0], "src");
  check_partitions(inst, inst.dst, "dst");
  check_same_shape(inst, inst.dst, "dst", inst.srcs[0], "src");
  check_engines(inst);
  return append(std::move(inst));
}

std::size_t Program::tensor_tensor(Instruction inst) {
  inst.op = Opcode::kTensorTensor;
  if (inst.srcs.size() != 2) throw std::invalid_argument("tensor_tensor takes two sources");
  if (inst.engines == 0) inst.engines = engine_bit(Engine::kVector);
  check_memory(inst, inst.srcs[0], "data1", false, true, true);
  check_memory(inst, inst.srcs[1], "data2", false, true, true);
  check_memory(inst, inst.dst, "dst", false, true, true);
  check_partitions(inst, inst.srcs[0], "data1");
  check_partitions(inst, inst.srcs[1], "data2");
  check_partitions(inst, inst.dst, "dst");
  check_same_shape(inst, inst.srcs[0], "data1", inst.srcs[1], "data2");
  check_same_shape(inst, inst.srcs[0], "data1", inst.dst, "dst");
  if (tensor(inst.srcs[0]).memory == Memory::kPsum &&
      tensor(inst.srcs[1]).memory == Memory::kPsum) {
    fail(inst.api + " data1 and data2 cannot both be in PSUM; copy one of them to SBUF first");
  }
  check_engines(inst);
  return append(std::move(inst));
}

std::size_t Program::tensor_scalar(Instruction inst) {
  inst.op = Opcode::kTensorScalar;
  if (inst.srcs.empty()) throw std::invalid_argument("tensor_scalar takes a data source");
  if (inst.engines == 0) inst.engines = engine_bit(Engine::kVector);
  check_memory(inst, inst.srcs[0], "data", false, true, true);
  check_memory(inst, inst.dst, "dst", false, true, true);
  check_partitions(inst, inst.srcs[0], "data");
  check_partitions(inst, inst.dst, "dst");
  check_same_shape(inst, inst.srcs[0], "data", inst.dst, "dst");
  for (int k : {inst.operand0, inst.operand1}) {
    if (k < 0) continue;
    const Access& op = inst.srcs.at(static_cast<std::size_t>(k));
    const char* name = k == inst.operand0 ? "operand0" : "operand1";
    check_memory(inst, op, name, false, true, true);
    check_partitions(inst, op, name);
    if (op.partitions() != inst.srcs[0].partitions() || op.free_elements() != 1) {
      fail(inst.api + " " + name + " " + op.shape_string() +
           " must be a scalar or a vector with one element per partition of data " +
           inst.srcs[0].shape_string());
    }
  }
  if (is_bitvec(inst.alu0) != is_bitvec(inst.alu1) && inst.alu1 != AluOp::kBypass) {
    fail(inst.api + " op0 (" + std::string(alu_op_name(inst.alu0)) + ") and op1 (" +
         std::string(alu_op_name(inst.alu1)) +
         ") must both be arithmetic or both be bitvec operators");
  }
  if (inst.has_reduce) {
    check_memory(inst, inst.reduce_dst, "reduce_res", false, true, true);
    if (inst.reduce_dst.partitions() != inst.dst.partitions() ||
        inst.reduce_dst.free_elements() != 1) {
      fail(inst.api + " reduce_res " + inst.reduce_dst.shape_string() +
           " must hold one element per partition of dst " + inst.dst.shape_string());
    }
  }
  check_engines(inst);
  return append(std::move(inst));
}

std::size_t Program::activation(Instruction inst) {
  inst.op = Opcode::kActivation;
  if (inst.srcs.empty()) throw std::invalid_argument("activation takes a data source");
  // The Scalar engine runs activations; Vector also computes reciprocal (more precisely).
  if (!(inst.func == ActFunc::kReciprocal && inst.engines == engine_bit(Engine::kVector))) {
    inst.engines = engine_bit(Engine::kScalar);
  }
  check_memory(inst, inst.srcs[0], "data", false, true, true);
  check_memory(inst, inst.dst, "dst", false, true, true);
  check_partitions(inst, inst.srcs[0], "data");
  check_partitions(inst, inst.dst, "dst");
  check_same_shape(inst, inst.srcs[0], "data", inst.dst, "dst");
  if (inst.bias >= 0) {
    const Access& b = inst.srcs.at(static_cast<std::size_t>(inst.bias));
    const DType d = tensor(b).dtype;
    if (d != DType::kFloat32 && d != DType::kFloat16 && d != DType::kBFloat16) {
      fail(
          "Bias parameter of activation or activation_reduce must be a vector of type "
          "float32, float16, or bfloat16.");
    }
    check_memory(inst, b, "bias", false, true, true);
    if (b.partitions() != inst.srcs[0].partitions() || b.free_elements() != 1) {
      fail(inst.api + " bias " + b.shape_string() +
           " must be a vector with one element per partition of data " +
           inst.srcs[0].shape_string());
    }
  }
  if (inst.scale >= 0) {
    const Access& s = inst.srcs.at(static_cast<std::size_t>(inst.scale));
    if (tensor(s).dtype != DType::kFloat32) {
      fail(
          "Scale parameter of activation or activation_reduce must be a scalar or vector of "
          "type float32.");
    }
    if (s.partitions() != inst.srcs[0].partitions() || s.free_elements() != 1) {
      fail(
          "Scale parameter of activation must be either a scalar value or a 1D vector "
          "spanning the partition dimension.");
    }
  }
  if (inst.has_reduce) {
    check_memory(inst, inst.reduce_dst, "reduce_res", false, true, true);
    if (inst.reduce_dst.partitions() != inst.dst.partitions() ||
        inst.reduce_dst.free_elements() != 1) {
      fail(inst.api + " reduce_res " + inst.reduce_dst.shape_string() +
           " must hold one element per partition of dst " + inst.dst.shape_string());
    }
  }
  return append(std::move(inst));
}

std::size_t Program::tensor_reduce(Instruction inst) {
  inst.op = Opcode::kTensorReduce;
  if (inst.srcs.size() != 1) throw std::invalid_argument("tensor_reduce takes one source");
  if (inst.engines == 0) inst.engines = engine_bit(Engine::kVector);
  const Access& data = inst.srcs[0];
  check_memory(inst, data, "data", false, true, true);
  check_memory(inst, inst.dst, "dst", false, true, true);
  check_partitions(inst, data, "data");
  check_partitions(inst, inst.dst, "dst");
  std::int64_t kept = 1;
  const int rank = static_cast<int>(data.dims.size());
  for (int axis : inst.axes) {
    if (axis < 1 || axis >= rank) {
      fail(inst.api + " axis " + str(axis) + " is not a free dimension of data " +
           data.shape_string() + "; reduce along axes 1.." + str(rank - 1));
    }
  }
  for (int d = 1; d < rank; ++d) {
    if (std::find(inst.axes.begin(), inst.axes.end(), d) == inst.axes.end()) {
      kept *= data.dims[static_cast<std::size_t>(d)].count;
    }
  }
  if (inst.dst.partitions() != data.partitions() || inst.dst.free_elements() != kept) {
    fail(inst.api + " dst " + inst.dst.shape_string() + " does not match data " +
         data.shape_string() + " reduced along the given axes (" + str(data.partitions()) +
         " partitions x " + str(kept) + " elements)");
  }
  reduce_identity(inst.alu0);  // throws for operators that cannot reduce
  check_engines(inst);
  return append(std::move(inst));
}

std::size_t Program::partition_reduce(Instruction inst) {
  inst.op = Opcode::kPartitionReduce;
  if (inst.srcs.size() != 1) throw std::invalid_argument("partition reduce takes one source");
  inst.engines = engine_bit(Engine::kGpSimd);
  check_memory(inst, inst.srcs[0], "data", false, true, false);
  check_memory(inst, inst.dst, "dst", false, true, false);
  check_partitions(inst, inst.srcs[0], "data");
  if (inst.dst.partitions() != 1 || inst.dst.free_elements() != inst.srcs[0].free_elements()) {
    fail(inst.api + " dst " + inst.dst.shape_string() + " must be one partition of data's " +
         str(inst.srcs[0].free_elements()) + " elements");
  }
  reduce_identity(inst.alu0);
  return append(std::move(inst));
}

std::size_t Program::matmul(Instruction inst) {
  inst.op = Opcode::kMatmul;
  if (inst.srcs.size() != 2) throw std::invalid_argument("nc_matmul takes two sources");
  inst.engines = engine_bit(Engine::kTensor);
  const Access& st = inst.srcs[0];
  const Access& mv = inst.srcs[1];
  check_memory(inst, st, "stationary", false, true, false);
  check_memory(inst, mv, "moving", false, true, false);
  check_memory(inst, inst.dst, "dst", false, false, true);
  check_partitions(inst, st, "stationary");
  check_partitions(inst, mv, "moving");
  if (st.partitions() != mv.partitions()) {
    fail("number of partitions (dimension 0 size of a tile) mismatch in parameters (stationary" +
         st.shape_string() + ", moving" + mv.shape_string() + ") of '" + inst.api + "'");
  }
  if (st.free_elements() > arch_->gemm_stationary_fmax) {
    fail(inst.api + " stationary free dimension " + str(st.free_elements()) + " exceeds maximum " +
         str(arch_->gemm_stationary_fmax));
  }
  if (mv.free_elements() > arch_->gemm_moving_fmax) {
    fail(inst.api + " moving free dimension " + str(mv.free_elements()) + " exceeds maximum " +
         str(arch_->gemm_moving_fmax));
  }
  check_partitions(inst, inst.dst, "dst");
  if (inst.dst.partitions() != st.free_elements() ||
      inst.dst.free_elements() != mv.free_elements()) {
    fail(inst.api + " dst " + inst.dst.shape_string() + " must be [" + str(st.free_elements()) +
         ", " + str(mv.free_elements()) + "]: stationary's free size by moving's free size");
  }
  const DType dd = tensor(inst.dst).dtype;
  const bool v4 = arch_->nc_gen == "gen4";
  if (dd != DType::kFloat32 && !(v4 && dd == DType::kBFloat16)) {
    fail(inst.api + " dst dtype " + std::string(dtype_name(dd)) + " is not supported on " +
         std::string(arch_->target) + ": matmul accumulates in PSUM as float32" +
         (v4 ? " or bfloat16" : " (trn3 also accepts bfloat16)"));
  }
  const std::int64_t dst_bytes =
      inst.dst.free_elements() * static_cast<std::int64_t>(dtype_size(dd));
  if (dst_bytes > static_cast<std::int64_t>(arch_->psum_bank_bytes_per_partition)) {
    fail(inst.api + " dst holds " + str(dst_bytes) +
         " bytes per partition, more than one PSUM bank (" +
         str(static_cast<std::int64_t>(arch_->psum_bank_bytes_per_partition)) + " bytes)");
  }
  const DType sd = tensor(st).dtype, md = tensor(mv).dtype;
  if (is_fp32_like(sd) != is_fp32_like(md)) {
    fail(inst.api + " stationary (" + std::string(dtype_name(sd)) + ") and moving (" +
         std::string(dtype_name(md)) +
         ") must both be float32/tfloat32 or both be 16-bit or 8-bit floats");
  }
  if (!is_float(sd) || !is_float(md)) {
    fail(inst.api + " operands must be float types, got stationary " + std::string(dtype_name(sd)) +
         " and moving " + std::string(dtype_name(md)));
  }
  return append(std::move(inst));
}

std::size_t Program::transpose(Instruction inst) {
  inst.op = Opcode::kTranspose;
  if (inst.srcs.size() != 1) throw std::invalid_argument("nc_transpose takes one source");
  if (inst.engines == 0) inst.engines = engine_bit(Engine::kTensor);
  const Access& in = inst.srcs[0];
  const bool tensor_engine = inst.engines == engine_bit(Engine::kTensor);
  const std::int64_t limit = tensor_engine ? arch_->partitions : 32;
  check_memory(inst, in, "data", false, true, !tensor_engine);
  check_memory(inst, inst.dst, "dst", false, !tensor_engine, true);
  if (in.partitions() > limit) {
    fail("size of dimension 0 in 'data" + in.shape_string() + "' of '" + inst.api +
         "' exceed architecture limitation of " + str(limit) + ".");
  }
  if (in.free_elements() > limit) {
    fail("size of dimension 1 in 'data" + in.shape_string() + "' of '" + inst.api +
         "' exceed architecture limitation of " + str(limit) + ".");
  }
  check_partitions(inst, in, "data");
  check_partitions(inst, inst.dst, "dst");
  if (inst.dst.partitions() != in.free_elements() || inst.dst.free_elements() != in.partitions()) {
    fail(inst.api + " dst " + inst.dst.shape_string() + " must be [" + str(in.free_elements()) +
         ", " + str(in.partitions()) + "], the transpose of data " + in.shape_string());
  }
  return append(std::move(inst));
}

std::size_t Program::memset(Instruction inst) {
  inst.op = Opcode::kMemset;
  inst.srcs.clear();
  if (inst.engines == 0) inst.engines = engine_bit(Engine::kVector) | engine_bit(Engine::kGpSimd);
  check_memory(inst, inst.dst, "dst", false, true, true);
  check_partitions(inst, inst.dst, "dst");
  check_engines(inst);
  return append(std::move(inst));
}

std::size_t Program::select(Instruction inst) {
  inst.op = Opcode::kSelect;
  if (inst.srcs.size() != 1) throw std::invalid_argument("affine_select takes one source");
  if (inst.engines == 0) inst.engines = engine_bit(Engine::kGpSimd) | engine_bit(Engine::kVector);
  check_memory(inst, inst.dst, "dst", false, true, true);
  check_memory(inst, inst.srcs[0], "on_true_tile", false, true, true);
  check_partitions(inst, inst.dst, "dst");
  check_partitions(inst, inst.srcs[0], "on_true_tile");
  check_same_shape(inst, inst.dst, "dst", inst.srcs[0], "on_true_tile");
  if (inst.mask.empty()) fail(inst.api + " needs a predicate");
  check_engines(inst);
  return append(std::move(inst));
}

std::size_t Program::iota(Instruction inst) {
  inst.op = Opcode::kIota;
  inst.srcs.clear();
  inst.engines = engine_bit(Engine::kGpSimd);
  check_memory(inst, inst.dst, "dst", false, true, false);
  check_partitions(inst, inst.dst, "dst");
  std::int64_t n = 1;
  if (inst.pattern.size() % 2 != 0) fail(inst.api + " pattern must be [step, count] pairs");
  for (std::size_t i = 1; i < inst.pattern.size(); i += 2) n *= inst.pattern[i];
  if (n != inst.dst.free_elements()) {
    fail(inst.api + " pattern covers " + str(n) + " elements per partition but dst " +
         inst.dst.shape_string() + " has " + str(inst.dst.free_elements()));
  }
  return append(std::move(inst));
}

}  // namespace vtrn::nki
