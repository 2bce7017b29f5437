#include "vtrn/topo/cluster.h"

#include <stdexcept>
#include <string>

namespace vtrn::topo {

std::string Cluster::nodes_error_text(std::string_view nodes) {
  return "nodes " + std::string(nodes) + " is out of range: vtrn models 1 to " +
         std::to_string(kMaxNodes) + " nodes (and at most " + std::to_string(kMaxWorld) +
         " ranks); give a node count in that range";
}

std::string Cluster::nodes_error(long long nodes) {
  return nodes >= 1 && nodes <= kMaxNodes ? std::string() : nodes_error_text(std::to_string(nodes));
}

Cluster::Cluster(std::string_view instance, int lnc, int nodes)
    : spec_(&hw::find_instance(instance)), lnc_(hw::resolve_lnc(*spec_, lnc)), nodes_(nodes) {
  if (std::string error = nodes_error(nodes); !error.empty()) throw std::invalid_argument(error);
  if (nodes > 1 && spec_->efa_Bps <= 0) {
    throw std::invalid_argument(std::string(spec_->name) +
                                " has no documented EFA bandwidth, so vtrn cannot model " +
                                std::to_string(nodes) +
                                " of them; use --nodes 1 or a multi-node "
                                "instance such as trn2.48xlarge");
  }
  ranks_per_chip_ = spec_->ranks_per_chip(lnc_);
  const long long world = static_cast<long long>(ranks_per_chip_) * spec_->chips * nodes;
  if (world > kMaxWorld) {
    throw std::invalid_argument(std::to_string(nodes) + " x " + std::string(spec_->name) +
                                " would hold " + std::to_string(world) + " ranks, more than the " +
                                std::to_string(kMaxWorld) + " vtrn models; use at most " +
                                std::to_string(kMaxWorld / ranks_per_node()) + " nodes");
  }
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
