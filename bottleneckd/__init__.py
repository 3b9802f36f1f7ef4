"""bottleneckd: find what limits a deep-learning training job, with numbers as evidence.

The daemon side (everything outside ``bottleneckd.torch``) never imports torch.
"""

__version__ = "0.1.0"
