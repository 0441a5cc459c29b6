"""The gate's only Python: how its suites build a config's model.

The suites name ``paddle_gate:export_layer`` as their builder. The plugin imports this module
in a child process (with this directory first on the path) to export the layer and to run it
as the dygraph baseline; pytest itself never imports it. It is not named ``conftest.py`` on
purpose: pytest imports a conftest beside a root ``__init__.py`` (PaddleClas has one) as a
submodule of the root package, which runs the root ``__init__.py`` and fails there. The
repository's own code is used as is: no edit to ``ppcls`` or ``tools`` is needed.
"""
from pathlib import Path

REPO = Path(__file__).resolve().parent


def export_layer(config: str):
    """The layer ``tools/export_model.py -c CONFIG`` exports (softmax added, eval mode);
    ``config`` is relative to the repository root."""
    from ppcls.engine.export import build_export_model
    from ppcls.utils.config import get_config

    return build_export_model(get_config(REPO / config))
