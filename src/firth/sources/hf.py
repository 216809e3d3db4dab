"""Hugging Face ``datasets`` sources with a field mapping.

``id`` is a hub dataset id (``Salesforce/wikitext``), a local dataset folder, or a
builder name (``json``, ``parquet``, ``csv``, ``text``) with ``data_files`` so users
can bring their own files. Fields are mapped onto Firth's canonical names:
``text``; ``source``/``target`` (a dotted path such as ``translation.de`` reaches into
nested columns); ``tokens``/``tags`` (ClassLabel ids become label names);
``premise``/``hypothesis``/``label``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

from firth.errors import DataError

log = logging.getLogger(__name__)

NEEDED = {
    "text": ("text",),
    "parallel": ("source", "target"),
    "tagged": ("tokens", "tags"),
    "nli": ("premise", "hypothesis", "label"),
}
DEFAULT_SPLITS = {
    "train": "train",
    "validation": "valid",
    "valid": "valid",
    "dev": "valid",
    "test": "test",
}


def _get(row: dict, path: str, *, where: str) -> Any:
    value: Any = row
    for part in path.split("."):
        if not isinstance(value, dict) or part not in value:
            raise DataError(
                f"{where}: field {path!r} not found (columns: {', '.join(sorted(row))})"
            )
        value = value[part]
    return value


def load(
    dataset_id: str,
    *,
    config: str = "",
    revision: str = "",
    data_files: str = "",
    data_dir: str = "",
    fields: dict[str, str],
    fmt: str,
    splits: dict[str, str] | None = None,
) -> Iterator[tuple[str, int, dict]]:
    """Yield ``(split, index, record)`` with canonical field names."""
    import datasets

    needed = NEEDED.get(fmt)
    if needed is None:
        raise DataError(
            f"hf:{dataset_id}: format {fmt!r} is not supported by hf sources"
        )
    mapping = {name: fields.get(name, name) for name in needed}
    kwargs: dict[str, Any] = {}
    if config:
        kwargs["name"] = config
    if revision:
        kwargs["revision"] = revision
    if data_files:
        kwargs["data_files"] = data_files
    if data_dir:
        kwargs["data_dir"] = data_dir
    try:
        dsd = datasets.load_dataset(dataset_id, **kwargs)
    except Exception as exc:  # datasets raises many types; all mean "cannot load"
        msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise DataError(f"hf:{dataset_id}: cannot load ({msg})") from None
    split_names = splits or DEFAULT_SPLITS
    for hf_split in dsd:
        split = split_names.get(hf_split)
        if split is None:
            log.warning("hf:%s: split %r not mapped, skipped", dataset_id, hf_split)
            continue
        ds = dsd[hf_split]
        label_names: dict[str, list[str]] = {}
        for name, column in mapping.items():
            feature = ds.features.get(column.split(".")[0])
            inner = getattr(feature, "feature", feature)
            if hasattr(inner, "names") and name in ("tags", "label"):
                label_names[name] = list(inner.names)
        where = f"hf:{dataset_id}[{hf_split}]"
        for i, row in enumerate(ds):
            rec = {name: _get(row, col, where=where) for name, col in mapping.items()}
            for name, names in label_names.items():
                value = rec[name]
                if isinstance(value, list):
                    rec[name] = [names[v] for v in value]
                elif isinstance(value, int) and 0 <= value < len(names):
                    rec[name] = names[value]
                elif isinstance(value, int):
                    rec[name] = None  # e.g. SNLI's -1 = no gold label
            yield split, i, rec
