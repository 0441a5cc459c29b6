"""What the plugin adds to the work itself: a warm ``pytest --paddle-model=resnet50
--run-mode=onednn_fp32`` against a hand-written script doing the same work (a baseline and a
candidate predictor on the same exported program, one seeded input, a numpy comparison).

Runs alternate (script, pytest, script, ...) after a warm-up that exports the model; the
median of each is compared. ``--executor inline`` measures the session without the
supervised executor process.

    python benchmarks/overhead.py [--runs 5] [--model resnet50] [--mode onednn_fp32]
"""
import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SCRIPT = '''
import sys
import numpy as np
from paddle import inference

prog, params, shape = sys.argv[1], sys.argv[2], [int(d) for d in sys.argv[3].split("x")]


def predictor(candidate):
    config = inference.Config(prog, params)
    if candidate:
        config.enable_mkldnn()
        config.switch_ir_optim(True)
    else:
        config.disable_mkldnn()
        config.switch_ir_optim(False)
    config.disable_glog_info()
    return inference.create_predictor(config)


x = np.random.default_rng(0).standard_normal(shape).astype("float32")
outputs = []
for p in (predictor(False), predictor(True)):
    handle = p.get_input_handle(p.get_input_names()[0])
    handle.reshape(x.shape)
    handle.copy_from_cpu(x)
    p.run()
    outputs.append(p.get_output_handle(p.get_output_names()[0]).copy_to_cpu())
ok = np.isclose(outputs[1], outputs[0], atol=1e-4, rtol=1e-4).all()
print("max abs", float(np.abs(outputs[1] - outputs[0]).max()), "passed" if ok else "FAILED")
'''


def timed(args, cwd) -> float:
    start = time.perf_counter()
    subprocess.run(args, cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--model", default="resnet50")
    parser.add_argument("--mode", default="onednn_fp32")
    parser.add_argument("--executor", default="child", choices=("child", "inline"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as cwd:
        cache = Path(cwd) / "cache"
        pytest_cmd = [sys.executable, "-m", "pytest", f"--paddle-model={args.model}",
                      f"--run-mode={args.mode}", "-q", "-p", "no:cacheprovider",
                      f"--paddle-cache-dir={cache}", f"--paddle-executor={args.executor}"]
        subprocess.run(pytest_cmd, cwd=cwd, check=True, stdout=subprocess.DEVNULL)  # export once
        prog = next(p for p in cache.glob("models/*/inference.*") if p.suffix in (".json", ".pdmodel"))
        script = Path(cwd) / "by_hand.py"
        script.write_text(SCRIPT)
        script_cmd = [sys.executable, str(script), str(prog), str(prog.with_suffix(".pdiparams")),
                      "1x3x224x224"]
        timed(script_cmd, cwd)
        by_hand, plugin = [], []
        for _ in range(args.runs):
            by_hand.append(timed(script_cmd, cwd))
            plugin.append(timed(pytest_cmd, cwd))
    a, b = statistics.median(by_hand), statistics.median(plugin)
    print(f"median of {args.runs} alternating runs, seconds (warm cache, executor {args.executor})")
    print(f"{'hand-written script':<34}{a:>8.3f}")
    print(f"{'pytest --paddle-model=' + args.model:<34}{b:>8.3f}")
    print(f"ratio {b / a:.3f}")


if __name__ == "__main__":
    main()
