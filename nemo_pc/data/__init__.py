"""Data, by role: :mod:`~nemo_pc.data.datasets` (datasets and batches the models train on),
:mod:`~nemo_pc.data.recipes` (corpus builders: synthesis, books, LibriSpeech-PC manifests, LM text, shar, real
recorded dev and test sets) and :mod:`~nemo_pc.data.tokenizers` (the ASR and rewriter tokenizers). Manifest I/O is
:mod:`nemo_pc.parts.manifest`."""
