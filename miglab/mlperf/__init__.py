"""MLPerf Inference plugin of miglab: the results side (collect, validate, aggregate, report).

* :mod:`miglab.mlperf.logs` - read LoadGen logs (``mlperf_log_detail.txt``, summary fallback)
  into :class:`~miglab.mlperf.logs.RunRecord` objects, with LoadGen validity and the
  submission-rule check;
* :mod:`miglab.mlperf.aggregate` - sum concurrent VMs per run, statistics over runs,
  improvement over the baseline scenario;
* :mod:`miglab.mlperf.report` - Markdown, HTML, CSV, JSON and PNG charts;
* :mod:`miglab.mlperf.manifest` - atomic writes, run folders' ``MANIFEST.sha256``, verification;
* :mod:`miglab.mlperf.cli` - ``miglab results parse|aggregate|verify`` and ``miglab report``.

Pure Python (matplotlib for the charts); imports neither Ansible nor pyVmomi. README.md beside
this file describes the results tree and ``miglab_run.json``.
"""

from miglab.mlperf.aggregate import Aggregate, Group, RunTotal, aggregate_results, campaign_context
from miglab.mlperf.logs import RunMeta, RunRecord, parse_paths, parse_run
from miglab.mlperf.report import write_report

__all__ = [
    "Aggregate",
    "Group",
    "RunMeta",
    "RunRecord",
    "RunTotal",
    "aggregate_results",
    "campaign_context",
    "parse_paths",
    "parse_run",
    "write_report",
]
