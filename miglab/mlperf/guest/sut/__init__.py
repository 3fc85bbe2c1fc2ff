"""Systems under test for the ``reference`` backend.

* :mod:`~miglab.mlperf.guest.sut.base` - the engine interface (submit a batch of sample indices,
  wait);
* :mod:`~miglab.mlperf.guest.sut.runner` - Offline dispatcher, Server dynamic batcher, completion
  thread
  and the raw-throughput measurement, shared by all engines;
* :mod:`~miglab.mlperf.guest.sut.torch_sut` - ResNet50 / BERT-large on a CUDA GPU (imports torch);
* :mod:`~miglab.mlperf.guest.sut.onnxrt` - any ONNX model on the CPU (imports onnxruntime);
* :mod:`~miglab.mlperf.guest.sut.tiny` - tiny generated ONNX models for tests (imports onnx).

Heavy frameworks are imported only by the module that needs them.
"""
