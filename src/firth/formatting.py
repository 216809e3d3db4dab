"""How numbers are written in the report and the comparison tables."""

from __future__ import annotations


def fmt(x: object) -> str:
    if isinstance(x, float):
        return f"{x:.4f}" if abs(x) < 1 else f"{x:,.2f}"
    if isinstance(x, int):
        return f"{x:,}"
    return str(x)


def num(x: object, digits: int = 4) -> str:
    if x is None:
        return "-"
    if isinstance(x, float):
        return f"{x:,.{digits}f}"
    return fmt(x)
