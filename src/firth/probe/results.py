"""The committed results of the probe stages (reports/probe/<name>/): eval.json
(every representation, layer, probe and seed: task and control accuracy and
selectivity) and items.json.gz (each test token's 0/1 answers, what the scorecard's
probing findings resample)."""

from __future__ import annotations

from firth.results import Record


class ProbeRow(Record):
    """One probe on one layer of one model (trained or untrained), one seed;
    accuracies in %."""

    model: str  # trained | untrained
    seed: int  # the representation's seed (the LM run's or the vectors')
    layer: int
    probe: str  # linear | mlp
    probe_seed: int
    task_accuracy: float
    control_accuracy: float
    selectivity: float
    valid_task_accuracy: float
    valid_control_accuracy: float
    epochs_task: int
    epochs_control: int


class ProbeEval(Record):
    name: str
    kind: str  # lm | vectors
    family: str  # the LM family or the vector method
    data: str
    tags: int  # POS classes
    test_tokens: int
    coverage: float  # share of test tokens the representation knows
    layers: int
    rows: list[ProbeRow]


class ProbeItems(Record):
    """Per test token in file order: each probe's 0/1 answers on the task and on
    the control task, keyed 'model|seed|layer|probe|probe_seed'."""

    name: str
    test_sha256: str
    task: dict[str, list[int]]
    control: dict[str, list[int]]
