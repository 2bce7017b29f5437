// vtrn::collective(input, kind, reduce_op, group_size, group_name, seconds): a functional
// collective of a compiled graph (all_gather_into_tensor, reduce_scatter_tensor, all_reduce)
// as one `stablehlo.custom_call @vtrn.collective` (compiler/collective_call.h). The runtime
// runs it through the named process group; the compiler costs it with |seconds|, the modeled
// time the backend computed for the group. The result's shape follows c10d's functional ops:
// all_gather stacks the ranks' inputs along dim 0, reduce_scatter keeps one rank's slice of
// dim 0, all_reduce keeps the input's shape.
#include "vtrn/compiler/collective_call.h"
#include "vtrn/torch/lowering/families.h"

namespace vtrn::lowering {

using namespace family;

void add_collective_lowerings(std::vector<OpLowering>& r) {
  add(r, {"vtrn::collective"}, entry(all_types(), [](Lowerer& L) -> std::vector<Value> {
        compiler::CollectiveCall c;
        c.kind = L.arg(1).text;
        c.reduce = L.arg(2).text;
        c.size = static_cast<int>(L.integer(3));
        c.group = L.arg(4).text;
        c.seconds = L.real(5);
        const Value x = L.tensor(0);
        std::vector<std::int64_t> dims = L.shape(x);
        if (c.size < 1) throw Unsupported("collective on a group of " + std::to_string(c.size));
        if (c.kind == "all_gather") {
          if (dims.empty()) throw Unsupported("all_gather of a 0-d tensor");
          dims[0] *= c.size;
        } else if (c.kind == "reduce_scatter") {
          if (dims.empty() || dims[0] % c.size != 0)
            throw Unsupported("reduce_scatter whose dim 0 does not split into " +
                              std::to_string(c.size) + " ranks");
          dims[0] /= c.size;
        } else if (c.kind != "all_reduce") {
          throw Unsupported("collective kind " + c.kind);
        }
        std::string config;
        try {
          config = compiler::collective_backend_config(c);
        } catch (const std::invalid_argument& e) {
          throw Unsupported(e.what());
        }
        return L.b.custom_call(std::string(compiler::kCollectiveCallTarget), {x},
                               {TensorType{L.dtype(x), dims}}, std::move(config));
      }));
}

}  // namespace vtrn::lowering
