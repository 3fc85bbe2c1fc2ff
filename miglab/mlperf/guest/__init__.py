"""What runs inside a guest VM: ``python -m miglab.mlperf.run``, the start barrier, the MLPerf
backends and systems under test. Imports only miglab.formats, miglab.core.process and
miglab.errors."""
