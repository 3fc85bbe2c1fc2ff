"""Datasets of the MLPerf reference runs, as LoadGen's query sample library (QSL) sees them.

A :class:`~miglab.mlperf.guest.datasets.base.SampleSource` knows how many samples there are,
loads the ones LoadGen asks for into host memory (``load_samples_to_ram``, numpy arrays; a cache
of preprocessed samples on disk makes the second run fast), hands a SUT the host arrays of one
batch, and scores LoadGen's accuracy log. The whole set is never staged on the device: a SUT
copies each batch to it when it runs the batch (a 1g MIG slice has no room for 50,000 images).

* :mod:`~miglab.mlperf.guest.datasets.imagenet` -- ImageNet 2012 validation (JPEG folder and
  ``val_map.txt``) for ResNet50 v1.5: the MLCommons preprocessing for the ONNX / TensorFlow
  model (``vgg``) and torchvision's for the PyTorch model (``pytorch``), top-1 scoring;
* :mod:`~miglab.mlperf.guest.datasets.squad` -- SQuAD v1.1 dev with a BERT vocabulary:
  WordPiece tokenization, 384-token windows (doc stride 128, query at most 64 tokens),
  answer spans from the start/end logits and the official F1 / exact-match scoring;
* :mod:`~miglab.mlperf.guest.datasets.npz` -- a ``.npz`` of preprocessed inputs (the older
  ``--dataset`` option), with optional ``labels`` for top-1.
"""
