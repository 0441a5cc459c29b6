"""Peak memory and wall time of a case with every intermediate tensor compared, against the
same case with none.

Each variant runs in a fresh process (peak RSS from getrusage) on the same program (the
zoo model's legacy export, which the intermediate-tensor work uses), by default ResNet50 at
batch 8, oneDNN fp32 against the IR-off native baseline, and prints the ratios.

    python benchmarks/intermediates_memory.py [--model resnet50] [--batch 8] [--mode onednn_fp32]

Measured (2-core AMD EPYC, avx2, Paddle 3.3.1 CPU, shared with other work at load average
11-15, so seconds are long and noisy; the code before and after alternating, this script and
its child code run 5 times before and 6 after, medians):

    before (every pass of the comparison on float64 chunks, BLAS dot, a full partition for
    percentiles, a copy of each hooked tensor, the baseline before the candidate's build):
      wall ratio 3.28x (2.40x-3.58x; none 19.4-46.5 s, all 63.6-139.5 s), peak RSS ratio 1.02
    after: wall ratio 1.42x (1.11x-1.60x; none 20.8-43.7 s, all 23.1-61.7 s),
      peak RSS ratio 0.999-1.007
"""
import argparse
import json
import subprocess
import sys
import tempfile

CHILD = r"""
import json, resource, sys, time
from pytest_paddle_infer.cases.case import Case
from pytest_paddle_infer.engine.runner import Runner
from pytest_paddle_infer.models.source import parse_source
from pytest_paddle_infer.modes.run_modes import parse_run_mode
from pytest_paddle_infer.verdict.tolerances import CaseTolerances, Rule

model, batch, mode, intermediates, cache = sys.argv[1:6]
zoo = parse_source(model)
runner = Runner(cache)
# both variants run the same program: the legacy export the intermediates work uses
legacy = runner.model_files(zoo, legacy=True)
source = parse_source(legacy.prog_file)
name = zoo.inputs[0].name
shape = (int(batch),) + tuple(zoo.inputs[0].shape[1:])
case = Case(model=source, run_mode=parse_run_mode(mode), tolerances=CaseTolerances(Rule(1e-4, 1e-4)),
            shapes=((name, shape),), intermediates=intermediates)
start = time.perf_counter()
result = runner.run(runner.prepare(case))
seconds = time.perf_counter() - start
runner.close()
print(json.dumps({"peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "seconds": seconds, "tensors": len(result.intermediates)}))
"""


def measure(model, batch, mode, intermediates, cache):
    out = subprocess.run([sys.executable, "-c", CHILD, model, str(batch), mode, intermediates, cache],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="resnet50")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--mode", default="onednn_fp32")
    parser.add_argument("--cache-dir", default=None, help="export cache (default: a temporary dir)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        cache = args.cache_dir or tmp
        measure(args.model, 1, args.mode, "all", cache)  # warm the export cache (both formats)
        measure(args.model, 1, args.mode, "none", cache)
        none = measure(args.model, args.batch, args.mode, "none", cache)
        every = measure(args.model, args.batch, args.mode, "all", cache)
    print(f"{args.model} batch {args.batch}, {args.mode}")
    print(f"{'intermediates':<16}{'peak RSS MB':>14}{'seconds':>10}{'tensors':>9}")
    for label, m in (("none", none), ("all", every)):
        print(f"{label:<16}{m['peak_rss_mb']:>14.0f}{m['seconds']:>10.2f}{m['tensors']:>9}")
    print(f"peak RSS ratio (all / none): {every['peak_rss_mb'] / none['peak_rss_mb']:.3f}")
    print(f"wall time ratio (all / none): {every['seconds'] / none['seconds']:.2f}")


if __name__ == "__main__":
    main()
