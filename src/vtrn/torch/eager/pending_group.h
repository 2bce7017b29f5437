// Adaptive Eager Execution (AEE): with TORCH_NEURONX_ENABLE_CONCATENATION=1 (and deterministic
// algorithms off), queued elementwise ops are held in a group per device and run as one fused
// executable when the group ends.
//
// Promises:
//  * A group ends, and runs in issue order, at a host read, a synchronize, a collective, a
//    non-fusable op, a stream change, a partial overlap with a buffer of the group, or the
//    group limit (64 ops). Anything that touches a stream calls flush_pending() first.
//  * A group of one runs its op's own executable under the op's name; a larger group runs one
//    composed executable, compiled once per composition and kept in memory.
//  * Any number of threads may issue work to a device at once (DataLoader workers, compile
//    workers, user threads): the group is shared by them, as the stream is, and ending a group
//    puts its work on the stream before any other thread can append to the group, end it, or
//    pass it with a host read. So each thread's ops run in its issue order, and a host read
//    sees every op issued before it, as on CUDA (ops from two threads on one stream run in
//    issue order). fork() waits while another thread is ending a group, so a forked child
//    (a DataLoader worker) finds every group whole and unlocked.
//  * A buffer the group allocated whose tensor died before the group ran is not written; every
//    other buffer receives its final value.
//  * Intermediates stay in float32 inside a group (a round to bfloat16/float16 and back is
//    skipped), so fused results may differ in the last bits from op-by-op results. Inside a
//    graph capture every rounding stays: a compiled graph gives the op-by-op results.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include <c10/core/Device.h>

#include "vtrn/hlo/ir.h"
#include "vtrn/torch/eager/buffer_ref.h"
#include "vtrn/torch/eager/compiled_op.h"
#include "vtrn/torch/eager/launch.h"

namespace vtrn::torch_adapter {

/// Runs the pending fused group of |device|'s current stream, if any. Called before anything
/// that must see the results of queued work: host reads, synchronize, collectives.
void flush_pending(int device);

/// For fork() (see stream.h): waits until no thread is ending a group and keeps every group
/// as it is; the parent then unlocks them, a child makes their locks anew (its thread does not
/// own them).
void lock_pending_groups_for_fork();
void unlock_pending_groups_in_parent();
void renew_pending_group_locks_in_child();

/// Whether Adaptive Eager Execution is on (TORCH_NEURONX_ENABLE_CONCATENATION=1, read once).
bool concatenation_enabled();

/// Graph capture (torch.compile): while a capture is open, every lowered op joins its device's
/// group, whatever its kind and however many ops the group holds, and an op that reads a view
/// of a result of the group stays in it (the view becomes part of the module). So a graph whose
/// ops all lower and that reads nothing back on the host runs as one executable.
void begin_graph_capture();
/// Closes the capture: runs |device|'s group.
void end_graph_capture(int device);
/// Whether a capture is open (on any thread).
bool graph_capture_active();

/// Export (torch.export programs as StableHLO text): while a recorder is set, every group that
/// runs, a group of one included, first calls it with its module and the buffers the module's
/// parameters and results stand for, in order (a parameter's BufferRef may be an inline
/// scalar). Pass an empty function to stop.
using GroupRecorder = std::function<void(const hlo::Module&, const std::vector<eager::BufferRef>&,
                                         const std::vector<eager::BufferRef>&)>;
void set_group_recorder(GroupRecorder r);

namespace eager {

/// The HLO of |in|, a view of the dense buffer |buf| whose value has type |base|: a reshape
/// when the view is the whole buffer in order, a reshape and transpose when it is a
/// permutation of it, else a gather of the viewed elements.
hlo::Module view_module(const hlo::TensorType& base, const BufferRef& buf, const BufferRef& in);

/// Queues |launch| of |op| on |device|'s current stream, holding it in the device's group when
/// it can fuse. |name| must be a string literal.
void submit(const std::shared_ptr<const CompiledOp>& op, Launch launch, c10::DeviceIndex device,
            const char* name);

}  // namespace eager

}  // namespace vtrn::torch_adapter
