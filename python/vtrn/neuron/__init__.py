"""``torch.neuron``: the device module of the ``neuron`` device, shaped like ``torch.cuda``.

``devices`` (which cores this process sees, the current one, properties, synchronization),
``streams`` (streams and events), ``memory`` (the caching allocator's stats) and ``random``
(the Philox generators) hold the implementation; every public name is here.
"""

# Besides __all__: the hooks torch calls on a device module (_lazy_init, _is_in_bad_fork),
# _device_index (used by vtrn.distributed), _sleep (a test hook, as torch.cuda._sleep) and
# mem_get_info.
from vtrn.neuron.devices import (
    _device_index as _device_index,
)
from vtrn.neuron.devices import (
    _is_in_bad_fork as _is_in_bad_fork,
)
from vtrn.neuron.devices import (
    _lazy_init as _lazy_init,
)
from vtrn.neuron.devices import (
    current_device,
    device,
    device_count,
    get_amp_supported_dtype,
    get_device_capability,
    get_device_name,
    get_device_properties,
    init,
    is_available,
    is_bf16_supported,
    is_initialized,
    register_exit_sync,
    set_device,
    synchronize,
)
from vtrn.neuron.memory import (
    empty_cache,
    max_memory_allocated,
    max_memory_reserved,
    memory_allocated,
    memory_reserved,
    memory_stats,
    memory_summary,
    reset_accumulated_memory_stats,
    reset_peak_memory_stats,
)
from vtrn.neuron.memory import (
    mem_get_info as mem_get_info,
)
from vtrn.neuron.random import (
    get_rng_state,
    get_rng_state_all,
    initial_seed,
    manual_seed,
    manual_seed_all,
    seed,
    seed_all,
    set_rng_state,
    set_rng_state_all,
)
from vtrn.neuron.streams import (
    Event,
    Stream,
    StreamContext,
    current_stream,
    default_stream,
    set_stream,
    stream,
    wall_elapsed_time,
)
from vtrn.neuron.streams import (
    _sleep as _sleep,
)

__all__ = [
    "Event",
    "Stream",
    "StreamContext",
    "current_device",
    "current_stream",
    "default_stream",
    "device",
    "device_count",
    "empty_cache",
    "get_amp_supported_dtype",
    "get_device_capability",
    "get_device_name",
    "get_device_properties",
    "get_rng_state",
    "get_rng_state_all",
    "init",
    "initial_seed",
    "is_available",
    "is_bf16_supported",
    "is_initialized",
    "manual_seed",
    "manual_seed_all",
    "max_memory_allocated",
    "max_memory_reserved",
    "memory_allocated",
    "memory_reserved",
    "memory_stats",
    "memory_summary",
    "reset_accumulated_memory_stats",
    "reset_peak_memory_stats",
    "seed",
    "seed_all",
    "set_device",
    "set_rng_state",
    "set_rng_state_all",
    "set_stream",
    "stream",
    "wall_elapsed_time",
    "synchronize",
]

register_exit_sync()
