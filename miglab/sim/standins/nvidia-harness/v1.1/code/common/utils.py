# STAND-IN (miglab's simulated lab), not NVIDIA software. Follows the Tree class of
# closed/NVIDIA/code/common/utils.py of github.com/mlcommons/inference_results_v1.1
# @ 912dcdb9163736beca40a1f86e25d1305deab549 (a nested dict walked by a list of keys), written anew.
"""Small utilities of the harness (stand-in): the Tree the config registry is stored in."""


class Tree:
    """Nested dicts addressed by a key path: ``insert([a, b, c], v)``, ``get([a, b])``."""

    def __init__(self, starting_val=None):
        self.tree = {} if starting_val is None else starting_val

    def insert(self, keyspace, value, append=False):
        node = self.tree
        *path, leaf = list(keyspace)
        for key in path:
            node = node.setdefault(key, {})
        if not append:
            node[leaf] = value
        elif leaf not in node:
            node[leaf] = [value]
        elif type(node[leaf]) is list:
            node[leaf].append(value)
        else:
            node[leaf] = [node[leaf], value]

    def get(self, keyspace, default=None):
        node = self.tree
        for key in keyspace:
            if not isinstance(node, dict) or key not in node:
                return default
            node = node[key]
        return node

    def __getitem__(self, keyspace):
        return self.get(keyspace)

    def __setitem__(self, keyspace, value):
        self.insert(keyspace, value)

    def __iter__(self):
        return iter(self.tree)
