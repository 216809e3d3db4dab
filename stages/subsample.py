"""DVC stage subsample-<kind>: data/prepared/<kind>[/<name>] ->
data/subsampled/<kind>[/<name>], to the budgets in params ``subsample``."""

from __future__ import annotations

from firth import stage_cli
from firth.config import load_sections
from firth.io import atomic_path, write_json
from firth.subsample import one, subsample_file, words

SPLITS = ("train", "valid", "test")
# kind -> (train budget key, eval budget key, file suffix, size of a unit,
#          units separated by blank lines)
KINDS = {
    "text": ("max_train_tokens", "max_eval_tokens", ".txt", words, False),
    "parallel": ("max_train_pairs", "max_eval_pairs", ".tsv", one, False),
    "tagged": ("max_train_sentences", "max_eval_sentences", ".conll", one, True),
}


def body(args) -> None:
    cfg, seed = load_sections("subsample", stage_cli.params_path(args))
    kind = args.kind
    src = args.src
    train_key, eval_key, suffix, size, blank = KINDS[kind]
    section = getattr(cfg, kind)
    eval_budget = getattr(section, eval_key)
    budgets = {"train": getattr(section, train_key), "valid": eval_budget}
    budgets["test"] = eval_budget
    stats = {}
    with atomic_path(args.out) as tmp:
        tmp.mkdir()
        for split in SPLITS:
            stats[split] = subsample_file(
                src / f"{split}{suffix}",
                tmp / f"{split}{suffix}",
                budgets[split],
                seed=seed,
                size=size,
                blank_separated=blank,
            )
    write_json(args.stats, stats)


def main(argv=None) -> None:
    p = stage_cli.parser(__doc__)
    p.add_argument("kind", choices=["text", "parallel", "tagged"])
    stage_cli.path(p, "src", "the prepared splits")
    stage_cli.path(p, "out", "the subsampled splits to write")
    stage_cli.path(p, "stats", "the subsample statistics (JSON)")
    stage_cli.run(body, p, argv)


if __name__ == "__main__":
    main()
