"""A miniature of PaddleClas's layout (ppcls/arch, ppcls/configs, ppcls/engine,
tools/export_model.py), small enough for a CI gate example that runs in seconds."""
