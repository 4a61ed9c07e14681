from __future__ import annotations

import pytest
import torch


@pytest.fixture
def generator() -> torch.Generator:
    return torch.Generator().manual_seed(0)


@pytest.fixture
def images(generator: torch.Generator) -> torch.Tensor:
    return torch.randn(2, 3, 32, 32, generator=generator)
