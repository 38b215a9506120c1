"""The kernel backend: a scenario on the real Linux L4S stack, in a User-Mode Linux guest
running in virtual time (docs/kernel.md).

* :mod:`.build`: ``l4slab kernel build``: the guest kernel and its user space, from Debian's
  source and the project's own patches, modules and guest programs, cached by their hash;
* :mod:`.guest`: one boot of the guest with a script, bounded in virtual and wall time;
* :mod:`.cpio`: the initramfs writer.
"""

from __future__ import annotations

__all__ = ["build", "guest"]
