#include "vtrn/topo/mesh.h"

#include <limits>
#include <numeric>
#include <stdexcept>

namespace vtrn::topo {
namespace {

struct KnownAxis {
  std::string_view name;
  AxisRole role;
};
constexpr KnownAxis kKnownAxes[] = {
    {"pp", AxisRole::kPipeline}, {"replicate", AxisRole::kReplicate},
    {"shard", AxisRole::kShard}, {"tp", AxisRole::kTensor},
    {"dp", AxisRole::kShard},    {"fsdp", AxisRole::kShard},
};

std::string tuple_text(const std::vector<int>& values) {
  std::string out = "(";
  for (size_t i = 0; i < values.size(); ++i) out += (i ? ", " : "") + std::to_string(values[i]);
  return out + (values.size() == 1 ? ",)" : ")");
}

std::vector<int> unflatten(int index, const std::vector<int>& shape) {
  std::vector<int> coords(shape.size());
  for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
    coords[d] = index % shape[d];
    index /= shape[d];
  }
  return coords;
}

}  // namespace

AxisRole axis_role(std::string_view name) {
  for (const KnownAxis& known : kKnownAxes) {
    if (known.name == name) return known.role;
  }
  throw std::invalid_argument("unknown mesh axis name '" + std::string(name) + "'; use one of " +
                              axis_names_known());
}

std::string axis_names_known() {
  std::string out;
  for (const KnownAxis& known : kKnownAxes)
    out += (out.empty() ? "" : ", ") + std::string(known.name);
  return out;
}

Mesh::Mesh(const Cluster& cluster, std::vector<int> shape, std::vector<std::string> names)
    : shape_(std::move(shape)), names_(std::move(names)) {
  validate_axes(cluster);
  placement_.resize(cluster.world());
  std::iota(placement_.begin(), placement_.end(), 0);
}

Mesh::Mesh(const Cluster& cluster, std::vector<int> shape, std::vector<std::string> names,
           std::vector<int> placement)
    : shape_(std::move(shape)), names_(std::move(names)), placement_(std::move(placement)) {
  validate_axes(cluster);
  const int world = cluster.world();
  if (static_cast<int>(placement_.size()) != world) {
    throw std::invalid_argument("the placement lists " + std::to_string(placement_.size()) +
                                " ranks, but the mesh " + describe() + " has " +
                                std::to_string(world) + " positions; give one rank per position");
  }
  std::vector<int> seen_at(world, -1);
  for (int pos = 0; pos < world; ++pos) {
    const int rank = placement_[pos];
    if (rank < 0 || rank >= world) {
      throw std::invalid_argument("rank " + std::to_string(rank) + " at mesh position " +
                                  tuple_text(unflatten(pos, shape_)) +
                                  " is outside the world [0, " + std::to_string(world) + ") of " +
                                  cluster.describe());
    }
    if (seen_at[rank] >= 0) {
      throw std::invalid_argument(
          "rank " + std::to_string(rank) + " appears twice in the placement, at mesh positions " +
          tuple_text(unflatten(seen_at[rank], shape_)) + " and " +
          tuple_text(unflatten(pos, shape_)) + "; a placement must use every rank exactly once");
    }
    seen_at[rank] = pos;
  }
}

void Mesh::validate_axes(const Cluster& cluster) {
  if (shape_.empty())
    throw std::invalid_argument("the mesh shape is empty; give at least one axis, e.g. 64");
  if (names_.size() != shape_.size()) {
    throw std::invalid_argument(
        "the mesh shape " + tuple_text(shape_) + " has " + std::to_string(shape_.size()) +
        " axes but " + std::to_string(names_.size()) + " names were given; give one name per axis");
  }
  // Checked: the shape comes from the user, and a product of several ints overflows any fixed
  // width (64,536903681,536838145 wraps 64 bits to 64). Once the product passes the world
  // (at most Cluster::kMaxWorld) it is wrong anyway; it is kept exact while it fits.
  long long product = 1;
  bool overflow = false;
  for (size_t d = 0; d < shape_.size(); ++d) {
    if (shape_[d] < 1) {
      throw std::invalid_argument("mesh axis '" + names_[d] + "' has size " +
                                  std::to_string(shape_[d]) + "; every axis needs size 1 or more");
    }
    if (!overflow && __builtin_mul_overflow(product, static_cast<long long>(shape_[d]), &product))
      overflow = true;
    axis_role(names_[d]);  // throws for unknown names
    for (size_t e = 0; e < d; ++e) {
      if (names_[e] == names_[d]) {
        throw std::invalid_argument("mesh axis name '" + names_[d] +
                                    "' is used twice; name each axis once");
      }
    }
  }
  if (overflow || product != cluster.world()) {
    const std::string holds =
        overflow ? "more than " + std::to_string(std::numeric_limits<long long>::max())
                 : std::to_string(product);
    throw std::invalid_argument("mesh shape " + tuple_text(shape_) + " holds " + holds +
                                " ranks, but the world has " + std::to_string(cluster.world()) +
                                " (" + cluster.describe() + "); make the product of the shape " +
                                std::to_string(cluster.world()) + " or change --nodes/--lnc");
  }
}

bool Mesh::is_row_major() const {
  for (int i = 0; i < size(); ++i) {
    if (placement_[i] != i) return false;
  }
  return true;
}

int Mesh::axis(std::string_view name) const {
  for (int d = 0; d < dims(); ++d) {
    if (names_[d] == name) return d;
  }
  throw std::invalid_argument("the mesh " + describe() + " has no axis named '" +
                              std::string(name) + "'");
}

std::vector<std::vector<int>> Mesh::groups(int axis) const {
  if (axis < 0 || axis >= dims()) {
    throw std::out_of_range("axis " + std::to_string(axis) + " is not in [0, " +
                            std::to_string(dims()) + ")");
  }
  int outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= shape_[d];
  for (int d = axis + 1; d < dims(); ++d) inner *= shape_[d];
  const int len = shape_[axis];
  std::vector<std::vector<int>> out;
  out.reserve(static_cast<size_t>(outer) * inner);
  for (int o = 0; o < outer; ++o) {
    for (int i = 0; i < inner; ++i) {
      std::vector<int> group(len);
      for (int j = 0; j < len; ++j) group[j] = placement_[(o * len + j) * inner + i];
      out.push_back(std::move(group));
    }
  }
  return out;
}

std::string Mesh::describe() const {
  std::string out = tuple_text(shape_) + " (";
  for (size_t i = 0; i < names_.size(); ++i) out += (i ? ", \"" : "\"") + names_[i] + "\"";
  return out + (names_.size() == 1 ? ",)" : ")");
}

}  // namespace vtrn::topo
