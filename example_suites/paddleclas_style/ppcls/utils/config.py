"""Configs: YAML files with ``-o Section.key=value`` overrides, as PaddleClas reads them."""
import yaml


def get_config(fname, overrides=None):
    with open(fname) as f:
        config = yaml.safe_load(f)
    for override in overrides or []:
        path, _, value = override.partition("=")
        *parents, key = path.split(".")
        node = config
        for p in parents:
            node = node.setdefault(p, {})
        node[key] = yaml.safe_load(value)
    return config
