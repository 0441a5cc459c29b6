from .tiny_lcnet import TinyLCNet  # noqa: F401
from .tiny_resnet import TinyResNet  # noqa: F401
