"""models/cache.py: the export cache (locking, corruption, manifest), legacy exports."""
import json
import subprocess
import sys
import textwrap
from pathlib import Path

from pytest_paddle_infer.models.source import MANIFEST, parse_source
from pytest_paddle_infer.models.cache import export_dir, resolve


def test_concurrent_exports_build_once(tmp_path):
    """Two processes resolving one zoo entry at once: one export, both get the same files."""
    script = textwrap.dedent(f"""
        import json, sys
        from pytest_paddle_infer.models.source import parse_source
        from pytest_paddle_infer.models.cache import resolve
        files = resolve(parse_source("tiny_cnn"), {str(tmp_path)!r})
        print(json.dumps([files.prog_file, files.params_file]))
    """)
    procs = [subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
             for _ in range(2)]
    outs = [json.loads(p.communicate()[0].strip().splitlines()[-1]) for p in procs]
    assert outs[0] == outs[1]
    entries = [p for p in (tmp_path / "models").iterdir() if not p.name.endswith(".lock")]
    assert len(entries) == 1, entries  # no leftover temporary directories
    manifest = json.loads((entries[0] / MANIFEST).read_text())
    assert set(manifest["files"]) >= {"inference.pdiparams"}


def test_corrupt_entry_is_rebuilt_not_used(tmp_path):
    source = parse_source("tiny_cnn")
    files = resolve(source, tmp_path)
    params = Path(files.params_file)
    good = params.read_bytes()
    params.write_bytes(good[: len(good) // 2])  # a half-written file
    script = ("from pytest_paddle_infer.models.source import parse_source; from pytest_paddle_infer.models.cache import resolve;"
              f"resolve(parse_source('tiny_cnn'), {str(tmp_path)!r})")
    subprocess.run([sys.executable, "-c", script], check=True)  # a fresh process: no memo
    assert params.read_bytes() == good  # deterministic weights: the rebuild is identical


def test_missing_manifest_means_rebuild(tmp_path):
    source = parse_source("tiny_cnn")
    files = resolve(source, tmp_path)
    entry = export_dir(source, tmp_path, legacy=False)
    (entry / MANIFEST).unlink()
    script = ("from pytest_paddle_infer.models.source import parse_source; from pytest_paddle_infer.models.cache import resolve;"
              f"resolve(parse_source('tiny_cnn'), {str(tmp_path)!r})")
    subprocess.run([sys.executable, "-c", script], check=True)
    assert (entry / MANIFEST).exists() and Path(files.prog_file).exists()


def test_legacy_export_when_paddle_can_write_it(paddle_cache):
    files = resolve(parse_source("tiny_detector"), paddle_cache, legacy=True)
    assert files.prog_file.endswith(".pdmodel") and files.format == "legacy"
    assert [i.name for i in files.inputs] == ["im_shape", "image", "scale_factor"]


