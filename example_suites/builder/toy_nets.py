"""A small network for the builder example suite: the plugin imports this module in a child
process (with the suite's directory on its path) and exports what ``build_toy_classifier``
returns, with the input spec the suite declares."""
import paddle
import paddle.nn as nn


def build_toy_classifier(channels=8, classes=5, seed=11):
    paddle.seed(seed)
    return nn.Sequential(
        nn.Conv2D(3, channels, 3, padding=1), nn.BatchNorm2D(channels), nn.ReLU(),
        nn.Conv2D(channels, channels * 2, 3, stride=2, padding=1), nn.ReLU(),
        nn.AdaptiveAvgPool2D(1), nn.Flatten(), nn.Linear(channels * 2, classes),
    )
