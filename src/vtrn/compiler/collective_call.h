// `stablehlo.custom_call @vtrn.collective`: a collective of a compiled graph (a functional
// collective that DTensor or a user's code issued inside torch.compile) as one op of the
// graph's module. The runtime executes it through the process group its backend_config names
// (the `neuron` c10d backend registers the implementation); the compiler costs it with the
// modeled time the config carries, computed from the collective model for the group.
//
// backend_config: "kind=<all_gather|reduce_scatter|all_reduce>;reduce=<op>;group=<name>;
// size=<ranks>;seconds=<modeled time>", where <op> is c10d's name ("sum", "avg", "max", ...)
// and <name> the process group's registered name.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace vtrn::compiler {

inline constexpr std::string_view kCollectiveCallTarget = "vtrn.collective";

struct CollectiveCall {
  std::string kind;    ///< "all_gather", "reduce_scatter" or "all_reduce"
  std::string reduce;  ///< c10d's reduce op name, "sum" for all_gather
  std::string group;   ///< the process group's name
  int size = 1;        ///< ranks in the group
  double seconds = 0;  ///< modeled time of the collective on the group's placement
};

/// The backend_config text of |call|. Throws std::invalid_argument when a name holds a
/// character the config cannot carry (';', '=', '"', '\\' or a control character).
std::string collective_backend_config(const CollectiveCall& call);

/// Parses collective_backend_config(); nullopt when |config| is not one (a missing field, an
/// unknown kind, a size below 1 or a negative or non-finite time).
std::optional<CollectiveCall> parse_collective_config(std::string_view config);

}  // namespace vtrn::compiler
