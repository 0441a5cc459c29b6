"""``build_model(config)``: the network a config's ``Arch`` section names, as PaddleClas builds it."""
import copy
import importlib

from .backbone import *  # noqa: F401,F403  (the architectures build_model looks up by name)
from .distillation import DistillationModel  # noqa: F401


def build_model(config):
    arch_config = copy.deepcopy(config["Arch"])
    name = arch_config.pop("name")
    arch_config.pop("infer_model_name", None)  # an export setting, not an architecture argument
    module = importlib.import_module(__name__)
    return getattr(module, name)(**arch_config)
