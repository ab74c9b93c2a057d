"""The packaged Hydra configs, one folder per model family (:data:`nemo_pc.CONFIG_DIR`).

A package so that the ASR recipes reach ``common/`` through Hydra's ``pkg://nemo_pc.configs`` search path, installed
or not; :func:`nemo_pc.parts.configs.compose_config` composes them.
"""
