"""``pytest --paddle-selfcheck``: does each run mode really engage on this machine?

For every run mode the installed Paddle and the hardware can run, a tiny zoo model is built
the way a case builds its candidate (the plugin's own plan), and run with two controls:

- positive: the mode's own recipe; what its run shows must pass the mode's evidence rule
  (verdict/evidence.py, or for modes without one the signal ``controls.py`` names: oneDNN's
  layout, tensors on a GPU);
- negative: the same recipe without the call that engages the mode (TensorRT without
  ``enable_tensorrt_engine``, gpu_fp16 in fp32, bf16 without ``enable_mkldnn_bfloat16``...);
  it must fail the rule, or the rule cannot tell the mode ran.

One table (Paddle, CUDA, cuDNN, TensorRT, the GPUs and their compute capability, TF32, then
per mode: engaged / not engaged / cannot run here and why) and a JSON file a user can attach to
a bug report. ``controls.py`` runs in the executor child (it imports paddle); ``report.py``,
in the pytest process, prints and writes. This module imports neither.
"""


def requested(config) -> bool:
    """Whether ``--paddle-selfcheck`` (or ini ``paddle_selfcheck = true``) asks for it."""
    if config.getoption("paddle_selfcheck", None):
        return True
    try:
        return bool(config.getini("paddle_selfcheck"))
    except ValueError:  # a value other than true/false: the session reports it as usual
        return False
