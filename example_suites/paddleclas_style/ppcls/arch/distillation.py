import paddle.nn as nn

from . import backbone


class DistillationModel(nn.Layer):
    """Several networks side by side; forward returns ``{model name: logits}`` as PaddleClas's
    distillation models do."""

    def __init__(self, models):
        super().__init__()
        self.model_names = []
        self.model_list = nn.LayerList()
        for entry in models:
            (name, config), = entry.items()
            config = dict(config)
            self.model_list.append(getattr(backbone, config.pop("name"))(**config))
            self.model_names.append(name)

    def forward(self, x):
        return {name: model(x) for name, model in zip(self.model_names, self.model_list)}
