"""Export a config's model for inference:

    python tools/export_model.py -c ppcls/configs/ImageNet/TinyResNet.yaml \
        -o Global.save_inference_dir=./inference/TinyResNet
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..")))

from ppcls.engine.export import export  # noqa: E402
from ppcls.utils.config import get_config  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("-c", "--config", required=True)
    parser.add_argument("-o", "--override", action="append", default=[])
    args = parser.parse_args()
    print(export(get_config(args.config, args.override)))


if __name__ == "__main__":
    main()
