"""Reading an exception without importing torch: its chain, its class, what it is an instance of."""

from __future__ import annotations


def exception_chain(exc: BaseException) -> list[BaseException]:
    """`exc`, then its causes (or contexts), each once."""
    chain = []
    seen = set()
    current = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        chain.append(current)
        current = current.__cause__ or current.__context__
    return chain


def qualified_name(exc: BaseException) -> str:
    return f"{type(exc).__module__}.{type(exc).__qualname__}"


def is_kind(exc: BaseException, name: str) -> bool:
    """Whether `exc` is an instance of a class named `name` (torch's classes, by name, so that
    nothing here imports torch)."""
    return any(cls.__name__ == name for cls in type(exc).__mro__)
