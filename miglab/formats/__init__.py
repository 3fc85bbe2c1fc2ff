"""Readers and writers of other tools' files and output: nvidia-smi, mig-parted, LoadGen logs,
run manifests. Standard library (and miglab.errors) only, so the guest side can use them too."""
