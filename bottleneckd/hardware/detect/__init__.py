"""Detection of this machine: what it has, read from NVML, /sys and /proc."""

from bottleneckd.hardware.detect.machine import Machine, detect_machine

__all__ = ["Machine", "detect_machine"]
