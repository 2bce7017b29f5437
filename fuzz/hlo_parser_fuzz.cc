// libFuzzer target for the StableHLO parser: any input must either parse (and then print and
// parse back to the same text) or raise hlo::Error; never crash, hang or leak.
// Build: cmake -DVTRN_BUILD_FUZZ=ON -DCMAKE_CXX_COMPILER=clang++ (fuzz/CMakeLists.txt), target
// vtrn_hlo_parser_fuzz.
// Run:   vtrn_hlo_parser_fuzz -max_total_time=600 -max_len=4096 fuzz/corpus
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "vtrn/hlo/parser.h"
#include "vtrn/hlo/printer.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const vtrn::hlo::Module m = vtrn::hlo::parse_module(text);
    const std::string printed = vtrn::hlo::print_module(m);
    const std::string again = vtrn::hlo::print_module(vtrn::hlo::parse_module(printed));
    if (again != printed) std::abort();  // print -> parse -> print must be stable
  } catch (const vtrn::hlo::Error&) {
  }
  return 0;
}
