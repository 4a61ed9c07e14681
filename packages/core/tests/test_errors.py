"""The exception classes (SPEC 2.3): their hierarchy and how they print."""

from __future__ import annotations

import pickle

import pytest

from regtree import AlreadyRegisteredError, NotRegisteredError, RegistryError, ScopeConflictError


@pytest.mark.parametrize(
    ("error", "bases"),
    [
        (NotRegisteredError, (RegistryError, KeyError)),
        (AlreadyRegisteredError, (RegistryError, KeyError)),
        (ScopeConflictError, (RegistryError, ValueError)),
    ],
)
def test_each_error_is_a_registry_error_and_a_builtin_error(
    error: type[RegistryError], bases: tuple[type[Exception], ...]
) -> None:
    assert all(issubclass(error, base) for base in bases)
    with pytest.raises(bases[1]):
        raise error("message")


def test_registry_error_is_an_exception() -> None:
    assert issubclass(RegistryError, Exception)


@pytest.mark.parametrize("error", [NotRegisteredError, AlreadyRegisteredError])
def test_key_error_subclasses_print_without_quotes(error: type[KeyError]) -> None:
    message = "'Net' is not registered in registry 'model' (scope 'x')"
    assert str(error(message)) == message
    assert str(KeyError(message)) == repr(message)  # the quoting the subclasses drop


def test_a_scope_conflict_prints_as_written() -> None:
    assert str(ScopeConflictError("scope 'x' is taken")) == "scope 'x' is taken"


@pytest.mark.parametrize("error", [NotRegisteredError, AlreadyRegisteredError, ScopeConflictError])
def test_errors_survive_pickling_for_worker_processes(error: type[RegistryError]) -> None:
    restored = pickle.loads(pickle.dumps(error("it went wrong")))
    assert type(restored) is error
    assert str(restored) == "it went wrong"


@pytest.mark.parametrize("error", [RegistryError, NotRegisteredError, ScopeConflictError])
def test_errors_are_named_by_their_public_module(error: type[RegistryError]) -> None:
    assert f"{error.__module__}.{error.__qualname__}" == f"regtree.{error.__name__}"
