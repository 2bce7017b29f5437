// A device mesh: a shape, one name per axis, and a placement (which rank sits at each mesh
// position). Ranks that differ only along one axis form that axis's communication group.
//
// Axis names follow "Best practices for training on AWS Neuron": `pp`, `replicate`, `shard`,
// `tp`; `dp` and `fsdp` are accepted as names of the sharded data-parallel axis (the guide's
// TP8 x FSDP8 mesh is named ("dp", "tp")).
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "vtrn/topo/cluster.h"

namespace vtrn::topo {

enum class AxisRole {
  kPipeline,   ///< pp: stages exchange activations point to point
  kReplicate,  ///< replicate: gradients all-reduced between replicas
  kShard,      ///< shard, dp, fsdp: parameters all-gathered, gradients reduce-scattered
  kTensor,     ///< tp: layer outputs all-reduced
};

/// The role of a mesh axis named |name|. Throws std::invalid_argument for unknown names.
AxisRole axis_role(std::string_view name);
/// "pp, replicate, shard, tp, dp, fsdp".
std::string axis_names_known();

class Mesh {
 public:
  /// Row-major placement: the rank at a position is its row-major index.
  Mesh(const Cluster& cluster, std::vector<int> shape, std::vector<std::string> names);
  /// Explicit placement: |placement| lists the rank at each position, row-major over |shape|.
  /// Throws std::invalid_argument for a wrong size, a rank outside the world or a repeated rank.
  Mesh(const Cluster& cluster, std::vector<int> shape, std::vector<std::string> names,
       std::vector<int> placement);

  const std::vector<int>& shape() const { return shape_; }
  const std::vector<std::string>& names() const { return names_; }
  int dims() const { return static_cast<int>(shape_.size()); }
  int size() const { return static_cast<int>(placement_.size()); }
  /// Ranks in mesh order (row-major over shape()).
  const std::vector<int>& placement() const { return placement_; }
  bool is_row_major() const;

  /// Index of the axis named |name|; throws std::invalid_argument when absent.
  int axis(std::string_view name) const;
  AxisRole role(int axis) const { return axis_role(names_[axis]); }

  /// The groups of |axis|: each lists the ranks along that axis in mesh order; groups come in
  /// row-major order of the other axes.
  std::vector<std::vector<int>> groups(int axis) const;

  /// "(16, 4) (\"shard\", \"tp\")" for messages.
  std::string describe() const;

 private:
  void validate_axes(const Cluster& cluster);
  std::vector<int> shape_;
  std::vector<std::string> names_;
  std::vector<int> placement_;
};

}  // namespace vtrn::topo
