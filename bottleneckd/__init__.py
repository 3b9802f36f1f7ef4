"""bottleneckd: find what limits a deep-learning training job, with numbers as evidence.

The daemon side (everything outside ``bottleneckd.torch``) never imports torch.
"""

from importlib.metadata import PackageNotFoundError, version

try:  # the version is written once, in pyproject.toml; installed metadata carries it
    __version__ = version("bottleneckd")
except PackageNotFoundError:  # a source tree on sys.path that was never installed
    __version__ = "0+unknown"
