"""The core: the GPU catalog, MIG placement, campaigns, schedules and plans, ESXi decisions.

Pure Python: imports no Ansible, pyVmomi, rich, matplotlib or subprocess, and finds no files
outside the package (its import-linter contract in pyproject.toml keeps it so)."""
