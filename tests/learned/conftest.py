"""Shared fixtures of the learned-policy tests."""

from __future__ import annotations

import pytest


@pytest.fixture
def torch_deterministic():
    """One torch thread and deterministic kernels for the test, restored afterwards (the
    TapFinger tests compare decisions and weights bit for bit)."""
    import torch

    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    yield
    torch.use_deterministic_algorithms(False)
