"""Datasets and batches: what the ASR models and the text formatter train on."""
