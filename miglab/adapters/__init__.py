"""Adapters to the outside: the lab inventory, ansible-runner, the lab lock and pyVmomi.
They depend on the core, never the other way round."""
