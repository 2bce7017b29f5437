// vtrn._core.topology: the hw / topo / coll model for Python (the `vtrn` command's topology and
// mesh reports, and the launcher's instance figures). No torch. Reports come back as plain dicts
// and lists, ready for JSON. Bad input raises ValueError with the C++ layer's message.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <string>
#include <vector>

#include "vtrn/bindings/bindings.h"
#include "vtrn/coll/collective_time.h"
#include "vtrn/coll/mesh_report.h"
#include "vtrn/coll/placement_search.h"
#include "vtrn/coll/route.h"
#include "vtrn/hw/instance.h"
#include "vtrn/hw/runtime.h"
#include "vtrn/topo/cluster.h"
#include "vtrn/topo/link_graph.h"
#include "vtrn/topo/mesh.h"

namespace py = pybind11;

namespace vtrn::bindings {

namespace {

std::string_view topology_name(hw::ChipTopology t) {
  switch (t) {
    case hw::ChipTopology::kSingleChip:
      return "single-chip";
    case hw::ChipTopology::kTorus2D:
      return "torus-2d";
    case hw::ChipTopology::kSwitch:
      return "switch";
  }
  return "?";
}

std::string_view fabric_name(hw::UltraServerFabric f) {
  switch (f) {
    case hw::UltraServerFabric::kNone:
      return "none";
    case hw::UltraServerFabric::kZRing:
      return "z-ring";
    case hw::UltraServerFabric::kSwitch:
      return "switch";
  }
  return "?";
}

py::dict spec_dict(const hw::InstanceSpec& s) {
  const hw::ChipSpec& c = *s.chip;
  py::dict peaks;
  for (hw::TensorEngineDType d :
       {hw::TensorEngineDType::kFP8, hw::TensorEngineDType::kBF16, hw::TensorEngineDType::kFP16,
        hw::TensorEngineDType::kTF32, hw::TensorEngineDType::kFP32}) {
    peaks[py::str(std::string(hw::tensor_engine_dtype_name(d)))] = c.core.tensor(d);
  }
  py::dict chip;
  chip["name"] = c.name;
  chip["core_name"] = c.core_name;
  chip["physical_cores"] = c.physical_cores;
  chip["hbm_bytes"] = c.hbm;
  chip["hbm_Bps"] = c.hbm_Bps;
  chip["dma_Bps"] = c.dma_Bps;
  chip["dma_core_Bps"] = c.dma_core_Bps;
  chip["dma_latency_s"] = c.dma_latency;
  chip["dense_fp8_flops"] = c.dense_fp8;
  chip["dense_bf16_flops"] = c.dense_bf16;
  chip["dense_fp32_flops"] = c.dense_fp32;
  chip["core_tensor_flops"] = peaks;
  chip["core_vector_fp32_flops"] = c.core.vector_fp32;
  chip["core_scalar_fp32_flops"] = c.core.scalar_fp32;
  chip["neuronlink"] = c.neuronlink;
  chip["neuronlink_intra_Bps"] = c.neuronlink_intra_Bps;
  chip["neuronlink_inter_Bps"] = c.neuronlink_inter_Bps;
  py::dict d;
  d["name"] = s.name;
  d["summary"] = s.summary;
  d["chip"] = chip;
  d["chips"] = s.chips;
  d["topology"] = topology_name(s.topology);
  d["grid_rows"] = s.grid_rows;
  d["grid_cols"] = s.grid_cols;
  d["link_Bps"] = s.link_Bps;
  d["hop_latency_s"] = s.hop_latency;
  d["lnc_allowed"] = std::vector<int>(s.lnc_allowed.begin(), s.lnc_allowed.end());
  d["lnc_default"] = s.has_lnc() ? py::object(py::int_(s.lnc_default)) : py::object(py::none());
  d["ultraserver_nodes"] = s.ultraserver_nodes;
  d["ultraserver_fabric"] = fabric_name(s.ultraserver_fabric);
  d["ultraserver_chip_Bps"] = s.ultraserver_chip_Bps;
  d["efa_Bps"] = s.efa_Bps;
  d["efa_latency_s"] = s.efa_latency;
  return d;
}

py::dict route_dict(const coll::Route& r) {
  py::dict d;
  d["routable"] = r.routable;
  d["kind"] = coll::route_kind_name(r.kind);
  d["error"] = r.routable ? py::object(py::none()) : py::object(py::str(r.error));
  d["bad_node"] = r.bad_node >= 0 ? py::object(py::int_(r.bad_node)) : py::object(py::none());
  d["disconnected"] = r.disconnected;
  d["ranks"] = r.ranks;
  d["nodes"] = r.nodes;
  d["chips_per_node"] = r.chips_per_node;
  d["ranks_per_chip"] = r.ranks_per_chip;
  d["whole_chips"] = r.whole_chips;
  d["node_chip_Bps"] = r.node_chip_Bps;
  d["mean_hops"] = r.mean_hops;
  d["nodes_joined"] = r.nodes_joined;
  return d;
}

py::object algo_or_none(coll::Algorithm a) {
  return a == coll::Algorithm::kNone ? py::object(py::none())
                                     : py::object(py::str(std::string(coll::algorithm_name(a))));
}

py::dict estimate_dict(const coll::Estimate& e) {
  py::dict d;
  d["algorithm"] = coll::algorithm_name(e.choice.algorithm);
  d["node"] = algo_or_none(e.choice.node);
  d["net"] = algo_or_none(e.choice.net);
  d["seconds"] = e.seconds;
  return d;
}

std::string_view role_name(topo::AxisRole role) {
  switch (role) {
    case topo::AxisRole::kPipeline:
      return "pipeline";
    case topo::AxisRole::kReplicate:
      return "replicate";
    case topo::AxisRole::kShard:
      return "shard";
    case topo::AxisRole::kTensor:
      return "tensor";
  }
  return "?";
}

// Python ints have no width: one that does not fit a C++ int would otherwise surface as a
// pybind11 TypeError. These turn it into the model's own ValueError.
int nodes_arg(const py::int_& nodes) {
  const py::int_ lo(1), hi(topo::Cluster::kMaxNodes);
  if (nodes < lo || hi < nodes)
    throw std::invalid_argument(
        topo::Cluster::nodes_error_text(py::str(nodes).cast<std::string>()));
  return nodes.cast<int>();
}

int lnc_arg(const py::int_& lnc) {
  // Values in [0, 64] go on to hw::resolve_lnc, which names the instance's allowed settings.
  const py::int_ lo(0), hi(64);
  if (lnc < lo || hi < lnc) {
    throw std::invalid_argument(
        "LNC " + py::str(lnc).cast<std::string>() +
        " is not a Logical NeuronCore setting; use LNC 1 or 2 (0 = the instance default)");
  }
  return lnc.cast<int>();
}

/// A cluster and its link graph, the unit every query runs against.
class Model {
 public:
  Model(const std::string& instance, const py::int_& lnc, const py::int_& nodes)
      : cluster_(instance, lnc_arg(lnc), nodes_arg(nodes)), graph_(cluster_) {}

