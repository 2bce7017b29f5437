// The NKI interpreter for Python: programs the `nki` package traces, their checks, their runs
// and their modeled time. No torch. bind_nki() fills vtrn._core.nki (core_module.cc).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <utility>
#include <vector>

#include "vtrn/bindings/bindings.h"
#include "vtrn/cost/instruction_cost.h"
#include "vtrn/hw/instance.h"
#include "vtrn/nki/interpreter.h"
#include "vtrn/nki/program.h"
#include "vtrn/nki/registry.h"
#include "vtrn/nki/schedule.h"

namespace py = pybind11;

namespace vtrn::bindings {
using namespace vtrn::nki;

namespace {

std::vector<std::uint8_t> to_bytes(const py::object& obj) {
  if (obj.is_none()) return {};
  py::array_t<std::uint8_t, py::array::c_style | py::array::forcecast> arr(obj);
  return {arr.data(), arr.data() + arr.size()};
}

// A program plus the cost model of its target; the unit Python holds.
struct PyProgram {
  explicit PyProgram(const std::string& target)
      : program(target), model(cost::InstructionCostModel::for_target(target)) {}
  Program program;
  cost::InstructionCostModel model;
};

Instruction base(const Access& dst, std::string api, std::string origin, const py::object& mask,
                 const std::string& engine = "auto") {
  Instruction inst;
  inst.dst = dst;
  inst.api = std::move(api);
  inst.origin = std::move(origin);
  inst.mask = to_bytes(mask);
  inst.engines = parse_engines(engine, 0);
  return inst;
}

// An operand that is either a Python number (immediate) or an Access (tile).
void set_operand(Instruction& inst, const py::object& value, int& index, double& imm) {
  if (py::isinstance<Access>(value)) {
    index = static_cast<int>(inst.srcs.size());
    inst.srcs.push_back(value.cast<Access>());
  } else {
    imm = value.cast<double>();
  }
}

void set_reduce(Instruction& inst, const py::object& reduce_op, const py::object& reduce_res) {
  if (reduce_res.is_none()) return;
  inst.has_reduce = true;
  inst.reduce_dst = reduce_res.cast<Access>();
  inst.reduce_op = parse_alu_op(reduce_op.is_none() ? "add" : reduce_op.cast<std::string>());
}

py::dict schedule_dict(const Schedule& s) {
  py::dict d;
  d["latency_s"] = s.latency_s;
  py::dict busy, counts;
  for (int e = 0; e < kEngineCount; ++e) {
    const std::string name(cost::engine_name(static_cast<cost::Engine>(e)));
    busy[name.c_str()] = s.busy_s[static_cast<std::size_t>(e)];
    counts[name.c_str()] = s.instructions[static_cast<std::size_t>(e)];
  }
  d["engine_busy_s"] = busy;
  d["engine_instructions"] = counts;
  d["sbuf_peak_bytes_per_partition"] = s.sbuf.bytes_per_partition;
  d["psum_peak_bytes_per_partition"] = s.psum.bytes_per_partition;
  d["matmul_flops"] = s.matmul_flops;
  d["dma_bytes"] = s.dma_bytes;
  return d;
}

hw::TensorEngineDType cost_dtype(const std::string& name) {
  if (name == "bfloat16") return hw::TensorEngineDType::kBF16;
  if (name == "float16") return hw::TensorEngineDType::kFP16;
  if (name == "tfloat32") return hw::TensorEngineDType::kTF32;
  if (name.rfind("float8", 0) == 0) return hw::TensorEngineDType::kFP8;
  return hw::TensorEngineDType::kFP32;
}

}  // namespace

void bind_nki(py::module_& m) {
  m.doc() = "vtrn's NKI interpreter: traced kernel programs, their checks, runs and time";
  // Capacity errors are validation errors; translators run newest first, so register the
  // base class first.
  auto& validation =
      py::register_exception<ValidationError>(m, "NkiValidationError", PyExc_AssertionError);
  py::register_exception<CapacityError>(m, "NkiCapacityError", validation.ptr());

  py::class_<Access>(m, "Access")
      .def(py::init([](std::int32_t tensor, std::int64_t offset,
                       const std::vector<std::pair<std::int64_t, std::int64_t>>& dims) {
             Access a;
             a.tensor = tensor;
             a.offset = offset;
             for (const auto& [stride, count] : dims) a.dims.push_back({stride, count});
             return a;
           }),
           py::arg("tensor"), py::arg("offset"), py::arg("dims"))
      .def_readonly("tensor", &Access::tensor)
      .def_readonly("offset", &Access::offset)
      .def_property_readonly("dims", [](const Access& a) {
        std::vector<std::pair<std::int64_t, std::int64_t>> out;
        for (const Dim& d : a.dims) out.emplace_back(d.stride, d.count);
        return out;
      });

  py::class_<PyProgram>(m, "Program")
      .def(py::init<const std::string&>(), py::arg("target"))
      .def_property_readonly(
          "target", [](const PyProgram& p) { return std::string(p.program.arch().target); })
      .def("__len__", [](const PyProgram& p) { return p.program.instructions().size(); })
      .def(
          "add_tensor",
          [](PyProgram& p, const std::string& name, const std::string& memory,
             const std::string& dtype, const std::vector<std::int64_t>& shape,
             const std::string& origin, bool external) {
            TensorDecl d;
            d.name = name;
            d.memory = parse_memory(memory);
            d.dtype = parse_dtype(dtype);
            d.shape = shape;
            d.origin = origin;
            d.external = external;
            return p.program.add_tensor(std::move(d));
          },
          py::arg("name"), py::arg("memory"), py::arg("dtype"), py::arg("shape"), py::arg("origin"),
          py::arg("external") = false)
      .def("set_external", [](PyProgram& p, std::int32_t t) { p.program.set_external(t); })
      .def("enter_iteration",
           [](PyProgram& p, std::int64_t loop, std::int64_t it, const std::string& origin) {
             p.program.enter_iteration(loop, it, origin);
           })
      .def("exit_iteration", [](PyProgram& p) { p.program.exit_iteration(); })
      .def(
          "dma_copy",
          [](PyProgram& p, const Access& dst, const Access& src, const std::string& api,
             const std::string& origin, const py::object& mask) {
            Instruction inst = base(dst, api, origin, mask);
            inst.srcs = {src};
            return p.program.dma_copy(std::move(inst));
          },
          py::arg("dst"), py::arg("src"), py::arg("api"), py::arg("origin"),
          py::arg("mask") = py::none())
      .def(
          "tensor_copy",
          [](PyProgram& p, const Access& dst, const Access& src, const std::string& engine,
             const std::string& api, const std::string& origin, const py::object& mask) {
            Instruction inst = base(dst, api, origin, mask, engine);
            inst.srcs = {src};
            return p.program.tensor_copy(std::move(inst));
          },
          py::arg("dst"), py::arg("src"), py::arg("engine"), py::arg("api"), py::arg("origin"),
          py::arg("mask") = py::none())
      .def(
          "tensor_tensor",
          [](PyProgram& p, const Access& dst, const Access& a, const Access& b,
             const std::string& op, const std::string& engine, const std::string& api,
             const std::string& origin, const py::object& mask) {
            Instruction inst = base(dst, api, origin, mask, engine);
            inst.srcs = {a, b};
            inst.alu0 = parse_alu_op(op);
            return p.program.tensor_tensor(std::move(inst));
          },
          py::arg("dst"), py::arg("data1"), py::arg("data2"), py::arg("op"), py::arg("engine"),
          py::arg("api"), py::arg("origin"), py::arg("mask") = py::none())
      .def(
          "tensor_scalar",
          [](PyProgram& p, const Access& dst, const Access& data, const std::string& op0,
             const py::object& operand0, bool reverse0, const std::string& op1,
             const py::object& operand1, bool reverse1, const py::object& reduce_op,
             const py::object& reduce_res, const std::string& engine, const std::string& api,
             const std::string& origin, const py::object& mask) {
            Instruction inst = base(dst, api, origin, mask, engine);
            inst.srcs = {data};
            inst.alu0 = parse_alu_op(op0);
            inst.alu1 = parse_alu_op(op1);
            inst.reverse0 = reverse0;
            inst.reverse1 = reverse1;
            set_operand(inst, operand0, inst.operand0, inst.imm0);
            if (!operand1.is_none()) set_operand(inst, operand1, inst.operand1, inst.imm1);
            set_reduce(inst, reduce_op, reduce_res);
            return p.program.tensor_scalar(std::move(inst));
          },
          py::arg("dst"), py::arg("data"), py::arg("op0"), py::arg("operand0"), py::arg("reverse0"),
          py::arg("op1"), py::arg("operand1"), py::arg("reverse1"), py::arg("reduce_op"),
          py::arg("reduce_res"), py::arg("engine"), py::arg("api"), py::arg("origin"),
          py::arg("mask") = py::none())
      .def(
          "activation",
          [](PyProgram& p, const Access& dst, const Access& data, const std::string& func,
             const py::object& bias, const py::object& scale, const py::object& reduce_op,
             const py::object& reduce_res, const std::string& engine, const std::string& api,
             const std::string& origin, const py::object& mask) {
            Instruction inst = base(dst, api, origin, mask, engine);
            inst.srcs = {data};
            inst.func = parse_act_func(func);
            if (!bias.is_none()) {
              inst.bias = static_cast<int>(inst.srcs.size());
              inst.srcs.push_back(bias.cast<Access>());
            }
            set_operand(inst, scale, inst.scale, inst.imm0);
            set_reduce(inst, reduce_op, reduce_res);
            return p.program.activation(std::move(inst));
          },
          py::arg("dst"), py::arg("data"), py::arg("func"), py::arg("bias"), py::arg("scale"),
          py::arg("reduce_op"), py::arg("reduce_res"), py::arg("engine"), py::arg("api"),
          py::arg("origin"), py::arg("mask") = py::none())
      .def(
          "tensor_reduce",
          [](PyProgram& p, const Access& dst, const Access& data, const std::string& op,
             const std::vector<int>& axes, bool negate, const std::string& engine,
             const std::string& api, const std::string& origin, const py::object& mask) {
            Instruction inst = base(dst, api, origin, mask, engine);
            inst.srcs = {data};
            inst.alu0 = parse_alu_op(op);
            inst.axes = axes;
            inst.negate = negate;
            return p.program.tensor_reduce(std::move(inst));
          },
          py::arg("dst"), py::arg("data"), py::arg("op"), py::arg("axes"), py::arg("negate"),
          py::arg("engine"), py::arg("api"), py::arg("origin"), py::arg("mask") = py::none())
      .def(
          "partition_reduce",
          [](PyProgram& p, const Access& dst, const Access& data, const std::string& op,
             const std::string& api, const std::string& origin) {
            Instruction inst = base(dst, api, origin, py::none());
            inst.srcs = {data};
            inst.alu0 = parse_alu_op(op);
            return p.program.partition_reduce(std::move(inst));
          },
          py::arg("dst"), py::arg("data"), py::arg("op"), py::arg("api"), py::arg("origin"))
      .def(
          "matmul",
          [](PyProgram& p, const Access& dst, const Access& stationary, const Access& moving,
             int accumulate, const std::string& api, const std::string& origin) {
            Instruction inst = base(dst, api, origin, py::none());
            inst.srcs = {stationary, moving};
            inst.accumulate = static_cast<Accumulate>(accumulate);
            return p.program.matmul(std::move(inst));
          },
          py::arg("dst"), py::arg("stationary"), py::arg("moving"), py::arg("accumulate"),
          py::arg("api"), py::arg("origin"))
      .def(
          "transpose",
          [](PyProgram& p, const Access& dst, const Access& data, const std::string& engine,
             const std::string& api, const std::string& origin) {
            Instruction inst =
                base(dst, api, origin, py::none(), engine == "auto" ? "tensor" : engine);
            inst.srcs = {data};
            return p.program.transpose(std::move(inst));
          },
          py::arg("dst"), py::arg("data"), py::arg("engine"), py::arg("api"), py::arg("origin"))
      .def(
          "memset",
          [](PyProgram& p, const Access& dst, double value, const std::string& engine,
             const std::string& api, const std::string& origin, const py::object& mask) {
            Instruction inst = base(dst, api, origin, mask, engine);
            inst.imm0 = value;
            return p.program.memset(std::move(inst));
          },
          py::arg("dst"), py::arg("value"), py::arg("engine"), py::arg("api"), py::arg("origin"),
          py::arg("mask") = py::none())
      .def(
          "select",
          [](PyProgram& p, const Access& dst, const Access& on_true, const py::object& pred,
             double on_false, const std::string& engine, const std::string& api,
             const std::string& origin) {
            Instruction inst = base(dst, api, origin, pred, engine);
            inst.srcs = {on_true};
            inst.imm0 = on_false;
            return p.program.select(std::move(inst));
          },
          py::arg("dst"), py::arg("on_true"), py::arg("pred"), py::arg("on_false"),
          py::arg("engine"), py::arg("api"), py::arg("origin"))
      .def(
          "iota",
          [](PyProgram& p, const Access& dst, const std::vector<std::int64_t>& pattern,
             double offset, double channel_multiplier, const std::string& api,
             const std::string& origin) {
            Instruction inst = base(dst, api, origin, py::none());
            inst.pattern = pattern;
            inst.imm0 = offset;
            inst.imm1 = channel_multiplier;
            return p.program.iota(std::move(inst));
          },
          py::arg("dst"), py::arg("pattern"), py::arg("offset"), py::arg("channel_multiplier"),
          py::arg("api"), py::arg("origin"))
      .def(
          "retarget",
          [](PyProgram& p, std::size_t index, const Access& dst, int accumulate) {
            p.program.retarget(index, dst, static_cast<Accumulate>(accumulate));
          },
          py::arg("index"), py::arg("dst"), py::arg("accumulate"))
      .def("check_capacity", [](PyProgram& p) { check_capacity(p.program); })
      .def("fingerprint", [](PyProgram& p) { return py::bytes(fingerprint(p.program)); })
      .def(
          "register",
          [](PyProgram& p, const std::string& key, std::vector<std::int32_t> inputs,
             std::vector<std::int32_t> results, std::vector<std::size_t> mutated) {
            RegisteredKernel k{p.program, std::move(inputs), std::move(results),
                               std::move(mutated)};
            register_kernel(key, std::move(k));
          },
          py::arg("key"), py::arg("inputs"), py::arg("results"), py::arg("mutated"),
          "Registers a copy of the program under |key| for `custom_call @vtrn.nki`")
      .def("schedule", [](PyProgram& p) { return schedule_dict(schedule(p.program, p.model)); })
      .def("timeline",
           [](PyProgram& p) {
             const Schedule s = schedule(p.program, p.model);
             py::list out;
             const auto& insts = p.program.instructions();
             for (std::size_t i = 0; i < insts.size(); ++i) {
               const InstructionTiming& t = s.timing[i];
               out.append(py::make_tuple(insts[i].api, insts[i].origin,
                                         std::string(cost::engine_name(t.engine)), t.start_s,
                                         t.end_s, t.done_s));
             }
             return out;
           })
      .def(
          "run",
          [](PyProgram& p, const std::vector<std::tuple<std::int32_t, py::array, bool>>& bindings) {
            Interpreter interp(p.program);
            for (const auto& [tensor, array, fill] : bindings) {
              if (!(array.flags() & py::array::c_style) || !array.writeable()) {
                throw std::invalid_argument("kernel memory must be a writable C-contiguous array");
              }
              interp.bind(tensor, const_cast<void*>(array.data()),
                          static_cast<std::size_t>(array.nbytes()), fill);
            }
            py::gil_scoped_release release;
            interp.run();
          },
          py::arg("bindings"));

  m.def(
      "registered_kernel",
      [](const std::string& key) -> py::object {
        const std::shared_ptr<const RegisteredKernel> k = find_kernel(key);
        if (!k) return py::none();
        py::dict d;
        d["instructions"] = k->program.instructions().size();
        d["latency_s"] = k->latency_s;
        d["engine"] = std::string(cost::engine_name(k->engine));
        d["backend_config"] = backend_config(key, *k);
        return d;
      },
      py::arg("key"), "The kernel registered under |key| for `custom_call @vtrn.nki`, or None");
  m.def(
      "core_arch",
      [](const std::string& target) {
        const hw::CoreArch* a = hw::find_core_arch(target);
        if (a == nullptr) {
          throw std::invalid_argument("unknown NKI target '" + target +
                                      "'; use trn1 (gen2), trn2 (gen3) or trn3 (gen4)");
        }
        py::dict d;
        d["core_name"] = std::string(a->core_name);
        d["target"] = std::string(a->target);
        d["nc_gen"] = std::string(a->nc_gen);
        d["partitions"] = a->partitions;
        d["sbuf_bytes"] = a->sbuf_bytes;
        d["psum_bytes"] = a->psum_bytes;
        d["psum_banks"] = a->psum_banks;
        d["psum_bank_bytes"] = a->psum_bank_bytes_per_partition;
        d["gemm_stationary_fmax"] = a->gemm_stationary_fmax;
        d["gemm_moving_fmax"] = a->gemm_moving_fmax;
        return d;
      },
      py::arg("target"));
  m.def(
      "kernel_cost",
      [](const std::string& target, std::int64_t m_, std::int64_t n, std::int64_t k,
         const std::string& dtype, double bytes) {
        const hw::CoreArch* a = hw::find_core_arch(target);
        if (a == nullptr) throw std::invalid_argument("unknown NKI target '" + target + "'");
        cost::CostModel model(*hw::find_instance(a->instance).chip);
        cost::Work w;
        w.batch = 1;
        w.m = m_;
        w.n = n;
        w.k = k;
        w.tensor_dtype = cost_dtype(dtype);
        w.bytes = bytes;
        const cost::KernelCost c = model.estimate(w);
        py::dict d;
        d["time_s"] = c.time_s;
        d["tensor_s"] = c.tensor_s;
        d["dma_s"] = c.dma_s;
        d["fixed_s"] = c.fixed_s;
        d["engine"] = std::string(cost::engine_name(c.engine));
        return d;
      },
      py::arg("target"), py::arg("m"), py::arg("n"), py::arg("k"), py::arg("dtype"),
      py::arg("bytes"),
      "cost's whole-kernel time of one (m x k) . (k x n) dot_general moving |bytes| of HBM");
}

}  // namespace vtrn::bindings
