import paddle
import paddle.nn as nn


class SEModule(nn.Layer):
    def __init__(self, channels, reduction=4):
        super().__init__()
        self.pool = nn.AdaptiveAvgPool2D(1)
        self.conv1 = nn.Conv2D(channels, channels // reduction, 1)
        self.conv2 = nn.Conv2D(channels // reduction, channels, 1)

    def forward(self, x):
        s = nn.functional.relu(self.conv1(self.pool(x)))
        return x * nn.functional.hardsigmoid(self.conv2(s))


class DepthwiseSeparable(nn.Layer):
    def __init__(self, cin, cout, stride, use_se):
        super().__init__()
        self.dw = nn.Sequential(nn.Conv2D(cin, cin, 3, stride=stride, padding=1, groups=cin,
                                          bias_attr=False), nn.BatchNorm2D(cin), nn.Hardswish())
        self.se = SEModule(cin) if use_se else None
        self.pw = nn.Sequential(nn.Conv2D(cin, cout, 1, bias_attr=False), nn.BatchNorm2D(cout),
                                nn.Hardswish())

    def forward(self, x):
        x = self.dw(x)
        if self.se is not None:
            x = self.se(x)
        return self.pw(x)


class TinyLCNet(nn.Layer):
    """PP-LCNet's building blocks (depthwise separable convs, hard-swish, SE), three blocks deep."""

    def __init__(self, class_num=10, scale=1.0):
        super().__init__()
        c = [max(8, int(n * scale)) for n in (16, 32, 64)]
        self.stem = nn.Sequential(nn.Conv2D(3, c[0], 3, stride=2, padding=1, bias_attr=False),
                                  nn.BatchNorm2D(c[0]), nn.Hardswish())
        self.blocks = nn.Sequential(DepthwiseSeparable(c[0], c[1], 1, False),
                                    DepthwiseSeparable(c[1], c[2], 2, True))
        self.pool = nn.AdaptiveAvgPool2D(1)
        self.fc = nn.Linear(c[2], class_num)

    def forward(self, x):
        x = self.pool(self.blocks(self.stem(x)))
        return self.fc(paddle.flatten(x, 1))