  const topo::Cluster& cluster() const { return cluster_; }

  py::tuple locate(int rank) const {
    topo::RankLocation loc = cluster_.locate(rank);
    return py::make_tuple(loc.node, loc.chip, loc.core);
  }
  int rank_of(int node, int chip, int core) const {
    if (node < 0 || node >= cluster_.nodes() || chip < 0 || chip >= cluster_.chips_per_node() ||
        core < 0 || core >= cluster_.ranks_per_chip()) {
      throw std::invalid_argument("(node " + std::to_string(node) + ", chip " +
                                  std::to_string(chip) + ", core " + std::to_string(core) +
                                  ") is not in " + cluster_.describe());
    }
    return cluster_.rank_of({node, chip, core});
  }
  py::tuple chip_coord(int node, int chip) const {
    topo::ChipCoord c = cluster_.chip_coord(node, chip);
    return py::make_tuple(c.row, c.col, c.z);
  }
  std::vector<int> neighbors(int chip) const {
    if (chip < 0 || chip >= graph_.chips())
      throw std::invalid_argument("chip " + std::to_string(chip) + " is not in the node");
    return graph_.neighbors(chip);
  }
  py::list links() const {
    py::list out;
    for (const topo::Link& l : graph_.links()) {
      out.append(py::make_tuple(
          l.a, l.b, l.kind == topo::LinkKind::kNeuronLink ? "neuronlink" : "neuronlink-z"));
    }
    return out;
  }
  std::vector<std::vector<int>> components(const std::vector<int>& chips) const {
    for (int chip : chips)
      if (chip < 0 || chip >= graph_.chips())
        throw std::invalid_argument("chip " + std::to_string(chip) + " is not in the node");
    return graph_.components(topo::LinkGraph::mask_of(chips));
  }

  py::dict route(const std::vector<int>& ranks) const {
    return route_dict(coll::route_group(cluster_, graph_, ranks));
  }

