#include "vtrn/topo/cluster.h"

#include <stdexcept>

namespace vtrn::topo {

Cluster::Cluster(std::string_view instance, int lnc, int nodes)
    : spec_(&hw::find_instance(instance)), lnc_(hw::resolve_lnc(*spec_, lnc)), nodes_(nodes) {
  if (nodes < 1) {
    throw std::invalid_argument("nodes must be at least 1, got " + std::to_string(nodes));
  }
  if (nodes > 1 && spec_->efa_Bps <= 0) {
    throw std::invalid_argument(std::string(spec_->name) +
                                " has no documented EFA bandwidth, so vtrn cannot model " +
                                std::to_string(nodes) + " of them; use --nodes 1 or a multi-node "
                                "instance such as trn2.48xlarge");
  }
  ranks_per_chip_ = spec_->ranks_per_chip(lnc_);
}

RankLocation Cluster::locate(int rank) const {
  if (rank < 0 || rank >= world()) {
    throw std::out_of_range("rank " + std::to_string(rank) + " is outside the world of " +
                            std::to_string(world()) + " ranks (" + describe() + ")");
  }
  const int per_node = ranks_per_node();
  const int in_node = rank % per_node;
  return {rank / per_node, in_node / ranks_per_chip_, in_node % ranks_per_chip_};
}

int Cluster::rank_of(const RankLocation& loc) const {
  return loc.node * ranks_per_node() + loc.chip * ranks_per_chip_ + loc.core;
}

int Cluster::global_chip(int rank) const {
  const RankLocation loc = locate(rank);
  return loc.node * spec_->chips + loc.chip;
}

ChipCoord Cluster::chip_coord(int node, int chip) const {
  return {chip / spec_->grid_cols, chip % spec_->grid_cols, node % spec_->ultraserver_nodes};
}

std::string Cluster::describe() const {
  std::string out = std::to_string(nodes_) + " x " + std::string(spec_->name);
  out += lnc_ > 0 ? ", LNC" + std::to_string(lnc_) : ", no LNC";
  out += ", " + std::to_string(world()) + " ranks";
  return out;
}

}  // namespace vtrn::topo
