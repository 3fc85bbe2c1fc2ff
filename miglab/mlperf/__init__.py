"""MLPerf Inference plugin of miglab: the results side (collect, validate, aggregate, report).

* :mod:`miglab.core.runs` - read LoadGen logs (``mlperf_log_detail.txt``, summary fallback)
  into :class:`~miglab.core.runs.RunRecord` objects, with LoadGen validity and the
  submission-rule check;
* :mod:`miglab.mlperf.results.aggregate` - sum concurrent VMs per run, statistics over runs,
  improvement over the baseline scenario;
* :mod:`miglab.mlperf.results.report` - Markdown, HTML, CSV, JSON and PNG charts;
* :mod:`miglab.formats.manifest` - atomic writes, run folders' ``MANIFEST.sha256``, verification;
* :mod:`miglab.cli.results` - ``miglab results parse|aggregate|verify`` and ``miglab report``.

Pure Python (matplotlib for the charts); imports neither Ansible nor pyVmomi. README.md beside
this file describes the results tree and ``miglab_run.json``.
"""

from miglab.core.runs import RunRecord, parse_paths, parse_run
from miglab.formats.run_meta import RunMeta
from miglab.mlperf.results.aggregate import (
    Aggregate,
    Group,
    RunTotal,
    aggregate_results,
    campaign_context,
)
from miglab.mlperf.results.report import write_report

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
