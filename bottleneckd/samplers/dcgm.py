"""Profiling fields from a dcgm-exporter on the node: SM, tensor-pipe and DRAM activity where NVML has none.

Without GPM (Ampere and older) NVML answers only a busy-time fraction ("GPU utilization"), which
reads ~100% for memory-bound and tiny-kernel jobs as much as for compute-bound ones. Most
Kubernetes GPU nodes run NVIDIA's dcgm-exporter (a DaemonSet of the GPU Operator), whose page
carries DCGM's profiling fields: ``DCGM_FI_PROF_SM_ACTIVE``, ``DCGM_FI_PROF_PIPE_TENSOR_ACTIVE``,
``DCGM_FI_PROF_DRAM_ACTIVE`` (ratios 0..1; the default counters file has the tensor and DRAM
fields, ``dcp-metrics-included.csv`` SM activity and the FP pipes too). Rows are labelled with the
physical GPU's ``UUID``; a MIG slice's rows add ``GPU_I_ID``.

Where: ``BOTTLENECKD_DCGM_URL`` (or the sampler's ``dcgm`` argument): a URL, ``off``, or ``auto``
(the default), which probes ``http://127.0.0.1:9400/metrics`` once at start with a short timeout
and keeps it only when the page has profiling fields (bottleneckd's own exporter may listen on
the same port: it has none). The page is read once per tick with a timeout; dcgm-exporter refreshes
its values every collection interval (30 s by default, ``-c``), so the figures lag by up to that.
Parsed with prometheus_client's text parser.
"""

from __future__ import annotations

import logging
import math
import os
import urllib.request
from collections.abc import Mapping

from prometheus_client.parser import text_string_to_metric_families

from bottleneckd.model.identity import gpu_key

log = logging.getLogger(__name__)

ENV = "BOTTLENECKD_DCGM_URL"
AUTO_URL = "http://127.0.0.1:9400/metrics"  # dcgm-exporter's default listen address
PROBE_TIMEOUT = 0.2  # seconds: the start-up probe of the default address (a refused connection is immediate)
READ_TIMEOUT = 0.5  # seconds per tick's read: a slow exporter costs the tick at most this
MAX_PAGE = 8 << 20  # bytes: a page of 8 GPUs with every field is ~200 KB
BACKOFF_TICKS = 10  # after a failed read, try again this many ticks later

#: DCGM profiling field -> the metric the GPU sampler reports (all ratios of time or cycles)
FIELDS = {
    "DCGM_FI_PROF_SM_ACTIVE": "sm_activity",
    "DCGM_FI_PROF_SM_OCCUPANCY": "sm_occupancy",
    "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": "tensor_activity",
    "DCGM_FI_PROF_PIPE_FP64_ACTIVE": "fp64_activity",
    "DCGM_FI_PROF_PIPE_FP32_ACTIVE": "fp32_activity",
    "DCGM_FI_PROF_PIPE_FP16_ACTIVE": "fp16_activity",
    "DCGM_FI_PROF_DRAM_ACTIVE": "dram_activity",
}

#: a unit's rows: (the physical GPU's UUID key, the GPU instance id for a MIG slice, else None)
Key = tuple[str, "int | None"]


def parse(text: str) -> dict[Key, dict[str, float]]:
    """The profiling fields of a dcgm-exporter page, by GPU (and MIG instance). Rows without a
    UUID, and values that are not finite ratios, are left out."""
    out: dict[Key, dict[str, float]] = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            metric = FIELDS.get(s.name)
            uuid = s.labels.get("UUID")
            if metric is None or not uuid or not math.isfinite(s.value) or s.value < 0:
                continue
            gi = s.labels.get("GPU_I_ID")
            key: Key = (gpu_key(uuid), int(gi) if gi is not None and gi.isdigit() else None)
            out.setdefault(key, {})[metric] = min(1.0, float(s.value))
    return out


def _get(url: str, timeout: float) -> str:
    with urllib.request.urlopen(url, timeout=timeout) as r:  # noqa: S310 - a URL the user configured
        return r.read(MAX_PAGE).decode("utf-8", "replace")


class DcgmSource:
    """One dcgm-exporter page, read once per tick (``read``), or nothing when none is configured."""

    def __init__(self, url: str | None, why: str = "") -> None:
        self.url = url
        self.why = why  # why there is no source, or why the last read failed
        self._skip = 0

    @staticmethod
    def configured(setting: str | None = None, env: Mapping[str, str] | None = None) -> DcgmSource:
        """From the argument, else ``BOTTLENECKD_DCGM_URL``, else ``auto``."""
        env = os.environ if env is None else env
        value = (setting if setting is not None else env.get(ENV, "auto")).strip()
        if value.lower() in ("", "off", "none", "0"):
            return DcgmSource(None, f"dcgm-exporter not read ({ENV}=off)")
        if value.lower() != "auto":
            return DcgmSource(value)
        try:
            got = parse(_get(AUTO_URL, PROBE_TIMEOUT))
        except Exception as e:  # noqa: BLE001 - nothing listening, or not a Prometheus page
            return DcgmSource(None, f"no dcgm-exporter at {AUTO_URL} ({type(e).__name__}); set {ENV} to its URL")
        if not got:
            return DcgmSource(None, f"{AUTO_URL} has no DCGM profiling fields; set {ENV} to a dcgm-exporter's URL")
        return DcgmSource(AUTO_URL)

    def read(self) -> dict[Key, dict[str, float]]:
        """This tick's fields (empty when none configured or the read failed: ``why`` says why)."""
        if self.url is None:
            return {}
        if self._skip:
            self._skip -= 1
            return {}
        try:
            got = parse(_get(self.url, READ_TIMEOUT))
        except Exception as e:  # noqa: BLE001 - the exporter restarted, a timeout, a bad page
            if not self.why:
                log.warning(
                    "dcgm-exporter at %s could not be read (%s); retried every %d ticks", self.url, e, BACKOFF_TICKS
                )
            self.why = f"dcgm-exporter at {self.url} not readable: {type(e).__name__}: {str(e)[:120]}"
            self._skip = BACKOFF_TICKS
            return {}
        self.why = "" if got else f"dcgm-exporter at {self.url} has no DCGM profiling fields"
        return got
