import paddle.nn as nn


class BasicBlock(nn.Layer):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2D(cin, cout, 3, stride=stride, padding=1, bias_attr=False)
        self.bn1 = nn.BatchNorm2D(cout)
        self.conv2 = nn.Conv2D(cout, cout, 3, padding=1, bias_attr=False)
        self.bn2 = nn.BatchNorm2D(cout)
        self.relu = nn.ReLU()
        self.short = None
        if stride != 1 or cin != cout:
            self.short = nn.Sequential(nn.Conv2D(cin, cout, 1, stride=stride, bias_attr=False),
                                       nn.BatchNorm2D(cout))

    def forward(self, x):
        y = self.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return self.relu(y + (x if self.short is None else self.short(x)))


class TinyResNet(nn.Layer):
    """A two-stage ResNet: stem, one block per stage, global pool, classifier."""

    def __init__(self, class_num=10, channels=16):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2D(3, channels, 3, padding=1, bias_attr=False),
                                  nn.BatchNorm2D(channels), nn.ReLU())
        self.stages = nn.Sequential(BasicBlock(channels, channels, 1),
                                    BasicBlock(channels, channels * 2, 2))
        self.pool = nn.AdaptiveAvgPool2D(1)
        self.fc = nn.Linear(channels * 2, class_num)

    def forward(self, x):
        x = self.pool(self.stages(self.stem(x)))
        return self.fc(x.flatten(1))
