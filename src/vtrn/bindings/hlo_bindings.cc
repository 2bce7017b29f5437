// vtrn._core.hlo: the hlo / compiler / runtime-executor layers from Python (no torch).
//
//   parse(text) -> str                       canonical printed module (raises ValueError)
//   compile(text, opt_level=2, fusion=True) -> dict   kernels, modeled times, cache source
//   run(text, inputs, opt_level=2, fusion=True) -> (outputs, info)
//   cache_counters() -> dict, clear_memory_cache()
// bfloat16 tensors are exchanged as uint16 arrays holding the bf16 bits.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>

#include "vtrn/bindings/bindings.h"
#include "vtrn/compiler/executable.h"
#include "vtrn/hlo/parser.h"
#include "vtrn/hlo/printer.h"
#include "vtrn/runtime/compile_cache.h"
#include "vtrn/runtime/executor.h"

namespace py = pybind11;

namespace vtrn::bindings {

namespace {

const char* numpy_name(hlo::DType d) {
  switch (d) {
    case hlo::DType::kPred:
      return "bool";
    case hlo::DType::kI8:
      return "int8";
    case hlo::DType::kI16:
      return "int16";
    case hlo::DType::kI32:
      return "int32";
    case hlo::DType::kI64:
      return "int64";
    case hlo::DType::kU8:
      return "uint8";
    case hlo::DType::kU16:
      return "uint16";
    case hlo::DType::kU32:
      return "uint32";
    case hlo::DType::kU64:
      return "uint64";
    case hlo::DType::kF16:
      return "float16";
    case hlo::DType::kBF16:
      return "uint16";
    case hlo::DType::kF32:
      return "float32";
    case hlo::DType::kF64:
      return "float64";
    case hlo::DType::kC64:
      return "complex64";
  }
  return "float32";
}

hlo::Module parse(const std::string& text) {
  try {
    return hlo::parse_module(text);
  } catch (const hlo::Error& e) {
    throw py::value_error(e.what());
  }
}

py::list shape_list(const std::vector<hlo::TensorType>& ts) {
  py::list l;
  for (const auto& t : ts)
    l.append(py::make_tuple(std::string(hlo::dtype_name(t.dtype)), py::tuple(py::cast(t.dims))));
  return l;
}

py::dict info(const runtime::CacheResult& r) {
  const compiler::Executable& exe = r.executable->executable();
  const hlo::Block& b = exe.module.main;
  py::list kernels;
  for (const compiler::Kernel& k : exe.kernels) {
    if (k.kind == compiler::KernelKind::kConstant) continue;
    py::dict d;
    d["name"] = k.name;
    d["kind"] = k.kind == compiler::KernelKind::kFused     ? "fused"
                : k.kind == compiler::KernelKind::kBitcast ? "bitcast"
                                                           : "op";
    py::list ops;
    for (int i : k.ops) ops.append(std::string(hlo::op_name(b.ops[i].kind)));
    d["ops"] = ops;
    d["engine"] = std::string(cost::engine_name(k.cost.engine));
    d["time_s"] = k.cost.time_s;
    d["flops"] = k.cost.flops;
    d["tile_efficiency"] = k.cost.tile_efficiency;
    kernels.append(d);
  }
  py::dict d;
  d["key"] = r.key;
  d["source"] = std::string(runtime::cache_source_name(r.source));
  d["cache_hit"] = r.source != runtime::CacheSource::kCompiled;
  d["kernels"] = kernels;
  d["modeled_time_s"] = exe.modeled_time_s();
  d["peak_scratch_bytes"] = exe.peak_scratch_bytes();
  d["intermediate_bytes"] = exe.buffers.intermediate_bytes;
  d["donor_of_output"] = exe.buffers.donor_of_result;
  d["inputs"] = shape_list(r.executable->input_types());
  d["outputs"] = shape_list(r.executable->output_types());
  return d;
}

runtime::CacheResult compile_text(const std::string& text, int opt_level, bool fusion) {
  hlo::Module m = parse(text);
  compiler::CompileOptions o;
  o.opt_level = opt_level;
  o.fusion = fusion;
  try {
    return runtime::CompileCache::global().get_or_compile(m, o);
  } catch (const hlo::Error& e) {
    throw py::value_error(e.what());
  }
}

}  // namespace

void bind_hlo(py::module_& m) {
  m.doc() = "vtrn StableHLO parser, compiler (with the persistent compile cache) and executor";
  m.attr("COMPILER_VERSION") = compiler::kCompilerVersion;
  {
    py::dict numpy_dtypes;  // StableHLO element type -> the numpy dtype that carries it
    for (int d = 0; d <= static_cast<int>(hlo::DType::kC64); ++d)
      numpy_dtypes[py::str(std::string(hlo::dtype_name(static_cast<hlo::DType>(d))))] =
          numpy_name(static_cast<hlo::DType>(d));
    m.attr("NUMPY_DTYPES") = numpy_dtypes;
    const hw::ChipSpec& chip = cost::CostModel::trn2().chip();
    m.attr("COST_MODEL_CORE") = std::string(chip.core_name) + " (" + std::string(chip.name) + ")";
  }

  m.def(
      "parse", [](const std::string& text) { return hlo::print_module(parse(text)); },
      py::arg("text"),
      "Parses and verifies StableHLO text; returns it printed canonically. Raises ValueError.");

  m.def(
      "compile",
      [](const std::string& text, int opt_level, bool fusion) {
        return info(compile_text(text, opt_level, fusion));
      },
      py::arg("text"), py::arg("opt_level") = 2, py::arg("fusion") = true,
      "Compiles through the compile cache; returns the kernels, their modeled times and the cache "
      "source.");

  m.def(
      "run",
      [](const std::string& text, const std::vector<py::array>& inputs, int opt_level,
         bool fusion) {
        runtime::CacheResult r = compile_text(text, opt_level, fusion);
        const auto in_types = r.executable->input_types();
        if (inputs.size() != in_types.size())
          throw py::value_error("the module takes " + std::to_string(in_types.size()) +
                                " inputs, " + std::to_string(inputs.size()) + " given");
        py::module_ np = py::module_::import("numpy");
        std::vector<py::array> held;
        std::vector<const void*> ptrs;
        for (std::size_t i = 0; i < inputs.size(); ++i) {
          const hlo::TensorType& t = in_types[i];
          py::array a = inputs[i];
          // No silent conversion: an int32 or float64 array for an f32 parameter is a mistake.
          const std::string want = numpy_name(t.dtype);
          const std::string have = py::str(a.dtype().attr("name")).cast<std::string>();
          if (have != want && !(t.dtype == hlo::DType::kBF16 && have == "bfloat16"))
            throw py::value_error(
                "input " + std::to_string(i) + " has dtype " + have + ", expected " +
                std::string(hlo::dtype_name(t.dtype)) + " (numpy " + want +
                (t.dtype == hlo::DType::kBF16 ? " holding the bf16 bits" : "") + ")");
          // C order and native byte order; a big-endian array holds the same values, so it is
          // swapped, not refused. np.require keeps a 0-d array 0-d (ascontiguousarray would make
          // it shape (1,), and a scalar parameter would then refuse it).
          const py::object native_dtype = a.dtype().attr("newbyteorder")("=");
          a = np.attr("require")(a, native_dtype, "C");
          std::vector<std::int64_t> shape(a.shape(), a.shape() + a.ndim());
          if (shape != t.dims)
            throw py::value_error("input " + std::to_string(i) + " has shape " +
                                  py::str(py::tuple(py::cast(shape))).cast<std::string>() +
                                  ", expected " + t.str());
          held.push_back(a);
          ptrs.push_back(a.data());
        }
        std::vector<py::array> outs;
        std::vector<void*> optrs;
        const std::vector<int>& donor = r.executable->executable().buffers.donor_of_result;
        for (const hlo::TensorType& t : r.executable->output_types()) {
          const int i = donor[outs.size()];
          // A donated input's array becomes the result's: it is computed there in place.
          py::array a =
              i >= 0 && held[static_cast<std::size_t>(i)].writeable()
                  ? held[static_cast<std::size_t>(i)]
                  : py::array(np.attr("empty")(py::tuple(py::cast(t.dims)), numpy_name(t.dtype)));
          optrs.push_back(a.mutable_data());
          outs.push_back(a);
        }
        try {
          py::gil_scoped_release release;
          r.executable->run(ptrs, optrs);
        } catch (const runtime::ExecError& e) {
          throw std::runtime_error(e.what());
        }
        return py::make_tuple(outs, info(r));
      },
      py::arg("text"), py::arg("inputs"), py::arg("opt_level") = 2, py::arg("fusion") = true,
      "Compiles (through the cache) and runs the module; returns (outputs, info). bf16 travels as "
      "uint16 bits. An input the module donates (jax.buffer_donor, tf.aliasing_output) is "
      "overwritten: the output info['donor_of_output'] gives it is computed in its array.");

  m.def("cache_counters", [] {
    const runtime::CacheCounters c = runtime::CompileCache::global().counters();
    py::dict d;
    d["compiles"] = c.compiles;
    d["memory_hits"] = c.memory_hits;
    d["disk_hits"] = c.disk_hits;
    d["corrupt_replaced"] = c.corrupt_replaced;
    return d;
  });
  m.def("clear_memory_cache", [] { runtime::CompileCache::global().clear_memory(); });
  m.def("cache_dirs", [] {
    const auto& c = runtime::CompileCache::global().config();
    return py::make_tuple(c.neff_dir, c.hlo_dir);
  });
}

}  // namespace vtrn::bindings
