import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "nemo_pc", deadline=None, suppress_health_check=[HealthCheck.too_slow], max_examples=150, derandomize=True
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "nemo_pc"))
