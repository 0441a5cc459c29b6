"""Model inputs: what each input is (name, shape, dtype, value range) and seeded data for it,
generated per input name: the same seed gives the same arrays whatever the declared order."""
from __future__ import annotations

import zlib
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Dict, Mapping, Optional, Sequence, Tuple

from ..errors import InputError
from ..files import ArrayFileError, WantedArray, load_arrays

if TYPE_CHECKING:  # numpy is imported by the functions that use it: not at plugin start-up
    import numpy as np

FLOAT_DTYPES = ("float32", "float16", "bfloat16", "float64")
INT_DTYPES = ("int8", "uint8", "int16", "int32", "int64")
DTYPES = FLOAT_DTYPES + INT_DTYPES + ("bool",)


@dataclass(frozen=True)
class InputSpec:
    name: str
    shape: Tuple[int, ...]  # -1 for a dynamic dim
    dtype: str = "float32"
    low: Optional[float] = None
    high: Optional[float] = None
    values: Optional[Tuple[float, ...]] = None  # a small set to draw from
    mean: Optional[float] = None  # normal distribution when set
    std: Optional[float] = None
    file: Optional[str] = None  # .npy, or .npz holding an array of this name

    def concrete(self, shape: Sequence[int]) -> "InputSpec":
        return replace(self, shape=tuple(int(d) for d in shape))


def shape_label(shape: Sequence[int]) -> str:
    return "x".join(str(d) for d in shape)


def example_dims(declared: Sequence[int], batch: int = 1) -> str:
    """A concrete shape to suggest for ``declared``: the batch, fixed dims, 224 elsewhere."""
    return shape_label(d if d is not None and d >= 0 else batch if i == 0 else 224
                       for i, d in enumerate(declared))


def fill_shape(declared: Sequence[int], given: Optional[Sequence[int]], name: str,
               default_batch: int = 1) -> Tuple[int, ...]:
    """``given`` checked against ``declared``, or ``declared`` with its batch dim filled."""
    if given is None:
        dynamic = [i for i, d in enumerate(declared) if i > 0 and (d is None or d < 0)]
        if dynamic:
            raise InputError(
                f"input {name!r} has dynamic dim {dynamic[0]} in {list(declared)}: give a shape "
                f"for it: --paddle-shape {name}={example_dims(declared, default_batch)} "
                f"on the command line (or under shapes: in a suite)")
        return tuple(int(default_batch if d is None or d < 0 else d) for d in declared)
    if len(given) != len(declared):
        raise InputError(
            f"input {name!r}: shape {list(given)} has rank {len(given)}, "
            f"but the model declares rank {len(declared)} ({list(declared)})")
    for i, (g, d) in enumerate(zip(given, declared)):
        if d is not None and d >= 0 and int(g) != int(d):
            raise InputError(
                f"input {name!r}: dim {i} is {g}, but the model fixes it to {d} ({list(declared)})")
    return tuple(int(g) for g in given)


def generate(spec: InputSpec, seed: int) -> "np.ndarray":
    """Seeded data for one concrete input."""
    import numpy as np

    if spec.file:
        return _load_file(spec)
    rng = np.random.default_rng([int(seed) & 0xFFFFFFFF, zlib.crc32(spec.name.encode())])
    shape = spec.shape
    if spec.values is not None:
        data = rng.choice(np.asarray(spec.values), size=shape)
    elif spec.dtype in INT_DTYPES:
        low = 0 if spec.low is None else int(spec.low)
        high = 10 if spec.high is None else int(spec.high)
        data = rng.integers(low, high, size=shape, endpoint=True)
    elif spec.dtype == "bool":
        data = rng.integers(0, 1, size=shape, endpoint=True).astype(bool)
    elif spec.mean is not None or spec.std is not None:
        data = rng.normal(spec.mean or 0.0, 1.0 if spec.std is None else spec.std, size=shape)
    else:
        low = -1.0 if spec.low is None else float(spec.low)
        high = 1.0 if spec.high is None else float(spec.high)
        data = rng.uniform(low, high, size=shape)
    return np.ascontiguousarray(data.astype(numpy_dtype(spec.dtype)))


def numpy_dtype(dtype: str) -> "np.dtype":
    import numpy as np

    # numpy has no bfloat16; Paddle takes bf16 inputs as uint16 bit patterns
    return np.dtype("uint16" if dtype == "bfloat16" else dtype)


def _load_file(spec: InputSpec) -> "np.ndarray":
    import numpy as np

    try:
        arrays = load_arrays(spec.file, [WantedArray(spec.name, str(numpy_dtype(spec.dtype)), spec.shape)])
    except ArrayFileError as e:
        raise InputError(f"input {spec.name!r}: {e}") from None
    return np.ascontiguousarray(arrays[spec.name])


def generate_all(specs: Sequence[InputSpec], seed: int) -> Dict[str, "np.ndarray"]:
    return {s.name: generate(s, seed) for s in specs}


def inputs_digest(arrays: Mapping[str, "np.ndarray"]) -> str:
    """A short hash of input data, for goldens and reports."""
    import numpy as np

    h = zlib.crc32(b"")
    for name in sorted(arrays):
        a = np.ascontiguousarray(arrays[name])
        h = zlib.crc32(f"{name}:{a.dtype}:{a.shape}".encode(), h)
        h = zlib.crc32(a.tobytes(), h)
    return f"{h:08x}"