  py::dict estimate(const std::vector<int>& ranks, const std::string& collective,
                    hw::Bytes bytes) const {
    coll::Route r = coll::route_group(cluster_, graph_, ranks);
    return estimate_dict(coll::estimate(cluster_, r, coll::parse_collective(collective), bytes));
  }

  topo::Mesh make_mesh(const std::vector<int>& shape, const std::vector<std::string>& names,
                       const std::optional<std::vector<int>>& placement) const {
    return placement ? topo::Mesh(cluster_, shape, names, *placement)
                     : topo::Mesh(cluster_, shape, names);
  }

  std::vector<std::vector<std::vector<int>>> mesh_groups(
      const std::vector<int>& shape, const std::vector<std::string>& names,
      const std::optional<std::vector<int>>& placement) const {
    topo::Mesh mesh = make_mesh(shape, names, placement);
    std::vector<std::vector<std::vector<int>>> out;
    for (int axis = 0; axis < mesh.dims(); ++axis) out.push_back(mesh.groups(axis));
    return out;
  }

  py::dict analyze_mesh(const std::vector<int>& shape, const std::vector<std::string>& names,
                        const std::optional<std::vector<int>>& placement,
                        const std::optional<std::vector<hw::Bytes>>& sizes) const {
    topo::Mesh mesh = make_mesh(shape, names, placement);
    const std::vector<hw::Bytes> use = sizes ? *sizes : coll::default_report_sizes();
    coll::MeshReport report;
    {
      py::gil_scoped_release release;
      report = coll::analyze_mesh(cluster_, graph_, mesh, use);
    }
    py::list axes;
    for (const coll::AxisReport& ax : report.axes) {
      py::dict a;
      a["name"] = ax.name;
      a["size"] = ax.size;
      a["role"] = role_name(ax.role);
      a["collective"] = coll::collective_name(ax.collective);
      a["groups"] = ax.groups;
      py::list ok;
      for (char c : ax.group_routable) ok.append(py::bool_(c != 0));
      a["group_routable"] = ok;
      a["routable"] = ax.routable;
      a["error"] = ax.routable ? py::object(py::none()) : py::object(py::str(ax.error));
      a["first_bad_group"] = ax.first_bad_group >= 0 ? py::object(py::int_(ax.first_bad_group))
                                                     : py::object(py::none());
      a["bad_node"] = ax.bad_node >= 0 ? py::object(py::int_(ax.bad_node)) : py::object(py::none());
      a["disconnected"] = ax.disconnected;
      py::dict algorithms;
      for (const coll::SizeEstimate& se : ax.estimates) {
        py::dict e = estimate_dict(se.estimate);
        e["collective"] = coll::collective_name(ax.collective);
        py::dict by;
        for (int c = 0; c < coll::kCollectiveCount; ++c) {
          by[py::str(std::string(coll::collective_name(coll::kCollectives[c])))] =
              se.seconds_by_collective[c];
        }
        e["seconds_by_collective"] = by;
        algorithms[py::str(std::to_string(se.bytes))] = e;
      }
      a["algorithms"] = algorithms;
      axes.append(a);
    }
    py::dict d;
    d["routable"] = report.routable;
    d["placement"] = mesh.placement();
    d["axes"] = axes;
    return d;
  }

  py::dict search_placement(const std::vector<int>& shape, const std::vector<std::string>& names,
                            hw::Bytes cost_bytes, long max_steps, int max_solutions,
                            bool structured_orders) const {
    coll::PlacementSearchOptions options;
    options.structured_orders = structured_orders;
    options.cost_bytes = cost_bytes;
    options.max_steps = max_steps;
    options.max_solutions = max_solutions;
    coll::PlacementSearchResult r;
    {
      py::gil_scoped_release release;
      r = coll::search_placement(cluster_, graph_, shape, names, options);
    }
    py::dict d;
    d["found"] = r.found;
    d["placement"] = r.found ? py::object(py::cast(r.placement)) : py::object(py::none());
    d["chip_order"] = r.chip_order;
    d["fill_order"] = r.fill_order;
    d["default_routable"] = r.default_routable;
    d["is_default"] = r.is_default;
    d["tp_groups_off_chip"] = r.tp_groups_off_chip;
    d["cost_seconds"] = r.cost;
    d["steps"] = r.steps;
    d["solutions"] = r.solutions;
    d["message"] = r.found ? py::object(py::none()) : py::object(py::str(r.message));
    return d;
  }

