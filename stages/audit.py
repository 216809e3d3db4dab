"""DVC stages audit-text, audit-parallel, audit-tagged@<name> and audit-nli@<name>:
contamination audits of an
evaluation set against every corpus its models could have seen, by n-gram overlap,
exact duplicates and MinHash near duplicates (firth.audit.overlap).

- ``parallel``: each translation test verse (data/subsampled/parallel/test.tsv),
  its source side against the training sources and its target side against the
  training targets.
- ``text``: each line of the language models' test text
  (data/subsampled/text/test.txt) against the training lines (train.txt).
- ``nli <name>``: each test pair of data/raw/nli/<name>/examples.jsonl (premise and
  hypothesis joined by a space) against every pair of the other splits (training,
  and validation, which picks the epoch).
- ``tagged <name>``: each test sentence of data/subsampled/tagged/<name>/ against
  the training sentences, and (n-gram overlap only: its lines are whole documents)
  against the text corpus the pretrained word vectors were trained on
  (data/subsampled/text/train.txt).

Writes data/audit/<kind>[/<name>]/flags.tsv (one row per test example, in test
order; dirty = any test against any corpus) and reports/audit/<kind>[_<name>].json
(counts, n, the most repeated dirty examples). The evaluation stages read the flags
and score the clean and dirty subsets."""

from __future__ import annotations

from firth import stage_cli
from firth.audit.config import AuditParams
from firth.audit.stage import KINDS, flag_rows, summary
from firth.config import load_sections
from firth.io import write_folder, write_json, write_rows


def body(args) -> None:
    path = stage_cli.params_path(args)
    cfg, _ = load_sections("audit", path, schema=AuditParams)
    audited = KINDS[args.kind](args.root, cfg, path, args.name)
    header, rows = flag_rows(audited)
    write_folder(
        args.root / "data" / "audit" / audited.flags_dir,
        lambda d: write_rows(d / "flags.tsv", header, rows, delimiter="\t"),
    )
    report = summary(args.root, audited, cfg, args.kind)
    write_json(args.root / "reports" / "audit" / audited.summary, report)


def main(argv=None) -> None:
    p = stage_cli.parser(__doc__)
    p.add_argument("kind", choices=list(KINDS))
    p.add_argument(
        "name", nargs="?", help="tagged, nli: a name under sources.tagged / .nli"
    )
    stage_cli.run(body, p, argv)


if __name__ == "__main__":
    main()
