"""The one check of a ``device`` string, for every encoder (``toy`` and user encoders included).

A device is what ``torch.device`` parses: a type, optionally ``:N`` (``cpu``, ``cuda``, ``cuda:1``,
``mps``, ``xpu:0``, ...).  It is checked from its spelling alone, without importing torch, so a typo
(``tpu``, ``cuda1``, ``gpu``) fails before anything is loaded or written, even for an encoder that
ignores the device.  Whether the device is *present* (CUDA available) is the torch adapters' check.
"""

from __future__ import annotations

import re

from ..core.errors import ConfigError
from ..core.validate import hint_and_known

__all__ = ["check_device"]

#: Device types torch knows by name (``c10::DeviceType``) plus ``npu`` (Ascend, through torch_npu).
_DEVICE_TYPES = ("cpu", "cuda", "mps", "xpu", "xla", "hip", "hpu", "mtia", "npu", "ipu", "ve", "maia", "meta",
                "lazy", "vulkan", "privateuseone")
_DEVICE = re.compile(r"^([a-z_]+)(?::(\d+))?$")
#: Names people type for a device torch calls otherwise (the hint suggests torch's name, not close spellings).
_ALIASES = {"gpu": ("cuda", "NVIDIA and AMD GPUs are torch's 'cuda' device; Apple's are 'mps'"),
            "tpu": ("xla", "TPUs are torch's 'xla' device")}


def check_device(device: str | None) -> str | None:
    """``device`` unchanged when it is ``None`` (the encoder's default) or names a torch device type
    with an optional index; else a :class:`ConfigError` (``param="device"``) with the close types
    and the list of :data:`_DEVICE_TYPES`."""
    if device is None:
        return None
    m = _DEVICE.match(device) if isinstance(device, str) else None
    if m is None or m[1] not in _DEVICE_TYPES:
        kind = str(device).split(":")[0].strip().lower()  # 'CUDA' and 'cuda:x' are close to 'cuda'
        alias = next((a for a in _ALIASES if kind.startswith(a)), None)
        known, why = _ALIASES[alias] if alias else (kind, "")
        raise ConfigError(f"unknown torch device {device!r}{hint_and_known(known, _DEVICE_TYPES)}, "
                          f"each optionally with :N (cuda:1){f' ({why})' if why else ''}", param="device")
    return device