 private:
  topo::Cluster cluster_;
  topo::LinkGraph graph_;
};

}  // namespace

void bind_topology(py::module_& m) {
  m.doc() = "vtrn's Trainium topology and collective model (hw / topo / coll), without torch";

  m.def(
      "instance_names",
      [] {
        std::vector<std::string> out;
        for (const hw::InstanceSpec& s : hw::instances()) out.emplace_back(s.name);
        return out;
      },
      "Names of the known instance types, in listing order.");
  m.def(
      "instance", [](const std::string& name) { return spec_dict(hw::find_instance(name)); },
      py::arg("name"),
      "The spec of instance |name| as a dict (bandwidths in B/s, latencies in s, sizes in bytes).");
  m.def(
      "axis_names", [] { return topo::axis_names_known(); },
      "The accepted mesh axis names, comma separated.");
  m.def("collective_names", [] {
    std::vector<std::string> out;
    for (coll::Collective c : coll::kCollectives) out.emplace_back(coll::collective_name(c));
    return out;
  });
  m.attr("NO_ALGORITHM_TEXT") = std::string(coll::kNoAlgorithmText);
  m.attr("MESH_BELOW_BYTES") = hw::kMeshBelowBytes;
  m.attr("RDH_UP_TO_BYTES") = hw::kRdhUpToBytes;
  m.attr("MAX_NODES") = topo::Cluster::kMaxNodes;
  m.attr("MAX_WORLD") = topo::Cluster::kMaxWorld;

  py::class_<Model>(m, "Cluster",
                    "A cluster of `nodes` instances at one LNC setting, with its NeuronLink graph.")
      .def(py::init<const std::string&, const py::int_&, const py::int_&>(),
           py::arg("instance") = "trn2.48xlarge", py::arg("lnc") = 0, py::arg("nodes") = 1)
      .def_property_readonly("instance",
                             [](const Model& m) { return std::string(m.cluster().spec().name); })
      .def_property_readonly("spec", [](const Model& m) { return spec_dict(m.cluster().spec()); })
      .def_property_readonly("lnc",
                             [](const Model& m) {
                               return m.cluster().lnc() > 0
                                          ? py::object(py::int_(m.cluster().lnc()))
                                          : py::object(py::none());
                             })
      .def_property_readonly("nodes", [](const Model& m) { return m.cluster().nodes(); })
      .def_property_readonly("chips_per_node",
                             [](const Model& m) { return m.cluster().chips_per_node(); })
      .def_property_readonly("ranks_per_chip",
                             [](const Model& m) { return m.cluster().ranks_per_chip(); })
      .def_property_readonly("ranks_per_node",
                             [](const Model& m) { return m.cluster().ranks_per_node(); })
      .def_property_readonly("world", [](const Model& m) { return m.cluster().world(); })
      .def("describe", [](const Model& m) { return m.cluster().describe(); })
      .def("locate", &Model::locate, py::arg("rank"), "(node, chip, core) of |rank|.")
      .def("rank_of", &Model::rank_of, py::arg("node"), py::arg("chip"), py::arg("core"))
      .def("chip_coord", &Model::chip_coord, py::arg("node"), py::arg("chip"),
           "(row, col, z) of a chip.")
      .def("neighbors", &Model::neighbors, py::arg("chip"),
           "Node-local NeuronLink neighbours of |chip|.")
      .def("links", &Model::links, "Every link: (global chip a, global chip b, kind).")
      .def("components", &Model::components, py::arg("chips"),
           "Connected components of node-local |chips|, using only links between them.")
      .def("route", &Model::route, py::arg("ranks"),
           "Whether the runtime can build a collective for |ranks|.")
      .def("estimate", &Model::estimate, py::arg("ranks"), py::arg("collective"), py::arg("bytes"),
           "Algorithm and modeled seconds of |collective| over |ranks| with a |bytes| buffer.")
      .def("mesh_groups", &Model::mesh_groups, py::arg("shape"), py::arg("names"),
           py::arg("placement") = py::none(), "The groups of every axis of a mesh.")
      .def("analyze_mesh", &Model::analyze_mesh, py::arg("shape"), py::arg("names"),
           py::arg("placement") = py::none(), py::arg("sizes") = py::none(),
           "Groups, routability, algorithms and modeled times of every axis.")
      .def("search_placement", &Model::search_placement, py::arg("shape"), py::arg("names"),
           py::arg("cost_bytes") = hw::MiB(64), py::arg("max_steps") = 2'000'000L,
           py::arg("max_solutions") = 1024, py::arg("structured_orders") = true,
           "A placement where every group is routable (see coll/placement_search.h).");
}

}  // namespace vtrn::bindings
