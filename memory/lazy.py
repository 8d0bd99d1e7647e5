"""Names a façade hands out on first use, so importing the package stays cheap.

`import harness.cli` imports `harness` first; if its façade imported the turn loop, the
model clients and the wiring, `keel memory path` would pay for MCP, httpx and tiktoken
before parsing its arguments. A façade lists the expensive names in a table instead and
installs `__getattr__ = lazy_names(globals(), {module: names})`: a module is imported
the first time the name is read, and the value is kept in the façade from then on. Type
checkers see the same names through an `if TYPE_CHECKING:` import block beside the table.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, MutableMapping

__all__ = ["lazy_names"]


def lazy_names(
    namespace: MutableMapping[str, object], modules: Mapping[str, tuple[str, ...]]
) -> Callable[[str], object]:
    """A module `__getattr__` that imports the module listing `name` in `modules` on its first use."""
    package = namespace["__name__"]
    table = {name: module for module, names in modules.items() for name in names}

    def __getattr__(name: str) -> object:
        module = table.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value: object = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    return __getattr__
