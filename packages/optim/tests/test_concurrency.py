"""Module kinds stay right when types are registered while other threads build optimizers."""

from __future__ import annotations

import subprocess
import sys
import textwrap

# Run in a fresh interpreter: the race registers types for good, and a deadlock must time out.
_RACE = textwrap.dedent(
    """
    import threading

    import torch
    from torch import nn

    from regtree_optim import build_optimizer, register_norm_type

    in_classification = threading.Event()
    registered = threading.Event()


    class PausingMeta(type(nn.Module)):
        # issubclass(x, (..., Pausing)) asks this metaclass: the classifying thread pauses here,
        # halfway through classifying a type, while the other thread registers that type.
        def __subclasscheck__(cls, subclass):
            if threading.current_thread().name == "classify" and subclass.__name__ == "ScaleNorm":
                in_classification.set()
                registered.wait(timeout=0.5)
            return super().__subclasscheck__(subclass)


    class Pausing(nn.Module, metaclass=PausingMeta):
        pass


    class ScaleNorm(nn.Module):
        def __init__(self):
            super().__init__()
            self.gain = nn.Parameter(torch.ones(3))


    register_norm_type(Pausing)
    cfg = {"type": "SGD", "lr": 0.1, "weight_decay": 0.01, "paramwise_cfg": {"norm_decay_mult": 0}}
    model = nn.Sequential(ScaleNorm())


    def classify():
        build_optimizer(model, cfg)


    def register():
        in_classification.wait(timeout=30)
        print("registering while a build classifies ScaleNorm", flush=True)
        register_norm_type(ScaleNorm)
        registered.set()


    threads = [threading.Thread(target=f, name=f.__name__) for f in (classify, register)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
        assert not thread.is_alive(), f"{thread.name} did not finish"
    print("both threads finished", flush=True)
    decay = build_optimizer(model, cfg).param_groups[0]["weight_decay"]
    print(f"ScaleNorm weight decay after registration: {decay}", flush=True)
    assert decay == 0, "the kind cache kept ScaleNorm as no norm layer"
    """
)


def test_register_norm_type_during_a_build_in_another_thread_is_honoured() -> None:
    result = subprocess.run(
        [sys.executable, "-W", "error", "-c", _RACE],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, f"{result.stdout}\n{result.stderr}"
