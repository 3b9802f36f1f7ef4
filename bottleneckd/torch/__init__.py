"""The torch side of bottleneckd: the only package that imports torch."""
